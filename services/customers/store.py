"""Storage of customers: every function takes a cursor and filters by workspace.

Rows come back as dicts with the columns of `COLUMNS`: the keyset columns, and `json`, the
CustomerFull built by `customers.customer_json` (migration 0002_json_forms.sql, also used by the
analytics export).
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import aiopg
import orjson
import psycopg2

from libs.common import db
from libs.common.errors import Conflict, ValidationFailed

# The number of ideas linked to customer `c`: CustomerFull's ideaCount.
IDEA_COUNT = """(SELECT count(*) FROM customers.idea_links l
      WHERE l.workspace_id = c.workspace_id AND l.customer_id = c.id)"""
CUSTOMER_JSON = f"customers.customer_json(c, {IDEA_COUNT})::text"
COLUMNS = f"c.id, c.name, c.arr, c.created_at, {CUSTOMER_JSON} AS json"

# API field -> column, for the fields a client may write.
WRITABLE = {
    "name": "name",
    "email": "email",
    "domain": "domain",
    "arr": "arr",
    "mrr": "mrr",
    "plan": "plan",
    "externalId": "external_id",
    "metadata": "metadata",
}

EXTERNAL_ID_INDEX = "customers_external_id"


def _param(field: str, value: Any) -> Any:
    if value is None:
        return None
    if field == "metadata":
        try:
            return orjson.dumps(value).decode()
        except orjson.JSONEncodeError as err:  # e.g. an integer beyond 64 bits
            raise ValidationFailed("metadata: cannot be stored", field="metadata") from err
    if field in ("arr", "mrr"):
        # The shortest decimal of the double: what goes out as a JSON number reads back the same.
        return Decimal(repr(value))
    return value


async def get(cur: aiopg.Cursor, workspace_id: uuid.UUID, customer_id: uuid.UUID) -> db.Row | None:
    return await db.fetchone(
        cur,
        f"SELECT {COLUMNS} FROM customers.customers c WHERE c.workspace_id = %s AND c.id = %s",
        (workspace_id, customer_id),
    )


async def create(cur: aiopg.Cursor, workspace_id: uuid.UUID, fields: dict[str, Any]) -> db.Row:
    """Insert a customer (source `api`); a taken externalId is a 409."""
    cols = ["id", "workspace_id", "source"] + [WRITABLE[f] for f in fields]
    values = [uuid.uuid4(), workspace_id, "api"] + [_param(f, v) for f, v in fields.items()]
    # updated_at starts at created_at: it is the customer's version from the first event on.
    sql = (
        f"INSERT INTO customers.customers ({', '.join(cols)}, created_at, updated_at)"
        f" VALUES ({', '.join(['%s'] * len(cols))}, now(), now()) RETURNING id"
    )
    new_id = await _write(cur, sql, values)
    row = await get(cur, workspace_id, new_id)
    assert row is not None
    return row


async def update(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, customer_id: uuid.UUID, fields: dict[str, Any]
) -> db.Row | None:
    """Apply the given fields; None when the customer is not in the workspace."""
    sets = [f"{WRITABLE[f]} = %s" for f in fields]
    # Evaluated after the row lock is taken, so updated_at strictly increases per customer even
    # when two updates race: an event's updatedAt orders the customer's states.
    sets.append(
        "updated_at = greatest(clock_timestamp(),"
        " coalesce(updated_at, created_at) + interval '1 microsecond')"
    )
    sql = (
        f"UPDATE customers.customers SET {', '.join(sets)}"
        " WHERE workspace_id = %s AND id = %s RETURNING id"
    )
    found = await _write(
        cur, sql, [_param(f, v) for f, v in fields.items()] + [workspace_id, customer_id]
    )
    if found is None:
        return None
    return await get(cur, workspace_id, customer_id)


async def _write(cur: aiopg.Cursor, sql: str, params: list[Any]) -> Any:
    try:
        return await db.fetchval(cur, sql, params)
    except psycopg2.errors.UniqueViolation as err:
        if db.is_unique_violation(err, EXTERNAL_ID_INDEX):
            raise Conflict(
                "A customer with this externalId already exists", field="externalId"
            ) from err
        raise


async def exists(cur: aiopg.Cursor, workspace_id: uuid.UUID, customer_id: uuid.UUID) -> bool:
    return bool(
        await db.fetchval(
            cur,
            "SELECT 1 FROM customers.customers WHERE workspace_id = %s AND id = %s",
            (workspace_id, customer_id),
        )
    )
