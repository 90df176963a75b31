"""Storage of idea-customer links: the set of pairs, newest link first on both sides."""

from __future__ import annotations

import uuid
from typing import Any

import aiopg

from libs.common import db


async def insert(cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID,
                 customer_id: uuid.UUID) -> db.Row | None:
    """Link the pair; None when it is already linked. Returns the link with the customer's
    current ARR and version, read under a share lock so no update slips between them."""
    row = await db.fetchone(
        cur, "INSERT INTO customers.idea_links (workspace_id, idea_id, customer_id, linked_at)"
             " VALUES (%s, %s, %s, now()) ON CONFLICT DO NOTHING RETURNING linked_at",
        (workspace_id, idea_id, customer_id))
    if row is None:
        return None
    customer = await db.fetchone(
        cur, "SELECT arr, coalesce(updated_at, created_at) AS version FROM customers.customers"
             " WHERE workspace_id = %s AND id = %s FOR SHARE", (workspace_id, customer_id))
    assert customer is not None  # the caller checked it, and customers are never deleted
    return {"linked_at": row["linked_at"], **customer}


async def customers_of_idea(cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID,
                            limit: int, after: list[Any] | None) -> list[db.Row]:
    """Customers linked to an idea, newest link first; up to limit + 1 rows."""
    cond, params = "", []
    if after is not None:
        cond = " AND (l.linked_at, l.customer_id) < (%s::timestamptz, %s::uuid)"
        params = after
    return await db.fetchall(
        cur, "SELECT c.id, c.name, c.email, c.domain, c.arr, c.mrr, c.plan, c.source, l.linked_at"
             " FROM customers.idea_links l JOIN customers.customers c"
             "   ON c.workspace_id = l.workspace_id AND c.id = l.customer_id"
             f" WHERE l.workspace_id = %s AND l.idea_id = %s{cond}"
             " ORDER BY l.linked_at DESC, l.customer_id DESC LIMIT %s",
        [workspace_id, idea_id, *params, limit + 1])


async def ideas_of_customer(cur: aiopg.Cursor, workspace_id: uuid.UUID, customer_id: uuid.UUID,
                            limit: int, after: list[Any] | None) -> list[db.Row]:
    """(idea_id, linked_at) of a customer's links, newest first; up to `limit` rows."""
    cond, params = "", []
    if after is not None:
        cond = " AND (linked_at, idea_id) < (%s::timestamptz, %s::uuid)"
        params = after
    return await db.fetchall(
        cur, "SELECT idea_id, linked_at FROM customers.idea_links"
             f" WHERE workspace_id = %s AND customer_id = %s{cond}"
             " ORDER BY linked_at DESC, idea_id DESC LIMIT %s",
        [workspace_id, customer_id, *params, limit])

