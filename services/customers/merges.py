"""Customer links follow merges of duplicate ideas (docs/ideas.md, duplicates).

The ideas service emits `merge.applied` and `merge.reverted` (queue `customers`). A merge links
every customer of the duplicate to the primary (a pair already linked stays one link) and records
the links it added; its revert removes exactly those. Each added or removed link emits
`link.created` / `link.deleted`, which the ideas service projects onto `totalCustomerARR`.
Replays are skipped (the consumer records event ids, and each merge's state is kept); a revert
that overtakes its merge leaves a `reverted` state that the late merge respects.

A customer linked to the duplicate after its merge was applied is linked to the primary as
well, recorded as that merge's (so the unmerge removes it too), and on up a chain of merges
(`follow`). The merge's copy and a new link take the same lock on the duplicate's links
(`lock_links`), so whichever commits second sees the other: no link slips between them.
"""

from __future__ import annotations

import uuid

from typing import Any

import aiopg

from libs.common import db
from libs.common.messaging import add_event

from . import events


async def lock_links(cur: aiopg.Cursor, ws: uuid.UUID, idea_id: uuid.UUID | str) -> None:
    """The transaction's lock on new links of one idea (held to its end)."""
    await cur.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
        (f"customers.idea_links:{ws}:{idea_id}",),
    )


async def follow(
    cur: aiopg.Cursor, ws: uuid.UUID, idea_id: uuid.UUID, customer_id: uuid.UUID
) -> None:
    """After a link of `customer_id` to `idea_id` (under `lock_links`): while that idea is the
    duplicate of an applied merge, link the customer to its primary too, as the merge's."""
    seen = {str(idea_id)}
    while True:
        merge = await db.fetchone(
            cur,
            "SELECT merge_id, primary_id FROM customers.merges WHERE workspace_id = %s"
            " AND duplicate_id = %s AND state = 'applied' ORDER BY updated_at DESC LIMIT 1",
            (ws, idea_id),
        )
        if merge is None or str(merge["primary_id"]) in seen:
            return
        idea_id = merge["primary_id"]
        seen.add(str(idea_id))
        await lock_links(cur, ws, idea_id)
        added = await db.fetchone(
            cur,
            "WITH added AS (INSERT INTO customers.idea_links (workspace_id, idea_id,"
            "   customer_id, linked_at) VALUES (%s, %s, %s, now())"
            "  ON CONFLICT DO NOTHING RETURNING linked_at)"
            " INSERT INTO customers.merge_links AS ml (merge_id, customer_id, linked_at)"
            " SELECT %s, %s, linked_at FROM added ON CONFLICT (merge_id, customer_id)"
            " DO UPDATE SET linked_at = EXCLUDED.linked_at RETURNING linked_at",
            (ws, idea_id, customer_id, merge["merge_id"], customer_id),
        )
        if added is None:
            return  # already linked to the primary: its own link followed on from there
        await _link_created(cur, ws, idea_id, customer_id, added["linked_at"])


async def _link_created(
    cur: aiopg.Cursor, ws: uuid.UUID, idea_id: Any, customer_id: Any, linked_at: Any
) -> None:
    customer = await db.fetchone(
        cur,
        "SELECT arr, coalesce(updated_at, created_at) AS version"
        " FROM customers.customers WHERE workspace_id = %s AND id = %s FOR SHARE",
        (ws, customer_id),
    )
    assert customer is not None
    await events.link_created(
        cur, ws, idea_id, customer_id, linked_at, customer["arr"], customer["version"], None
    )


async def on_applied(cur: aiopg.Cursor, ws: uuid.UUID, data: dict[str, Any]) -> None:
    await lock_links(cur, ws, data["duplicateId"])
    inserted = await db.fetchval(
        cur,
        "INSERT INTO customers.merges (workspace_id, merge_id, primary_id, duplicate_id, state)"
        " VALUES (%s, %s, %s, %s, 'applied') ON CONFLICT DO NOTHING RETURNING 1",
        (ws, data["mergeId"], data["primaryId"], data["duplicateId"]),
    )
    if inserted is None:
        return  # a replay, or its revert came first
    added = await db.fetchall(
        cur,
        "WITH added AS (INSERT INTO customers.idea_links AS l (workspace_id, idea_id,"
        "   customer_id, linked_at)"
        " SELECT workspace_id, %s, customer_id, now() FROM customers.idea_links"
        "  WHERE workspace_id = %s AND idea_id = %s ORDER BY customer_id"
        " ON CONFLICT DO NOTHING RETURNING customer_id, linked_at)"
        " INSERT INTO customers.merge_links (merge_id, customer_id, linked_at)"
        " SELECT %s, customer_id, linked_at FROM added RETURNING customer_id, linked_at",
        (data["primaryId"], ws, data["duplicateId"], data["mergeId"]),
    )
    for link in sorted(added, key=lambda r: str(r["customer_id"])):
        await _link_created(cur, ws, data["primaryId"], link["customer_id"], link["linked_at"])


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
    removed = await db.fetchall(
        cur,
        "DELETE FROM customers.idea_links l USING customers.merge_links ml"
        " WHERE ml.merge_id = %s AND l.workspace_id = %s AND l.idea_id = %s"
        "   AND l.customer_id = ml.customer_id AND l.linked_at = ml.linked_at"
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
    if kind == "merge.applied":
        await on_applied(cur, ws, data)
    elif kind == "merge.reverted":
        await on_reverted(cur, ws, data)


CONSUMERS = {"customers": handle}
