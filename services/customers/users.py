"""Storage of end users (docs/customers.md, End users): every function takes the cursor of the
caller's transaction and filters by workspace.

`externalId` and the lowercase e-mail are unique per workspace (unique indexes), which is what
makes `identify` exact under concurrency: a user that is not found is inserted with
`ON CONFLICT DO NOTHING`, and an insert that lost to a concurrent one reads the winner.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import aiopg
import orjson
import psycopg2

from libs.common import db
from libs.common.errors import Conflict, NotFound, ValidationFailed
from libs.common.pagination import Secrets, page_tail

COLUMNS = (
    "u.id, u.name, u.email, u.external_id, u.customer_id, u.avatar_url,"
    " u.metadata::text AS metadata, u.created_at, u.updated_at"
)
# API field -> column, for the fields a client may write.
WRITABLE = {
    "name": "name",
    "email": "email",
    "externalId": "external_id",
    "customerId": "customer_id",
    "avatarUrl": "avatar_url",
    "metadata": "metadata",
}
# A unique index -> the field a violation of it names.
UNIQUE = {"users_email": "email", "users_external_id": "externalId"}
# Rounds of identify's find-or-insert: an insert that loses a race reads the winner next round.
IDENTIFY_ROUNDS = 5


@dataclass(frozen=True, kw_only=True)
class Written:
    """A user as written, and the customer it belonged to before (a move when they differ)."""

    row: db.Row
    previous_customer: uuid.UUID | None
    created: bool = False

    @property
    def moved(self) -> bool:
        return not self.created and self.row["customer_id"] != self.previous_customer


def _param(field: str, value: Any) -> Any:
    if field == "metadata" and value is not None:
        try:
            return orjson.dumps(value).decode()
        except orjson.JSONEncodeError as err:  # e.g. an integer beyond 64 bits
            raise ValidationFailed("metadata: cannot be stored", field="metadata") from err
    return value


async def get(
    cur: aiopg.Cursor, ws: uuid.UUID, user_id: uuid.UUID, lock: bool = False
) -> db.Row | None:
    return await db.fetchone(
        cur,
        f"SELECT {COLUMNS} FROM customers.users u WHERE u.workspace_id = %s AND u.id = %s"
        + (" FOR UPDATE" if lock else ""),
        (ws, user_id),
    )


async def check_customer(cur: aiopg.Cursor, ws: uuid.UUID, fields: dict[str, Any]) -> None:
    """404 when the fields name a customer that is not the workspace's."""
    customer_id = fields.get("customerId")
    if customer_id is not None and not await db.fetchval(
        cur,
        "SELECT 1 FROM customers.customers WHERE workspace_id = %s AND id = %s",
        (ws, customer_id),
    ):
        raise NotFound("Customer not found")


async def _write(cur: aiopg.Cursor, sql: str, params: list[Any]) -> Any:
    try:
        return await db.fetchval(cur, sql, params)
    except psycopg2.errors.UniqueViolation as err:
        for index, field in UNIQUE.items():
            if db.is_unique_violation(err, index):
                raise Conflict(f"Another user has this {field}", field=field) from err
        raise


def _insert_sql(fields: dict[str, Any], on_conflict: str = "") -> tuple[str, list[Any]]:
    cols = ["id", "workspace_id"] + [WRITABLE[f] for f in fields]
    sql = (
        f"INSERT INTO customers.users ({', '.join(cols)})"
        f" VALUES ({', '.join(['%s'] * len(cols))}){on_conflict} RETURNING id"
    )
    return sql, [_param(f, v) for f, v in fields.items()]


async def create(cur: aiopg.Cursor, ws: uuid.UUID, fields: dict[str, Any]) -> db.Row:
    """A new user; a taken e-mail or externalId is 409, an unknown customer 404."""
    await check_customer(cur, ws, fields)
    sql, params = _insert_sql(fields)
    new_id = await _write(cur, sql, [uuid.uuid4(), ws, *params])
    row = await get(cur, ws, new_id)
    assert row is not None
    return row


async def _find(cur: aiopg.Cursor, ws: uuid.UUID, fields: dict[str, Any]) -> db.Row | None:
    """The user identify names: by externalId, else by e-mail; locked."""
    if fields.get("externalId") is not None:
        row = await db.fetchone(
            cur,
            f"SELECT {COLUMNS} FROM customers.users u"
            " WHERE u.workspace_id = %s AND u.external_id = %s FOR UPDATE",
            (ws, fields["externalId"]),
        )
        if row is not None:
            return row
    if fields.get("email") is not None:
        return await db.fetchone(
            cur,
            f"SELECT {COLUMNS} FROM customers.users u"
            " WHERE u.workspace_id = %s AND lower(u.email) = lower(%s) FOR UPDATE",
            (ws, fields["email"]),
        )
    return None


async def identify(cur: aiopg.Cursor, ws: uuid.UUID, fields: dict[str, Any]) -> Written:
    """Find the user by externalId, else by e-mail, else create one; then apply the fields."""
    await check_customer(cur, ws, fields)
    for _ in range(IDENTIFY_ROUNDS):
        row = await _find(cur, ws, fields)
        if row is not None:
            return await _apply(cur, ws, row, fields, always=False)
        sql, params = _insert_sql(fields, " ON CONFLICT DO NOTHING")
        # A concurrent insert of the same e-mail or externalId makes this one wait for its
        # commit, then do nothing: the next round finds that user.
        new_id = await db.fetchval(cur, sql, [uuid.uuid4(), ws, *params])
        if new_id is not None:
            created = await get(cur, ws, new_id)
            assert created is not None
            return Written(row=created, previous_customer=None, created=True)
    raise Conflict("The user changed concurrently; retry")


async def update(
    cur: aiopg.Cursor, ws: uuid.UUID, user_id: uuid.UUID, fields: dict[str, Any]
) -> Written | None:
    """Apply the fields (PATCH); None when the user is not in the workspace."""
    await check_customer(cur, ws, fields)
    row = await get(cur, ws, user_id, lock=True)
    if row is None:
        return None
    return await _apply(cur, ws, row, fields, always=True)


async def _apply(
    cur: aiopg.Cursor, ws: uuid.UUID, row: db.Row, fields: dict[str, Any], always: bool
) -> Written:
    """Write the fields on the locked `row`. `updated_at` moves on every PATCH (`always`), and
    on an identify only when a value changes."""
    cols = [WRITABLE[f] for f in fields]
    params = [_param(f, v) for f, v in fields.items()]
    changed = " OR ".join(
        f"{c}::text IS DISTINCT FROM %s::text" if c == "metadata" else f"{c} IS DISTINCT FROM %s"
        for c in cols
    )
    where = "" if always or not cols else f" AND ({changed})"
    sets = [f"{c} = %s" for c in cols] + [
        "updated_at = greatest(clock_timestamp(), coalesce(updated_at, created_at)"
        " + interval '1 microsecond')"
    ]
    await _write(
        cur,
        f"UPDATE customers.users SET {', '.join(sets)}"
        f" WHERE workspace_id = %s AND id = %s{where} RETURNING id",
        [*params, ws, row["id"], *(params if where else [])],
    )
    new = await get(cur, ws, row["id"])
    assert new is not None
    return Written(row=new, previous_customer=row["customer_id"])


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def filters(
    ws: uuid.UUID, search: str | None, customer_id: uuid.UUID | None
) -> tuple[str, list[Any]]:
    parts: list[str] = ["u.workspace_id = %s"]
    params: list[Any] = [ws]
    if search:
        needle = search.lower()
        if "\n" in needle:  # search_text joins the fields with a newline: check each alone
            parts.append(
                "(strpos(lower(coalesce(u.name, '')), %s) > 0"
                " OR strpos(lower(coalesce(u.email, '')), %s) > 0)"
            )
            params += [needle, needle]
        else:
            parts.append("u.search_text LIKE %s")
            params.append("%" + _like_escape(needle) + "%")
    if customer_id is not None:
        parts.append("u.customer_id = %s")
        params.append(customer_id)
    return " AND ".join(parts), params


async def page(
    cur: aiopg.Cursor,
    where: tuple[str, list[Any]],
    limit: int,
    after: list[Any] | None,
    secrets: Secrets,
    scope: dict[str, Any],
) -> tuple[list[db.Row], str | None, bool]:
    """A page of users, newest first: the rows, the next page's cursor, whether there is one."""
    sql, params = where
    if after is not None:
        sql += " AND (u.created_at, u.id) < (%s::timestamptz, %s::uuid)"
        params = [*params, *after]
    rows = await db.fetchall(
        cur,
        f"SELECT {COLUMNS} FROM customers.users u WHERE {sql}"
        " ORDER BY u.created_at DESC, u.id DESC LIMIT %s",
        [*params, limit + 1],
    )
    return page_tail(
        rows, limit, secrets, scope, lambda r: [r["created_at"].isoformat(), str(r["id"])]
    )


async def total(cur: aiopg.Cursor, where: tuple[str, list[Any]]) -> int:
    sql, params = where
    return int(
        await db.fetchval(cur, f"SELECT count(*) FROM customers.users u WHERE {sql}", params)
    )


async def lookup(cur: aiopg.Cursor, ws: uuid.UUID, ids: list[uuid.UUID]) -> list[db.Row]:
    """The workspace's users of these ids (those that exist)."""
    return await db.fetchall(
        cur,
        "SELECT id, name, email, customer_id FROM customers.users"
        " WHERE workspace_id = %s AND id = ANY(%s::uuid[])",
        (ws, [str(i) for i in ids]),
    )


def as_uuid(text: str) -> uuid.UUID | None:
    """A user id as given to an internal route; None when it is not a uuid (no such user)."""
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


async def delete(cur: aiopg.Cursor, ws: uuid.UUID, user_id: uuid.UUID) -> db.Row | None:
    """Remove the user and this service's record of the user's votes; the user as it was
    (`customer_id`, and `ideas`: those the user voted +1 on), or None when absent."""
    row = await db.fetchone(
        cur,
        "DELETE FROM customers.users WHERE workspace_id = %s AND id = %s RETURNING customer_id",
        (ws, user_id),
    )
    if row is None:
        return None
    voted = await db.fetchall(
        cur,
        "DELETE FROM customers.user_votes WHERE workspace_id = %s AND user_id = %s"
        " RETURNING idea_id, value",
        (ws, user_id),
    )
    ideas = sorted(str(v["idea_id"]) for v in voted if v["value"] == 1)
    return {"customer_id": row["customer_id"], "ideas": ideas}
