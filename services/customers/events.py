"""The events the customers service emits, written to its outbox in the change's transaction.

`customer.created` / `customer.updated` are public (webhook subscribers get them):
`{"customer": CustomerFull}`. `link.created` and `link.deleted` are internal: the ideas service projects it onto
the idea's revenue fields. It carries the customer's ARR and version (`customerUpdatedAt`) so
the projection is right whichever of a customer's events arrives first.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

import aiopg
import orjson

from libs.common import db
from libs.common.messaging import add_event, event_body

from .serialize import customer_full

SCHEMA = "customers"


async def customer_changed(
    cur: aiopg.Cursor, event_type: str, workspace_id: uuid.UUID, row: db.Row, request_id: str | None
) -> orjson.Fragment:
    """Emit customer.created/updated for `row`; return the CustomerFull it carried."""
    body = customer_full(row)
    await add_event(cur, SCHEMA, event_type, workspace_id, {"customer": body}, request_id)
    return body


async def link_created(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    customer_id: uuid.UUID,
    linked_at: datetime,
    arr: Decimal | None,
    version: datetime,
    request_id: str | None,
) -> None:
    await add_event(
        cur,
        SCHEMA,
        "link.created",
        workspace_id,
        {
            "ideaId": str(idea_id),
            "customerId": str(customer_id),
            "linkedAt": linked_at,
            # ARR as text: the projection stores it as numeric, exactly.
            "arr": None if arr is None else str(arr),
            "customerUpdatedAt": version,
        },
        request_id,
    )


async def link_deleted(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    customer_id: uuid.UUID,
    linked_at: datetime,
    request_id: str | None,
) -> None:
    """The pair's link (made at `linked_at`) is gone: the projection drops it and remembers the
    removal, so a late or repeated `link.created` of that link changes nothing."""
    await add_event(
        cur,
        SCHEMA,
        "link.deleted",
        workspace_id,
        {"ideaId": str(idea_id), "customerId": str(customer_id), "linkedAt": linked_at},
        request_id,
    )


async def links_created(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID | str, links: list[db.Row]
) -> None:
    """`link.created` for each new link of one idea (`customer_id`, `linked_at`), in customer
    order, each with its customer's ARR and version read under a share lock, as `link_created`
    writes them: in three statements however many links (a merge's copy, a step up a chain)."""
    if not links:
        return
    links = sorted(links, key=lambda r: str(r["customer_id"]))
    customers = {
        r["id"]: r
        for r in await db.fetchall(
            cur,
            "SELECT id, arr, coalesce(updated_at, created_at) AS version FROM customers.customers"
            " WHERE workspace_id = %s AND id = ANY(%s::uuid[]) ORDER BY id FOR SHARE",
            (workspace_id, [str(r["customer_id"]) for r in links]),
        )
    }
    ids, bodies = [], []
    for link in links:
        customer = customers[link["customer_id"]]
        event_id = uuid.uuid4()
        data = {
            "ideaId": str(idea_id),
            "customerId": str(link["customer_id"]),
            "linkedAt": link["linked_at"],
            "arr": None if customer["arr"] is None else str(customer["arr"]),
            "customerUpdatedAt": customer["version"],
        }
        ids.append(event_id)
        bodies.append(event_body(event_id, "link.created", workspace_id, data))
    await cur.execute(
        f"INSERT INTO {SCHEMA}.outbox (event_id, event_type, workspace_id, body)"
        " SELECT e, 'link.created', %s, b FROM unnest(%s::uuid[], %s::bytea[])"
        " WITH ORDINALITY AS t(e, b, n) ORDER BY n",
        (workspace_id, ids, bodies),
    )
    await cur.execute(f"NOTIFY {SCHEMA}_outbox")
