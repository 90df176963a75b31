"""The customers list: filters, keyset pages over (sort key, id) with nulls last, and the total."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import aiopg

from libs.api.customers.schemas import ListCustomersQuery
from libs.common import db
from libs.common.pagination import Secrets, page_tail

from .store import COLUMNS

SORT_COLUMNS = {"createdAt": "c.created_at", "arr": "c.arr", "name": "c.name"}


@dataclass
class Where:
    """A conjunction of SQL conditions and their parameters."""

    parts: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)

    def add(self, sql: str, *params: Any) -> None:
        self.parts.append(sql)
        self.params.extend(params)

    @property
    def sql(self) -> str:
        return " AND ".join(self.parts)


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def filters(workspace_id: uuid.UUID, q: ListCustomersQuery) -> Where:
    w = Where()
    w.add("c.workspace_id = %s", workspace_id)
    if q.search:
        needle = q.search.lower()
        if "\n" in needle:
            # search_text joins the fields with newlines; such a needle must be checked per field.
            w.add(
                "(strpos(lower(c.name), %s) > 0 OR strpos(lower(coalesce(c.email, '')), %s) > 0"
                " OR strpos(lower(coalesce(c.domain, '')), %s) > 0)",
                needle,
                needle,
                needle,
            )
        else:
            w.add("c.search_text LIKE %s", "%" + _like_escape(needle) + "%")
    if q.min_arr is not None:
        w.add("c.arr >= %s", Decimal(repr(q.min_arr)))
    if q.plan is not None:
        w.add("c.plan = %s", q.plan)
    if q.source is not None:
        w.add("c.source = %s", q.source)
    return w


def after(sort: str, order: str, values: list[Any]) -> tuple[str, list[Any]]:
    """The condition 'comes after the cursor row' for ORDER BY key, id with nulls last."""
    col = SORT_COLUMNS[sort]
    op = "<" if order == "desc" else ">"
    key, last_id = values
    if sort != "arr":  # a NOT NULL key: a row comparison the index range scan can use
        cast = "::timestamptz" if sort == "createdAt" else ""
        return f"({col}, c.id) {op} (%s{cast}, %s::uuid)", [key, last_id]
    if key is None:  # inside the trailing block of nulls: only the id moves on
        return f"({col} IS NULL AND c.id {op} %s)", [last_id]
    return (
        f"({col} {op} %s::numeric OR ({col} = %s::numeric AND c.id {op} %s) OR {col} IS NULL)",
        [key, key, last_id],
    )


def keyset_value(sort: str, row: db.Row) -> Any:
    value = row[{"createdAt": "created_at", "arr": "arr", "name": "name"}[sort]]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


async def page(
    cur: aiopg.Cursor,
    where: Where,
    q: ListCustomersQuery,
    cursor_values: list[Any] | None,
    secrets: Secrets,
    scope: dict[str, Any],
) -> tuple[list[db.Row], str | None, bool]:
    """A page of customers: the rows, the cursor of the next page and whether there is one."""
    conds, params = list(where.parts), list(where.params)
    if cursor_values is not None:
        sql, extra = after(q.sort, q.order, cursor_values)
        conds.append(sql)
        params.extend(extra)
    col = SORT_COLUMNS[q.sort]
    direction = "DESC" if q.order == "desc" else "ASC"
    # NULLS LAST only where the key is nullable: on a NOT NULL key it would keep the planner
    # from reading the (workspace_id, key, id) index backwards for DESC.
    nulls = " NULLS LAST" if q.sort == "arr" else ""
    sql = (
        f"SELECT {COLUMNS} FROM customers.customers c WHERE {' AND '.join(conds)}"
        f" ORDER BY {col} {direction}{nulls}, c.id {direction} LIMIT %s"
    )
    rows = await db.fetchall(cur, sql, params + [q.limit + 1])
    return page_tail(
        rows, q.limit, secrets, scope, lambda r: [keyset_value(q.sort, r), str(r["id"])]
    )


async def total(cur: aiopg.Cursor, where: Where) -> int:
    return int(
        await db.fetchval(
            cur, f"SELECT count(*) FROM customers.customers c WHERE {where.sql}", where.params
        )
    )
