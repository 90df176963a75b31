"""Customer links follow merges of duplicate ideas (docs/ideas.md, duplicates).

The ideas service emits `merge.applied` and `merge.reverted` (queue `customers`). A merge links
every customer of the duplicate to the primary (a pair already linked stays one link) and records
the links it added; its revert removes exactly those. Each added or removed link emits
`link.created` / `link.deleted`, which the ideas service projects onto `totalCustomerARR`.
Replays are skipped (the consumer records event ids, and each merge's state is kept); a revert
that overtakes its merge leaves a `reverted` state that the late merge respects.

A customer linked to the duplicate after its merge was applied is linked to the primary as
well, recorded as that merge's (so the unmerge removes it too), and on up a chain of merges,
one idea a step (`follow`), each step a transaction of its own taken from the queue: the link
call only writes its own link and, for a merged duplicate, a row of `links_to_follow` and a
`merge.follow` event (this service's own, consumed here); a step links the customers waiting
for its idea to the primary and, for those the primary did not have, when the primary is merged
too, writes the next step's rows and event. A link call costs the same whatever the length of
the chain above it, and a burst of links to one duplicate goes up in a few steps, not one walk
each (docs/customers.md, "Links up a chain of merges"). The merge's copy, a new link and a step
take the same lock on the receiving idea's links (`lock_links`), so whichever commits second
sees the other: no link slips between them.
"""

from __future__ import annotations

import uuid
from typing import Any

import aiopg

from libs.common import db
from libs.common.messaging import add_event

from . import events

# Inserting a merge's links into the primary: a pair that only votes held there becomes
# direct, as the merge's (its unmerge gives it back to the votes); `inserted` tells a new link.
TAKE_OVER = (
    "ON CONFLICT (workspace_id, idea_id, customer_id) DO UPDATE SET direct = true"
    " WHERE NOT l.direct RETURNING customer_id, linked_at, (xmax = 0) AS inserted"
)
# Whether a +1 vote of a user of link `l`'s customer holds it (demand.HELD, for a row `l`).
HELD_BY_VOTES = (
    "EXISTS (SELECT 1 FROM customers.user_votes v JOIN customers.users u"
    " ON u.workspace_id = v.workspace_id AND u.id = v.user_id WHERE v.workspace_id ="
    " l.workspace_id AND v.idea_id = l.idea_id AND v.value = 1 AND u.customer_id = l.customer_id)"
)


async def lock_links(
    cur: aiopg.Cursor, ws: uuid.UUID, idea_id: uuid.UUID | str, shared: bool = False
) -> None:
    """The transaction's lock on the links of one idea (held to its end): `shared` for a
    writer of one link of it (new links of different customers need not wait for each other),
    exclusive for a merge that copies the idea's links on and for a step up a chain."""
    fn = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    await cur.execute(
        f"SELECT {fn}(hashtextextended(%s, 0))", (f"customers.idea_links:{ws}:{idea_id}",)
    )


async def applied_merge(
    cur: aiopg.Cursor, ws: uuid.UUID, idea_id: uuid.UUID | str, lock: bool = False
) -> db.Row | None:
    """The applied merge `idea_id` is the duplicate of (`merge_id`, `primary_id`), if any;
    with `lock`, its row share-locked (a revert waits for the transaction, then removes what
    it added)."""
    return await db.fetchone(
        cur,
        "SELECT merge_id, primary_id FROM customers.merges WHERE workspace_id = %s"
        " AND duplicate_id = %s AND state = 'applied' ORDER BY updated_at DESC LIMIT 1"
        + (" FOR SHARE" if lock else ""),
        (ws, idea_id),
    )


async def follow_later(
    cur: aiopg.Cursor, ws: uuid.UUID, idea_id: uuid.UUID | str, customers: list[Any]
) -> None:
    """After `customers` were newly linked to `idea_id`: when it is the duplicate of an applied
    merge, they wait in `links_to_follow` for the step up to its primary (`follow`), and the
    step's event is written, in this transaction."""
    if not customers or await applied_merge(cur, ws, idea_id) is None:
        return
    await cur.execute(
        "INSERT INTO customers.links_to_follow (workspace_id, idea_id, customer_id)"
        " SELECT %s, %s, c FROM unnest(%s::uuid[]) AS c ORDER BY c ON CONFLICT DO NOTHING",
        (ws, idea_id, sorted(str(c) for c in customers)),
    )
    await add_event(cur, events.SCHEMA, "merge.follow", ws, {"ideaId": str(idea_id)})


async def follow(cur: aiopg.Cursor, ws: uuid.UUID, idea_id: uuid.UUID | str) -> None:
    """One step up a chain of merges (the `merge.follow` event of `idea_id`): the customers
    waiting in `links_to_follow` for that idea are linked to the primary of its applied merge,
    as the merge's (`link.created` each), and those it did not have wait for the step above it.
    A step takes every customer waiting for its idea, so a burst of links goes up together;
    applied again, it finds none and ends. Exactly the customers linked go up: a pair unlinked
    from the primary stays unlinked until linked again. The merge's row is share-locked (a
    revert waits for the step, then removes what it added)."""
    if not await db.fetchval(
        cur,
        "SELECT EXISTS (SELECT 1 FROM customers.links_to_follow"
        " WHERE workspace_id = %s AND idea_id = %s)",
        (ws, idea_id),
    ):
        return  # another step took them
    merge = await applied_merge(cur, ws, idea_id, lock=True)
    primary = None if merge is None else merge["primary_id"]
    if primary is not None:
        await lock_links(cur, ws, primary)
    waiting = await db.fetchall(
        cur,
        "DELETE FROM customers.links_to_follow WHERE workspace_id = %s AND idea_id = %s"
        " RETURNING customer_id",
        (ws, idea_id),
    )
    if merge is None or primary is None or str(primary) == str(idea_id) or not waiting:
        return  # unmerged meanwhile: nothing goes up
    added = await db.fetchall(
        cur,
        "WITH added AS (INSERT INTO customers.idea_links AS l (workspace_id, idea_id,"
        "   customer_id, linked_at)"
        " SELECT %s, %s, c, clock_timestamp() FROM unnest(%s::uuid[]) AS c ORDER BY c"
        f" {TAKE_OVER}),"
        " recorded AS (INSERT INTO customers.merge_links AS ml (merge_id, customer_id, linked_at)"
        " SELECT %s, customer_id, linked_at FROM added ON CONFLICT (merge_id, customer_id)"
        " DO UPDATE SET linked_at = EXCLUDED.linked_at)"
        " SELECT customer_id, linked_at, inserted FROM added",
        (ws, primary, sorted(str(r["customer_id"]) for r in waiting), merge["merge_id"]),
    )
    await events.links_created(cur, ws, primary, [r for r in added if r["inserted"]])
    await follow_later(cur, ws, primary, [r["customer_id"] for r in added])


async def on_applied(cur: aiopg.Cursor, ws: uuid.UUID, data: dict[str, Any]) -> None:
    # The duplicate's links (read) and the primary's (written), in the chain's order: a merge
    # of the primary handled at the same time waits, then copies these links on, or this one
    # waits for it and sees it applied (without the second lock, each missed the other's and
    # the links stopped halfway up a chain).
    await lock_links(cur, ws, data["duplicateId"])
    await lock_links(cur, ws, data["primaryId"], shared=True)
    inserted = await db.fetchval(
        cur,
        "INSERT INTO customers.merges (workspace_id, merge_id, primary_id, duplicate_id, state)"
        " VALUES (%s, %s, %s, %s, 'applied') ON CONFLICT DO NOTHING RETURNING 1",
        (ws, data["mergeId"], data["primaryId"], data["duplicateId"]),
    )
    if inserted is None:
        return  # a replay, or its revert came first
    # The duplicate's direct links: the links its votes hold follow those votes, which the
    # merge moved (the ideas service's vote.changed of both ideas).
    added = await db.fetchall(
        cur,
        "WITH added AS (INSERT INTO customers.idea_links AS l (workspace_id, idea_id,"
        "   customer_id, linked_at)"
        " SELECT workspace_id, %s, customer_id, now() FROM customers.idea_links"
        "  WHERE workspace_id = %s AND idea_id = %s AND direct ORDER BY customer_id"
        f" {TAKE_OVER}),"
        " recorded AS (INSERT INTO customers.merge_links (merge_id, customer_id, linked_at)"
        " SELECT %s, customer_id, linked_at FROM added)"
        " SELECT customer_id, linked_at, inserted FROM added",
        (data["primaryId"], ws, data["duplicateId"], data["mergeId"]),
    )
    await events.links_created(cur, ws, data["primaryId"], [r for r in added if r["inserted"]])
    # A primary merged too (its merge handled first): the links go on up the chain.
    await follow_later(cur, ws, data["primaryId"], [r["customer_id"] for r in added])


async def on_reverted(cur: aiopg.Cursor, ws: uuid.UUID, data: dict[str, Any]) -> None:
    state = await db.fetchval(
        cur,
        "INSERT INTO customers.merges AS m (workspace_id, merge_id, primary_id, state)"
        " VALUES (%s, %s, %s, 'reverted') ON CONFLICT (merge_id) DO UPDATE"
        " SET state = 'reverted', updated_at = now() WHERE m.state = 'applied'"
        " RETURNING (xmax <> 0)",
        (ws, data["mergeId"], data["primaryId"]),
    )
    if not state:
        return  # None: already reverted (a replay); False: reverted before it was applied
    await lock_links(cur, ws, data["primaryId"])
    # A link the merge added that votes of the customer's users hold too stays, held by them
    # alone (not direct); the others go.
    await cur.execute(
        "UPDATE customers.idea_links l SET direct = false FROM customers.merge_links ml"
        " WHERE ml.merge_id = %s AND l.workspace_id = %s AND l.idea_id = %s"
        "   AND l.customer_id = ml.customer_id AND l.linked_at = ml.linked_at"
        f"   AND ({HELD_BY_VOTES})",
        (data["mergeId"], ws, data["primaryId"]),
    )
    removed = await db.fetchall(
        cur,
        "DELETE FROM customers.idea_links l USING customers.merge_links ml"
        " WHERE ml.merge_id = %s AND l.workspace_id = %s AND l.idea_id = %s"
        "   AND l.customer_id = ml.customer_id AND l.linked_at = ml.linked_at AND l.direct"
        " RETURNING l.customer_id, l.linked_at",
        (data["mergeId"], ws, data["primaryId"]),
    )
    for link in sorted(removed, key=lambda r: str(r["customer_id"])):
        await add_event(
            cur,
            events.SCHEMA,
            "link.deleted",
            ws,
            {
                "ideaId": data["primaryId"],
                "customerId": str(link["customer_id"]),
                "linkedAt": link["linked_at"],
            },
        )


async def handle(cur: aiopg.Cursor, event: dict[str, Any]) -> None:
    """The `customers` queue's handler (runs in the Consumer's transaction)."""
    kind, ws, data = event["type"], uuid.UUID(str(event["workspaceId"])), event["data"]
    if kind == "merge.follow":
        await follow(cur, ws, data["ideaId"])
    elif kind == "merge.applied":
        await on_applied(cur, ws, data)
    elif kind == "merge.reverted":
        await on_reverted(cur, ws, data)


CONSUMERS = {"customers": handle}
