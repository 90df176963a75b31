"""Comments benchmark: `GET /ideas/{id}/comments` at page 1 and at page 1,000 on an idea with
10,000 comments (`BENCH_COMMENTS` overrides), `limit=10` (page 1,000 holds the last ten).

Starts the whole system on free ports with a database of its own, writes the idea's comments to
the table as the API stores them (a fifth internal, a third replies, one a millisecond apart),
walks the pages through the gateway to the deep cursor, then measures each page, with and
without the `internal` filter, through the gateway (4 clients, each loop bounded in count and
time). The query plan of every measured page is recorded with the results.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import psycopg2
import psycopg2.extras

from bench.common import (
    Client,
    new_workspace,
    running_system,
    table,
    timed_loop,
    timing_rows,
    write_results,
)
from services.ideas import comments

COMMENTS = int(os.environ.get("BENCH_COMMENTS", "10000"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "8"))
LIMIT = 10
CLIENTS = 4


def write_comments(dsn: str, ws: str, idea_id: str, key_id: str, n: int) -> None:
    start = datetime.now(UTC) - timedelta(milliseconds=n + 1000)
    rows, public, parent = [], 0, None
    for i in range(n):
        internal = i % 5 == 4
        reply = parent is not None and i % 3 == 2
        comment_id = uuid.uuid4()
        rows.append(
            (
                ws,
                comment_id,
                idea_id,
                parent if reply else None,
                f"Comment {i}: when will this ship? Our team needs it for the night shift.",
                internal,
                "key",
                key_id,
                "API key",
                start + timedelta(milliseconds=i),
            )
        )
        if not reply:
            parent = comment_id
        public += not internal
    conn = psycopg2.connect(dsn)
    try:
        with conn, conn.cursor() as cur:
            psycopg2.extras.register_uuid()
            psycopg2.extras.execute_values(
                cur,
                "INSERT INTO ideas.comments (workspace_id, id, idea_id, parent_id, body, internal,"
                " author_type, author_id, author_name, created_at) VALUES %s",
                rows,
                page_size=1000,
            )
            cur.execute(
                "UPDATE ideas.ideas SET comment_count = %s WHERE workspace_id = %s AND id = %s",
                (public, ws, idea_id),
            )
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE ideas.comments")
    finally:
        conn.close()


def explain(dsn: str, sql: str, params: tuple[Any, ...]) -> str:
    conn = psycopg2.connect(dsn, options="-c timezone=UTC -c plan_cache_mode=force_generic_plan")
    try:
        with conn, conn.cursor() as cur:
            psycopg2.extras.register_uuid()
            cur.execute("EXPLAIN (ANALYZE, COSTS OFF) " + sql, params)
            return "\n".join(r[0] for r in cur.fetchall())
    finally:
        conn.close()


async def deep_cursor(c: Client, path: str, pages: int, **params: str) -> tuple[str, list[Any]]:
    """The cursor of page `pages`, walked from page 1, and its keyset."""
    cursor: str | None = None
    body: dict[str, Any] = {}
    for _ in range(pages - 1):
        q = {"limit": str(LIMIT), **params, **({"cursor": cursor} if cursor else {})}
        body = await c.call("GET", path, params=q)
        cursor = body["pagination"]["nextCursor"]
    assert cursor is not None
    return cursor, [body["data"][-1]["createdAt"], body["data"][-1]["id"]]


async def measure_pages(c: Client, path: str, variants: dict[str, dict[str, str]]) -> Any:
    out: dict[str, Any] = {}
    for name, params in variants.items():
        q = {"limit": str(LIMIT), **params}
        first = await c.call("GET", path, params=q)
        assert len(first["data"]) == LIMIT, (name, len(first["data"]))

        async def one(i: int, q: dict[str, str] = q) -> None:
            await c.call("GET", path, params=q)

        out[name] = await timed_loop(one, CLIENTS, SECONDS, 20_000)
    return out


async def main() -> dict[str, Any]:
    async with running_system() as system:
        ws = new_workspace(system)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=32)) as session:
            c = Client(session, system.base_url, ws["key"])
            idea = (await c.call("POST", "/api/v1/ideas", json={"title": "Busy idea"}))["data"]
            write_comments(system.database_url, ws["id"], idea["id"], ws["key_id"], COMMENTS)
            path = f"/api/v1/ideas/{idea['id']}/comments"
            public_pages = -(-sum(1 for i in range(COMMENTS) if i % 5 != 4) // LIMIT)
            deep = min(1000, -(-COMMENTS // LIMIT))
            deep_public = min(1000, public_pages)
            cursor, keyset = await deep_cursor(c, path, deep)
            cursor_public, keyset_public = await deep_cursor(c, path, deep_public, internal="false")
            out = await measure_pages(
                c,
                path,
                {
                    "page_1": {},
                    f"page_{deep}": {"cursor": cursor},
                    "page_1_internal_false": {"internal": "false"},
                    f"page_{deep_public}_internal_false": {
                        "internal": "false",
                        "cursor": cursor_public,
                    },
                },
            )
        ids = (ws["id"], idea["id"])
        start = comments.START
        plans = {
            "page_1": explain(system.database_url, comments.PAGE_ALL, (*ids, *start, LIMIT + 1)),
            f"page_{deep}": explain(
                system.database_url, comments.PAGE_ALL, (*ids, *keyset, LIMIT + 1)
            ),
            "page_1_internal_false": explain(
                system.database_url, comments.PAGE_INTERNAL, (*ids, False, *start, LIMIT + 1)
            ),
            f"page_{deep_public}_internal_false": explain(
                system.database_url,
                comments.PAGE_INTERNAL,
                (*ids, False, *keyset_public, LIMIT + 1),
            ),
        }
    p1, pdeep = out["page_1"]["p50_ms"], out[f"page_{deep}"]["p50_ms"]
    results = {
        "comments": COMMENTS,
        "limit": LIMIT,
        "results": out,
        "deep_vs_first_p50": round(pdeep / p1, 3) if p1 else None,
        "plans": plans,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    write_results("comments", results, markdown(results))
    print(json.dumps(results["results"], indent=2))
    return results


def markdown(results: dict[str, Any]) -> str:
    deep = list(results["results"])[1].removeprefix("page_")  # the deep page's measure
    md = [
        "# Comments benchmark",
        "",
        f"`GET /ideas/{{id}}/comments?limit={LIMIT}` on one idea with {COMMENTS:,} comments "
        f"(a fifth internal, a third replies); through the gateway on 127.0.0.1, {CLIENTS} "
        f"concurrent clients, {SECONDS:.0f} s per measure; 2-core machine shared with other "
        "work.",
        "",
        *table(
            ["Page", "Requests", "Throughput (req/s)", "p50 (ms)", "p99 (ms)"],
            timing_rows(results["results"]),
        ),
        "",
        f"Page {deep} p50 / page 1 p50: {results['deep_vs_first_p50']}",
        "",
        f"Load average (1 min) at the end: {results['load_average_1m']} on 2 cores.",
        "",
        "## Query plans",
        "",
    ]
    for name, plan in results["plans"].items():
        md += [f"### {name}", "", "```", plan, "```", ""]
    return "\n".join(md)
