"""The ideas list: filters, keyset pages over (workspace_id, sort key, id) indexes, and `total`.

Order: the sort key, then id, in the given order, nulls last in both orders. A nullable key has
one index per order (`... ASC NULLS LAST, id ASC` and `... DESC NULLS LAST, id DESC`); a page is
the non-null part (row comparison against the cursor) followed, via UNION ALL, by the null part
ordered by id, so both parts are index range scans. The cursor holds [phase, key, id], phase 1
meaning "inside the null part".

`total`: kept counters (ideas.status_counts) when the only filter is `status`; otherwise an exact
count bounded at COUNT_CAP rows, and above that an exact count cached per filter set for
COUNT_TTL seconds.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import aiopg

from libs.api.ideas.requests import ListIdeasQuery
from libs.common import db
from libs.common.errors import ValidationFailed
from libs.common.pagination import decode_cursor, page_tail

from . import prepared
from .render import IDEA_JSON


@dataclass(frozen=True)
class SortCol:
    column: str
    cast: str
    nullable: bool


SORTS = {
    "createdAt": SortCol("created_at", "timestamptz", False),
    "voteCount": SortCol("vote_count", "integer", False),
    "signalCount": SortCol("signal_count", "integer", False),
    "lastActivityAt": SortCol("last_activity_at", "timestamptz", False),
    "riceScore": SortCol("rice_score", "double precision", True),
    "validationScore": SortCol("validation_score", "double precision", True),
    "totalCustomerARR": SortCol("total_customer_arr", "numeric", True),
    "shippedAt": SortCol("shipped_at", "timestamptz", True),
    "decidedAt": SortCol("decided_at", "timestamptz", True),
}
FILTER_KEYS = (
    "status",
    "source",
    "category",
    "destination",
    "roadmapStageId",
    "since",
    "search",
    "updated_since",
    "decided_since",
    "shipped_since",
    "product_id",
    "tag_id",
    "decision_owner",
    "has_customers",
    "min_arr",
)
COUNT_CAP = 1_000
COUNT_TTL = 30.0
_COUNT_CACHE: dict[tuple[Any, ...], tuple[float, int]] = {}
# Full counts in progress: concurrent requests for the same filters wait for the one running
# instead of each scanning the workspace.
_COUNTING: dict[tuple[Any, ...], asyncio.Future[int]] = {}


def like_word(word: str) -> str:
    escaped = word.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def filter_sql(q: ListIdeasQuery) -> tuple[list[str], list[Any]]:
    """WHERE terms (after workspace_id) and their parameters."""
    where: list[str] = []
    params: list[Any] = []

    def add(term: str, *values: Any) -> None:
        where.append(term)
        params.extend(values)

    add("i.status = %s", q.status) if q.status else add("i.status <> 'deleted'")
    simple = (
        ("source", "i.source = %s"),
        ("category", "i.category = %s"),
        ("destination", "i.destination = %s"),
        ("roadmapStageId", "i.roadmap_stage_id = %s"),
        ("since", "i.created_at >= %s"),
        ("updated_since", "i.last_activity_at >= %s"),
        ("decided_since", "i.decided_at >= %s"),
        ("shipped_since", "i.shipped_at >= %s"),
        ("product_id", "i.product_id = %s"),
        ("decision_owner", "i.decision_owner_email = %s"),
        ("min_arr", "i.total_customer_arr >= %s::numeric"),
    )
    for name, term in simple:
        value = getattr(q, name)
        if value is not None:
            add(term, value if name != "decision_owner" else value.lower())
    for word in (q.search or "").split():
        add("i.search_text LIKE %s", like_word(word))
    if q.tag_id is not None:
        add(
            "EXISTS (SELECT 1 FROM ideas.idea_tags t WHERE t.workspace_id = i.workspace_id"
            " AND t.idea_id = i.id AND t.tag_id = %s)",
            q.tag_id,
        )
    if q.has_customers is not None:
        add("i.customer_count > 0" if q.has_customers else "i.customer_count = 0")
    return where, params


def scope(workspace_id: uuid.UUID, q: ListIdeasQuery) -> dict[str, Any]:
    return {
        "ws": str(workspace_id),
        "sort": q.sort,
        "order": q.order,
        "f": {k: getattr(q, k) for k in FILTER_KEYS if getattr(q, k) is not None},
    }


def _part(sort: SortCol, desc: bool, base: str, after: str, limit: int) -> str:
    direction = "DESC" if desc else "ASC"
    nulls = " NULLS LAST" if sort.nullable else ""
    return (
        f"(SELECT i.{sort.column}, i.id, {IDEA_JSON}::text FROM ideas.ideas i"
        f" WHERE {base}{after} ORDER BY i.{sort.column} {direction}{nulls},"
        f" i.id {direction} LIMIT {limit})"
    )


def page_sql(
    q: ListIdeasQuery, workspace_id: uuid.UUID, keyset: list[Any] | None
) -> tuple[str, list[Any]]:
    sort, desc = SORTS[q.sort], q.order == "desc"
    where, fparams = filter_sql(q)
    base = " AND ".join(["i.workspace_id = %s", *where])
    bparams = [workspace_id, *fparams]
    op = "<" if desc else ">"
    n = q.limit + 1
    phase = keyset[0] if keyset else 0
    parts: list[str] = []
    params: list[Any] = []
    if phase == 0:
        after, aparams = "", []
        if keyset:
            after = f" AND (i.{sort.column}, i.id) {op} (%s::{sort.cast}, %s::uuid)"
            aparams = [keyset[1], keyset[2]]
        elif sort.nullable:
            after = f" AND i.{sort.column} IS NOT NULL"
        parts.append(_part(sort, desc, base, after, n))
        params += [*bparams, *aparams]
    if sort.nullable:
        after = f" AND i.{sort.column} IS NULL"
        aparams = []
        if phase == 1:
            after += f" AND i.id {op} %s::uuid"
            aparams = [keyset[2]]  # type: ignore[index]
        parts.append(_part(sort, desc, base, after, n))
        params += [*bparams, *aparams]
    if len(parts) == 1:
        return parts[0], params
    return " UNION ALL ".join(parts) + f" LIMIT {n}", params


def _key(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


async def list_page(
    cur: aiopg.Cursor, secret: tuple[str, ...], workspace_id: uuid.UUID, q: ListIdeasQuery
) -> tuple[list[str], str | None, bool]:
    sc = scope(workspace_id, q)
    keyset = decode_cursor(secret, q.cursor, sc) if q.cursor else None
    if keyset is not None and (len(keyset) != 3 or keyset[0] not in (0, 1)):
        raise ValidationFailed("cursor is not valid", field="cursor")
    sql, params = page_sql(q, workspace_id, keyset)
    if q.search:
        await cur.execute(sql, params)  # the best plan depends on the words
    else:
        await prepared.execute(cur, sql, params)
    rows, cursor, has_more = page_tail(
        await cur.fetchall(),
        q.limit,
        secret,
        sc,
        lambda r: [0 if r[0] is not None else 1, _key(r[0]), str(r[1])],
    )
    return [r[2] for r in rows], cursor, has_more


async def total(cur: aiopg.Cursor, workspace_id: uuid.UUID, q: ListIdeasQuery) -> int:
    if all(getattr(q, k) is None for k in FILTER_KEYS if k != "status"):
        return await status_total(cur, workspace_id, q.status)
    # A count known to be over the bound is served from the cache while it is fresh.
    key = (str(workspace_id), tuple(sorted(scope(workspace_id, q)["f"].items(), key=str)))
    hit = _COUNT_CACHE.get(key)
    if hit is not None and hit[0] > time.monotonic():
        return hit[1]
    where, params = filter_sql(q)
    base = " AND ".join(["i.workspace_id = %s", *where])
    n = int(
        await db.fetchval(
            cur,
            f"SELECT count(*) FROM (SELECT 1 FROM ideas.ideas i WHERE {base}"
            f" LIMIT {COUNT_CAP + 1}) s",
            [workspace_id, *params],
        )
    )
    if n <= COUNT_CAP:
        return n
    running = _COUNTING.get(key)
    if running is not None:
        try:
            return await asyncio.shield(running)
        except Exception:  # the one counting failed: count here instead
            pass
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    _COUNTING[key] = done
    try:
        n = int(
            await db.fetchval(
                cur, f"SELECT count(*) FROM ideas.ideas i WHERE {base}", [workspace_id, *params]
            )
        )
    except BaseException as err:
        done.set_exception(RuntimeError(f"count failed: {err!r}"))
        done.exception()  # retrieved here; waiters see it too
        raise
    finally:
        _COUNTING.pop(key, None)
    done.set_result(n)
    if len(_COUNT_CACHE) > 10_000:
        _COUNT_CACHE.clear()  # bounded memory; entries are only 30 s worth anyway
    _COUNT_CACHE[key] = (time.monotonic() + COUNT_TTL, n)
    return n


async def status_total(cur: aiopg.Cursor, workspace_id: uuid.UUID, status: str | None) -> int:
    if status is None:
        sql = (
            "SELECT coalesce(sum(n), 0) FROM ideas.status_counts"
            " WHERE workspace_id = %s AND status <> 'deleted'"
        )
        await prepared.execute(cur, sql, (workspace_id,))
    else:
        sql = (
            "SELECT coalesce(sum(n), 0) FROM ideas.status_counts"
            " WHERE workspace_id = %s AND status = %s"
        )
        await prepared.execute(cur, sql, (workspace_id, status))
    return int((await cur.fetchone())[0])
