"""`ideasctl seed`: end users for the workspace's customers, their votes and comments
(docs/customers.md, End users).

Everything goes through the services' own storage functions, on the seed's transaction: the
users through `users.identify` (a user an earlier seed made, by its `externalId`, is found, not
made again), their votes through the ideas service's `end_users.record_votes` and the customers
service's `demand.record_votes` (which settles the links the votes hold, as `vote.changed`
would); no event is written (the seed is a bulk load). The ideas projection then gets those
links and the ideas' totals are recomputed from it (`projection.refresh`). Comments on some
of the voted ideas go in one batch through the ideas service's `comments.record` (which keeps
`commentCount`): by the users, and answers and internal notes by the workspace's first API key
(by a key of the seed's own when the workspace has none), some of them replies.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from libs.common import db
from services.customers import demand, users
from services.ideas import comments, end_users, projection

from .sync_cursor import SyncCursor, run

# Users per customer (1 to this), at most this many customers with users, and +1 votes each.
USERS_PER_CUSTOMER = 3
MAX_CUSTOMERS = 500
VOTES_PER_USER = 4
# Ideas with comments (at most), and comments on each (1 to this, replies included).
MAX_COMMENTED = 400
COMMENTS_PER_IDEA = 5
USER_SAYS = (
    "We need this for our quarterly reporting.",
    "Same here, our team asks about it every week.",
    "Any update on this? It blocks our rollout.",
    "This would let us drop a workaround we maintain.",
    "+1 from our side, happy to test an early version.",
)
TEAM_SAYS = (
    "Thanks, this is on our list; we will post updates here.",
    "Could you tell us more about how you work around it today?",
    "We shipped a first part of this; feedback welcome.",
)
NOTES = (
    "Internal: three enterprise renewals mention this.",
    "Internal: needs a design review before we commit.",
    "Internal: overlaps with the reporting rework.",
)


def seed_users(seeder: Any, first: int, n_ideas: int) -> None:
    """Users of the first customers, a few voting +1 (and some -1) on seeded ideas."""
    if not n_ideas or not seeder.has_table("customers", "users"):
        return
    store: Any = SyncCursor(seeder.conn)
    rng, ws = seeder.rng, seeder.ws
    made: list[uuid.UUID] = []
    names: dict[uuid.UUID, str | None] = {}
    for k, (customer_id, _, _) in enumerate(seeder.customer_arr[:MAX_CUSTOMERS]):
        for j in range(rng.randint(1, USERS_PER_CUSTOMER)):
            name, email = seeder.person()
            fields = {
                "name": name,
                "email": email.replace("@", f".{k}-{j}@"),
                "externalId": f"seed-user-{k + 1}-{j + 1}",
                "customerId": customer_id,
            }
            written = run(users.identify(store, ws, fields))
            made.append(written.row["id"])
            names[written.row["id"]] = written.row["name"]
            if written.created:
                seeder.counts["customers.users"] = seeder.counts.get("customers.users", 0) + 1
    numbers = [first + rng.randrange(n_ideas) for _ in range(len(made) * VOTES_PER_USER)]
    found = run(
        db.fetchall(
            store,
            "SELECT number, id, created_at FROM ideas.ideas WHERE workspace_id = %s"
            " AND number = ANY(%s::bigint[])",
            (ws, sorted(set(numbers))),
        )
    )
    ids = {r["number"]: r["id"] for r in found}
    born = {r["id"]: r["created_at"] for r in found}
    votes: dict[tuple[uuid.UUID, uuid.UUID], int] = {}
    for n, number in enumerate(numbers):
        votes[(ids[number], made[n // VOTES_PER_USER])] = -1 if rng.random() < 0.1 else 1
    cast = [(idea, user, value) for (idea, user), value in votes.items()]
    versions = run(end_users.record_votes(store, ws, cast))
    run(
        demand.record_votes(
            store, ws, [(u, i, v, ver) for (i, u, v), ver in zip(cast, versions, strict=True)]
        )
    )
    seeder.counts["user votes"] = len(cast)
    seed_comments(seeder, store, cast, names, born)
    if seeder.has_projection:
        with seeder.conn.cursor() as cur:
            cur.execute(
                "INSERT INTO ideas.customer_links (workspace_id, idea_id, customer_id, linked_at)"
                " SELECT workspace_id, idea_id, customer_id, linked_at FROM customers.idea_links"
                " WHERE workspace_id = %s AND NOT direct ON CONFLICT DO NOTHING",
                (ws,),
            )
        run(projection.refresh(store, str(ws), sorted({str(i) for i, _, _ in cast})))


def seed_comments(
    seeder: Any,
    store: Any,
    cast: list[tuple[uuid.UUID, uuid.UUID, int]],
    names: dict[uuid.UUID, str | None],
    born: dict[uuid.UUID, Any],
) -> None:
    """Comments on ideas the users voted on: the voters' own, the team's answers (replies to
    them or top-level) and internal notes, in time order after the idea's creation."""
    rng, ws = seeder.rng, seeder.ws
    team = key_author(seeder, store)
    voters: dict[uuid.UUID, list[uuid.UUID]] = {}
    for idea, user, value in cast:
        if value == 1:
            voters.setdefault(idea, []).append(user)
    written: list[comments.NewComment] = []
    for idea in sorted(voters)[:MAX_COMMENTED]:
        start = born[idea]
        span = max((seeder.now - start).total_seconds(), 60.0)
        times = sorted(start + timedelta(seconds=rng.uniform(1, span)) for _ in range(5))
        tops: list[uuid.UUID] = []
        for k in range(rng.randint(1, COMMENTS_PER_IDEA)):
            at, kind = times[k], rng.random()
            if kind < 0.5 or not tops:  # a voter speaks
                user = rng.choice(voters[idea])
                author = comments.Author("user", user, names[user])
                body, internal, parent = rng.choice(USER_SAYS), False, None
            elif kind < 0.8:  # the team answers one of them
                author, body, internal = team, rng.choice(TEAM_SAYS), False
                parent = rng.choice(tops)
            else:  # a note the users do not see
                author, body, internal, parent = team, rng.choice(NOTES), True, None
            comment = comments.NewComment(seeder.uid(), idea, parent, body, internal, author, at)
            if parent is None:
                tops.append(comment.id)
            written.append(comment)
    seeder.counts["comments"] = run(comments.record(store, ws, written))


def key_author(seeder: Any, store: Any) -> comments.Author:
    """The workspace's first API key (by creation), the author of the team's comments; a
    key id of the seed's own, named as a key is by default, when there is none."""
    row = None
    if seeder.has_table("gateway", "api_keys"):
        row = run(
            db.fetchone(
                store,
                "SELECT id, name FROM gateway.api_keys WHERE workspace_id = %s"
                " ORDER BY created_at, id LIMIT 1",
                (seeder.ws,),
            )
        )
    if row is None:
        return comments.Author("key", seeder.uid(), "API key")
    return comments.Author("key", row["id"], row["name"])
