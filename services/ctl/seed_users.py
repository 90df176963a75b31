"""`ideasctl seed`: end users for the workspace's customers, and their votes (CONTRACT 17).

Everything goes through the services' own storage functions, on the seed's transaction: the
users through `users.identify` (a user an earlier seed made, by its `externalId`, is found, not
made again), their votes through the ideas service's `end_users.record_votes` and the customers
service's `demand.record_votes` (which settles the links the votes hold, as `vote.changed`
would); no event is written (the seed is a bulk load). The ideas projection then gets those
links and the ideas' totals are recomputed from it (`projection.refresh`).
"""

from __future__ import annotations

import uuid
from typing import Any

from libs.common import db
from services.customers import demand, users
from services.ideas import end_users, projection

from .sync_cursor import SyncCursor, run

# Users per customer (1 to this), at most this many customers with users, and +1 votes each.
USERS_PER_CUSTOMER = 3
MAX_CUSTOMERS = 500
VOTES_PER_USER = 4


def seed_users(seeder: Any, first: int, n_ideas: int) -> None:
    """Users of the first customers, a few voting +1 (and some -1) on seeded ideas."""
    if not n_ideas or not seeder.has_table("customers", "users"):
        return
    store: Any = SyncCursor(seeder.conn)
    rng, ws = seeder.rng, seeder.ws
    made: list[uuid.UUID] = []
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
            if written.created:
                seeder.counts["customers.users"] = seeder.counts.get("customers.users", 0) + 1
    numbers = [first + rng.randrange(n_ideas) for _ in range(len(made) * VOTES_PER_USER)]
    ids = {
        r["number"]: r["id"]
        for r in run(
            db.fetchall(
                store,
                "SELECT number, id FROM ideas.ideas WHERE workspace_id = %s"
                " AND number = ANY(%s::bigint[])",
                (ws, sorted(set(numbers))),
            )
        )
    }
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
    if seeder.has_projection:
        with seeder.conn.cursor() as cur:
            cur.execute(
                "INSERT INTO ideas.customer_links (workspace_id, idea_id, customer_id, linked_at)"
                " SELECT workspace_id, idea_id, customer_id, linked_at FROM customers.idea_links"
                " WHERE workspace_id = %s AND NOT direct ON CONFLICT DO NOTHING",
                (ws,),
            )
        run(projection.refresh(store, str(ws), sorted({str(i) for i, _, _ in cast})))
