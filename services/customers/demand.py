"""A company's demand (docs/customers.md, A company's demand): while a user whose
`customerId` is set has a +1 vote on an idea, that customer is linked to the idea.

A link's reasons are recorded apart (migration 0007_company_demand.sql): `idea_links.direct`
for a link made directly (the API, a signal match, a merge's copy), and the votes, kept in
`user_votes` from the ideas service's `vote.changed` (each with its version: an older or
repeated event changes nothing). A link has a row while it has a reason.

`settle` makes one idea's links of some customers agree with those reasons: it computes
whether a +1 vote of a user of the customer holds the link from the tables as they are (never
from the event's own content), so it is right however often, and in whatever order, the
events that call it arrive. It runs under the idea's exclusive link lock (the lock every
writer of the idea's links takes, `merges.lock_links`), after the caller changed its input (a
vote, a user's customer, a user gone), so of two concurrent settles of one idea the second
sees the first's change: the last vote of a company to go removes the link, whichever goes
last.

Events: `vote.changed` (the ideas service's) and `users.settle` (this service's own, written
where a user moves to another customer or is erased: `{"userId", "customerIds", "ideaIds"}`),
both on the `customers` queue.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import aiopg

from libs.common import db
from libs.common.messaging import add_event

from . import events, links, merges

HELD = """SELECT EXISTS (SELECT 1 FROM customers.user_votes v JOIN customers.users u
    ON u.workspace_id = v.workspace_id AND u.id = v.user_id
 WHERE v.workspace_id = %s AND v.idea_id = %s AND v.value = 1 AND u.customer_id = %s)"""

UPSERT_VOTE = """
INSERT INTO customers.user_votes AS v (workspace_id, user_id, idea_id, value, version)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (workspace_id, user_id, idea_id) DO UPDATE
  SET value = EXCLUDED.value, version = EXCLUDED.version WHERE v.version < EXCLUDED.version
RETURNING 1"""


async def held(cur: aiopg.Cursor, ws: uuid.UUID, idea_id: Any, customer_id: Any) -> bool:
    """Whether a user of the customer votes +1 on the idea now."""
    return bool(await db.fetchval(cur, HELD, (ws, idea_id, customer_id)))


async def settle(
    cur: aiopg.Cursor,
    ws: uuid.UUID,
    idea_id: uuid.UUID | str,
    customer_ids: Iterable[Any],
    request_id: str | None = None,
    emit: bool = True,
) -> None:
    """Make the idea's links of these customers agree with their users' votes: a link held by
    a vote and absent is made (not direct: `link.created`); one that is not direct and that no
    vote holds any more goes (`link.deleted`); a direct link is left as it is. Without `emit`
    (`ideasctl seed`, which fills the ideas projection itself) no event is written."""
    customers = sorted({str(c) for c in customer_ids if c is not None})
    if not customers:
        return
    await merges.lock_links(cur, ws, idea_id)
    for customer_id in customers:
        vote = await held(cur, ws, idea_id, customer_id)
        link = await links.get(cur, ws, idea_id, customer_id)
        if vote and link is None:
            made = await links.insert(cur, ws, idea_id, customer_id, direct=False)
            assert made is not None  # absent under the exclusive lock
            if not emit:
                continue
            await events.link_created(
                cur,
                ws,
                uuid.UUID(str(idea_id)),
                uuid.UUID(customer_id),
                made["linked_at"],
                made["arr"],
                made["version"],
                request_id,
            )
        elif not vote and link is not None and not link["direct"]:
            await links.remove(cur, ws, idea_id, customer_id)
            if not emit:
                continue
            await events.link_deleted(
                cur,
                ws,
                uuid.UUID(str(idea_id)),
                uuid.UUID(customer_id),
                link["linked_at"],
                request_id,
            )


async def on_vote(cur: aiopg.Cursor, ws: uuid.UUID, data: dict[str, Any]) -> None:
    """`vote.changed`: keep the vote if newer, then settle the idea's link of the user's
    customer. A user that is gone (erased) or unknown here is skipped: its votes went with it."""
    user = await db.fetchone(
        cur,
        # Shared: a move or an erasure of the user waits for this event, or this one sees it.
        "SELECT customer_id FROM customers.users WHERE workspace_id = %s AND id = %s FOR SHARE",
        (ws, data["userId"]),
    )
    if user is None:
        return
    newer = await db.fetchval(
        cur, UPSERT_VOTE, (ws, data["userId"], data["ideaId"], data["value"], data["version"])
    )
    if newer and user["customer_id"] is not None:
        await settle(cur, ws, data["ideaId"], [user["customer_id"]])


async def record_votes(
    cur: aiopg.Cursor, ws: uuid.UUID, votes: list[tuple[Any, Any, int, int]]
) -> None:
    """Users' votes (user, idea, value, version) as `vote.changed` brings them, written
    directly (`ideasctl seed`), and the links they hold settled without events."""
    for user_id, idea_id, value, version in votes:
        await cur.execute(UPSERT_VOTE, (ws, user_id, idea_id, value, version))
        await cur.fetchall()
    pairs = await db.fetchall(
        cur,
        "SELECT DISTINCT v.idea_id, u.customer_id FROM unnest(%s::uuid[]) AS t(user_id)"
        " JOIN customers.user_votes v ON v.workspace_id = %s AND v.user_id = t.user_id"
        " JOIN customers.users u ON u.workspace_id = v.workspace_id AND u.id = v.user_id"
        " WHERE u.customer_id IS NOT NULL ORDER BY 1, 2",
        (sorted({str(v[0]) for v in votes}), ws),
    )
    for pair in pairs:
        await settle(cur, ws, pair["idea_id"], [pair["customer_id"]], emit=False)


async def upvoted_ideas(cur: aiopg.Cursor, ws: uuid.UUID, user_id: uuid.UUID) -> list[str]:
    """The ideas the user votes +1 on, as this service knows them."""
    rows = await db.fetchall(
        cur,
        "SELECT idea_id FROM customers.user_votes WHERE workspace_id = %s AND user_id = %s"
        " AND value = 1 ORDER BY idea_id",
        (ws, user_id),
    )
    return [str(r["idea_id"]) for r in rows]


async def settle_later(
    cur: aiopg.Cursor,
    ws: uuid.UUID,
    user_id: uuid.UUID,
    customer_ids: list[Any],
    idea_ids: list[str],
    request_id: str | None = None,
) -> None:
    """`users.settle` in the caller's transaction: the user's ideas to settle for these
    customers, each in the consumer's own transaction (the API call locks no idea's links,
    so it never waits on a busy idea nor deadlocks with a merge)."""
    customers = sorted({str(c) for c in customer_ids if c is not None})
    if not customers or not idea_ids:
        return
    await add_event(
        cur,
        events.SCHEMA,
        "users.settle",
        ws,
        {"userId": str(user_id), "customerIds": customers, "ideaIds": idea_ids},
        request_id,
    )


async def on_settle(cur: aiopg.Cursor, ws: uuid.UUID, data: dict[str, Any]) -> None:
    for idea_id in sorted(data["ideaIds"]):
        await settle(cur, ws, idea_id, data["customerIds"])


async def moved(cur: aiopg.Cursor, ws: uuid.UUID, row: db.Row, previous: Any, rid: Any) -> None:
    """A user's customer changed (PATCH, identify): the old customer's links that only this
    user's votes held go, the new customer's come (`users.settle`). A vote of the user that
    this service has not seen yet settles with the new customer when it comes."""
    ideas = await upvoted_ideas(cur, ws, row["id"])
    await settle_later(cur, ws, row["id"], [previous, row["customer_id"]], ideas, rid)
