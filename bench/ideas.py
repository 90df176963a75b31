"""Ideas benchmark on a workspace seeded with 1,000,000 ideas (`BENCH_IDEAS` overrides).

Starts the whole system on free ports with a database of its own, seeds one workspace with
`ideasctl seed` (timed), then measures through the gateway (127.0.0.1 only, each loop bounded
in count and time): list (default sort, limit 25, with total), list at page 1,000 via cursors,
list with search, list sorted by voteCount and by totalCustomerARR, get one, create one, vote.
The query plan of every list variant is recorded with the results.
"""

from __future__ import annotations

import base64
import json
import os
import random
from pathlib import Path
from typing import Any

import aiohttp
import psycopg2

from bench.common import (
    Client,
    new_workspace,
    running_system,
    seed_ideas,
    table,
    timed_loop,
    timing_rows,
    write_results,
)
from libs.api.ideas.requests import ListIdeasQuery
from services.ideas.listing import page_sql

RESULTS = Path(__file__).parent / "results"
IDEAS = int(os.environ.get("BENCH_IDEAS", "1000000"))
CUSTOMERS = int(os.environ.get("BENCH_CUSTOMERS", "20000"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "8"))
CLIENTS = 4


async def loop(fn: Any, cap: int = 20_000) -> dict[str, Any]:
    return await timed_loop(fn, CLIENTS, SECONDS, cap)


WORDS = ["export", "dark mode", "slack", "sso", "mobile app", "audit", "calendar", "jira"]


def explain(dsn: str, ws: str, params: dict[str, Any], keyset: list[Any] | None = None) -> str:
    sql, args = page_sql(ListIdeasQuery.model_validate(params), ws, keyset)  # type: ignore[arg-type]
    conn = psycopg2.connect(dsn, options="-c timezone=UTC")
    with conn, conn.cursor() as cur:
        cur.execute("EXPLAIN (ANALYZE, COSTS OFF) " + sql, args)
        plan = "\n".join(r[0] for r in cur.fetchall())
    conn.close()
    return plan


async def deep_cursor(c: Client, pages: int) -> tuple[str, list[Any]]:
    """Walk `pages` pages of the default list; return the cursor of the last page reached."""
    cursor = None
    for _ in range(pages - 1):
        body = await c.call(
            "GET", "/api/v1/ideas", params={"limit": "25", **({"cursor": cursor} if cursor else {})}
        )
        cursor = body["pagination"]["nextCursor"]
    payload = cursor.split(".")[0]
    values = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["v"]
    return cursor, values


async def measure(c: Client, ids: list[str], dsn: str, ws: str) -> dict[str, Any]:
    rnd = random.Random(3)
    out: dict[str, Any] = {}
    plans: dict[str, str] = {}
    variants = {
        "list_default": {},
        "list_search": None,
        "list_sort_voteCount": {"sort": "voteCount"},
        "list_sort_totalCustomerARR": {"sort": "totalCustomerARR"},
    }
    for name, params in variants.items():

        async def one(i: int, params: Any = params) -> None:
            p = params if params is not None else {"search": WORDS[i % len(WORDS)]}
            await c.call("GET", "/api/v1/ideas", params={"limit": "25", **p})

        await one(0)
        out[name] = await loop(one)
        plans[name] = explain(dsn, ws, params if params is not None else {"search": "export"})
    cursor, keyset = await deep_cursor(c, 1000)

    async def deep(i: int) -> None:
        await c.call("GET", "/api/v1/ideas", params={"limit": "25", "cursor": cursor})

    out["list_page_1000"] = await loop(deep)
    plans["list_page_1000"] = explain(dsn, ws, {}, keyset)

    async def get(i: int) -> None:
        await c.call("GET", f"/api/v1/ideas/{ids[rnd.randrange(len(ids))]}")

    out["get_one"] = await loop(get)

    async def create(i: int) -> None:
        await c.call("POST", "/api/v1/ideas", json={"title": f"Bench idea {i}"})

    out["create_one"] = await loop(create, cap=5000)

    async def vote(i: int) -> None:
        await c.call(
            "POST",
            f"/api/v1/ideas/{ids[rnd.randrange(len(ids))]}/vote",
            json={"voter": f"bench-{i}"},
        )

    out["vote"] = await loop(vote, cap=5000)
    p1, p1000 = out["list_default"]["p50_ms"], out["list_page_1000"]["p50_ms"]
    out["page_1000_vs_page_1"] = round(p1000 / p1, 3) if p1 else None
    return {"results": out, "plans": plans}


def markdown(results: dict[str, Any]) -> str:
    r = results["results"]
    md = [
        "# Ideas benchmark",
        "",
        f"One workspace seeded with {results['seeded']['ideas']:,} ideas and "
        f"{results['seeded']['customers']:,} customers by `ideasctl seed` in "
        f"{results['seed_seconds']} s; 2-core machine; through the gateway on 127.0.0.1, "
        f"{CLIENTS} concurrent clients, {SECONDS:.0f} s per measure.",
        "",
        *table(
            ["Measure", "Requests", "Throughput (req/s)", "p50 (ms)", "p99 (ms)"], timing_rows(r)
        ),
        "",
        f"Page 1,000 p50 / page 1 p50: {r['page_1000_vs_page_1']}",
        "",
        f"Load average (1 min) at the end: {results['load_average_1m']} on 2 cores.",
        "",
        "## Query plans",
        "",
    ]
    for name, plan in results["plans"].items():
        md += [f"### {name}", "", "```", plan, "```", ""]
    return "\n".join(md)


async def main() -> dict[str, Any]:
    async with running_system() as system:
        url = system.database_url
        ws = new_workspace(system)
        seeded, seed_seconds, ids = seed_ideas(system, ws["id"], IDEAS, CUSTOMERS, 20000)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=32)) as session:
            measured = await measure(
                Client(session, system.base_url, ws["key"]), ids, url, ws["id"]
            )
    results = {
        "seeded": seeded,
        "seed_seconds": seed_seconds,
        **measured,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    write_results("ideas", results, markdown(results))
    print(json.dumps(results["results"], indent=2))
    return results
