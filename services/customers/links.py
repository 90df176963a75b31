"""Storage of idea-customer links: the set of pairs, newest link first on both sides."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import aiopg

from libs.common import db
from libs.common.pagination import Secrets, encode_cursor, page_tail


async def insert(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID | str,
    customer_id: uuid.UUID | str,
    direct: bool = True,
) -> db.Row | None:
    """Link the pair (`direct`, or held by votes only); None when it is already linked.
    Returns the link with the customer's current ARR and version, read under a share lock so
    no update slips between them.

    `linked_at` is the clock's time, taken under the idea's link lock (the caller's
    `merges.lock_links`): a link made again after an unlink is always later than the one
    removed, which the projection relies on to tell it from a late event of the old one."""
    row = await db.fetchone(
        cur,
        "INSERT INTO customers.idea_links (workspace_id, idea_id, customer_id, linked_at, direct)"
        " VALUES (%s, %s, %s, clock_timestamp(), %s) ON CONFLICT DO NOTHING RETURNING linked_at",
        (workspace_id, idea_id, customer_id, direct),
    )
    if row is None:
        return None
    customer = await db.fetchone(
        cur,
        "SELECT arr, coalesce(updated_at, created_at) AS version FROM customers.customers"
        " WHERE workspace_id = %s AND id = %s FOR SHARE",
        (workspace_id, customer_id),
    )
    assert customer is not None  # the caller checked it, and customers are never deleted
    return {"linked_at": row["linked_at"], **customer}


async def make_direct(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID | str, customer_id: uuid.UUID
) -> Any:
    """A link that only votes held becomes direct (it then stays when the votes go): its
    `linked_at`, or None when the pair's link is direct already (or absent)."""
    return await db.fetchval(
        cur,
        "UPDATE customers.idea_links SET direct = true WHERE workspace_id = %s AND idea_id = %s"
        " AND customer_id = %s AND NOT direct RETURNING linked_at",
        (workspace_id, idea_id, customer_id),
    )


async def make_indirect(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID | str, customer_id: Any
) -> None:
    """The pair's link loses its direct reason; the votes that still hold it keep it."""
    await cur.execute(
        "UPDATE customers.idea_links SET direct = false WHERE workspace_id = %s AND idea_id = %s"
        " AND customer_id = %s",
        (workspace_id, idea_id, customer_id),
    )


async def get(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID | str, customer_id: Any
) -> db.Row | None:
    """The pair's link (`direct`, `linked_at`), locked; None when not linked."""
    return await db.fetchone(
        cur,
        "SELECT direct, linked_at FROM customers.idea_links WHERE workspace_id = %s"
        " AND idea_id = %s AND customer_id = %s FOR UPDATE",
        (workspace_id, idea_id, customer_id),
    )


async def remove(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID | str, customer_id: Any
) -> Any:
    """Unlink the pair (under the idea's link lock); its `linked_at`, or None when the pair is
    not linked in this workspace."""
    return await db.fetchval(
        cur,
        "DELETE FROM customers.idea_links WHERE workspace_id = %s AND idea_id = %s"
        " AND customer_id = %s RETURNING linked_at",
        (workspace_id, idea_id, customer_id),
    )


async def customers_of_idea(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    limit: int,
    after: list[Any] | None,
    secrets: Secrets,
    scope: dict[str, Any],
) -> tuple[list[db.Row], str | None, bool]:
    """A page of the customers linked to an idea, newest link first: the rows, the cursor of
    the next page and whether there is one."""
    cond, params = "", []
    if after is not None:
        cond = " AND (l.linked_at, l.customer_id) < (%s::timestamptz, %s::uuid)"
        params = after
    rows = await db.fetchall(
        cur,
        "SELECT c.id, c.name, c.email, c.domain, c.arr, c.mrr, c.plan, c.source, l.linked_at"
        " FROM customers.idea_links l JOIN customers.customers c"
        "   ON c.workspace_id = l.workspace_id AND c.id = l.customer_id"
        f" WHERE l.workspace_id = %s AND l.idea_id = %s{cond}"
        " ORDER BY l.linked_at DESC, l.customer_id DESC LIMIT %s",
        [workspace_id, idea_id, *params, limit + 1],
    )
    return page_tail(
        rows, limit, secrets, scope, lambda r: [r["linked_at"].isoformat(), str(r["id"])]
    )


async def ideas_of_customer(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    customer_id: uuid.UUID,
    limit: int,
    after: list[Any] | None,
) -> list[db.Row]:
    """(idea_id, linked_at) of a customer's links, newest first; up to `limit` rows."""
    cond, params = "", []
    if after is not None:
        cond = " AND (linked_at, idea_id) < (%s::timestamptz, %s::uuid)"
        params = after
    return await db.fetchall(
        cur,
        "SELECT idea_id, linked_at FROM customers.idea_links"
        f" WHERE workspace_id = %s AND customer_id = %s{cond}"
        " ORDER BY linked_at DESC, idea_id DESC LIMIT %s",
        [workspace_id, customer_id, *params, limit],
    )


# A customer's ideas page skips deleted ideas; this bounds the link batches one page may scan.
MAX_SCAN_ROUNDS = 20
# The ideas service's Idea bodies of these ids, in the given order (services/customers/ideas_client.py).
IdeaLookup = Callable[[list[uuid.UUID]], Awaitable[list[dict[str, Any]]]]


async def customer_ideas_page(
    pool: aiopg.Pool,
    lookup: IdeaLookup,
    workspace_id: uuid.UUID,
    customer_id: uuid.UUID,
    limit: int,
    after: list[Any] | None,
    secrets: Secrets,
    scope: dict[str, Any],
) -> tuple[list[dict[str, Any]], str | None]:
    """A page of the customer's linked ideas that are not deleted, newest link first, and the
    cursor of the next page. Each batch of links is read outside any transaction, then its
    ideas are asked of the ideas service."""
    items, position, exhausted = await _live_ideas(
        pool, lookup, workspace_id, customer_id, limit + 1, after
    )
    has_more = len(items) > limit or not exhausted
    page = items[:limit]
    if len(items) > limit:
        position = _link_key(page[-1][1])
    token = encode_cursor(secrets, scope, position) if has_more and position else None
    return [idea for idea, _ in page], token


def _link_key(link: db.Row) -> list[Any]:
    return [link["linked_at"].isoformat(), str(link["idea_id"])]


async def _live_ideas(
    pool: aiopg.Pool,
    lookup: IdeaLookup,
    workspace_id: uuid.UUID,
    customer_id: uuid.UUID,
    want: int,
    after: list[Any] | None,
) -> tuple[list[tuple[dict[str, Any], db.Row]], list[Any] | None, bool]:
    """Up to `want` linked ideas that are not deleted, newest link first; also the position of
    the last link scanned and whether the links ran out."""
    items: list[tuple[dict[str, Any], db.Row]] = []
    for _ in range(MAX_SCAN_ROUNDS):
        asked = want - len(items)
        async with db.cursor(pool) as cur:
            rows = await ideas_of_customer(cur, workspace_id, customer_id, asked, after)
        found = {i["id"]: i for i in await lookup([r["idea_id"] for r in rows])}
        for r in rows:
            idea = found.get(str(r["idea_id"]))
            if idea is not None and idea.get("status") != "deleted":
                items.append((idea, r))
        if rows:
            after = _link_key(rows[-1])
        if len(rows) < asked:
            return items, after, True
        if len(items) >= want:
            return items, after, False
    return items, after, False
