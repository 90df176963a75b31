"""Customer links follow merges of duplicate ideas (docs/ideas.md, duplicates).

The ideas service emits `merge.applied` and `merge.reverted` (queue `customers`). A merge links
every customer of the duplicate to the primary (a pair already linked stays one link) and records
the links it added; its revert removes exactly those. Each added or removed link emits
`link.created` / `link.deleted`, which the ideas service projects onto `totalCustomerARR`.
Replays are skipped (the consumer records event ids, and each merge's state is kept); a revert
that overtakes its merge leaves a `reverted` state that the late merge respects.
"""

from __future__ import annotations

import uuid

from typing import Any

import aiopg

from libs.common import db
from libs.common.messaging import add_event

from . import events


async def on_applied(cur: aiopg.Cursor, ws: uuid.UUID, data: dict[str, Any]) -> None:
    inserted = await db.fetchval(
        cur,
        "INSERT INTO customers.merges (workspace_id, merge_id, primary_id, state)"
        " VALUES (%s, %s, %s, 'applied') ON CONFLICT DO NOTHING RETURNING 1",
        (ws, data["mergeId"], data["primaryId"]),
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
        customer = await db.fetchone(
            cur,
            "SELECT arr, coalesce(updated_at, created_at) AS version"
            " FROM customers.customers WHERE workspace_id = %s AND id = %s FOR SHARE",
            (ws, link["customer_id"]),
        )
        assert customer is not None
        await events.link_created(
            cur,
            ws,
            data["primaryId"],
            link["customer_id"],
            link["linked_at"],
            customer["arr"],
            customer["version"],
            None,
        )


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
