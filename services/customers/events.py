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
from libs.common.messaging import add_event

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
