"""Customers benchmark: list with search, link throughput, and ARR-to-idea propagation time.

Starts the whole system on free ports with a database of its own, seeds one workspace, then
measures through the gateway (127.0.0.1 only, bounded in count and time):
- `GET /customers?search=...` over 20,000 customers, a few concurrent clients;
- `POST /ideas/{id}/customers` throughput;
- from an ARR `PATCH` to the linked idea's `totalCustomerARR` showing the new sum (p50/p99
  over 1,000 updates).
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import psycopg2
import psycopg2.extras

from bench.common import Client, new_workspace, pct_ms, running_system, timed_loop, write_results
from tests.support.processes import System

RESULTS = Path(__file__).parent / "results"
CUSTOMERS = 20_000
WORDS = [
    "acme",
    "globex",
    "initech",
    "umbrella",
    "hooli",
    "stark",
    "wayne",
    "wonka",
    "tyrell",
    "cyberdyne",
    "soylent",
    "aperture",
    "vandelay",
    "dunder",
    "pied",
    "piper",
]


def seed_customers(dsn: str, workspace_id: str) -> None:
    """Bulk rows straight into the customers table (the API path is measured separately)."""
    rnd = random.Random(7)
    rows = []
    for n in range(CUSTOMERS):
        a, b = rnd.choice(WORDS), rnd.choice(WORDS)
        rows.append(
            (
                uuid.uuid4(),
                workspace_id,
                f"{a.title()} {b.title()} {n}",
                f"buyer{n}@{a}{b}.com",
                f"{a}{b}.com",
                rnd.randint(0, 500_000),
                "api",
            )
        )
    conn = psycopg2.connect(dsn)
    with conn, conn.cursor() as cur:
        psycopg2.extras.execute_values(
            cur,
            "INSERT INTO customers.customers (id, workspace_id, name, email, domain, arr,"
            " source) VALUES %s",
            rows,
            page_size=2000,
        )
        cur.execute("ANALYZE customers.customers")
    conn.close()


async def bench_search(c: Client) -> dict[str, Any]:
    async def one(i: int) -> None:
        await c.call(
            "GET", "/api/v1/customers", params={"search": WORDS[i % len(WORDS)][:5], "limit": "25"}
        )

    await one(0)  # warm up
    return await timed_loop(one, clients=8, seconds=8, cap=20_000)


async def bench_links(c: Client, ideas: list[str], customers: list[str]) -> dict[str, Any]:
    pairs = [(i, cu) for i in ideas for cu in customers]

    async def one(n: int) -> None:
        idea, cust = pairs[n]
        await c.call("POST", f"/api/v1/ideas/{idea}/customers", json={"customerId": cust})

    return await timed_loop(one, clients=8, seconds=8, cap=len(pairs))


async def bench_propagation(c: Client, updates: int = 1000) -> dict[str, Any]:
    """PATCH a customer's ARR, then read the linked idea until its total shows the change."""
    idea = (await c.call("POST", "/api/v1/ideas", json={"title": "ARR probe"}))["data"]["id"]
    cust = (await c.call("POST", "/api/v1/customers", json={"name": "Probe", "arr": 0}))["data"][
        "id"
    ]
    await c.call("POST", f"/api/v1/ideas/{idea}/customers", json={"customerId": cust})
    samples: list[float] = []
    deadline = time.perf_counter() + 240
    for n in range(1, updates + 1):
        if time.perf_counter() > deadline:
            break
        t0 = time.perf_counter()
        await c.call("PATCH", f"/api/v1/customers/{cust}", json={"arr": n})
        while True:
            got = (await c.call("GET", f"/api/v1/ideas/{idea}"))["data"]["totalCustomerARR"]
            if got == n:
                break
            if time.perf_counter() - t0 > 5:
                raise RuntimeError(f"update {n} not visible after 5 s (saw {got})")
        samples.append(time.perf_counter() - t0)
    return {
        "updates": len(samples),
        "p50_ms": pct_ms(samples, 0.5),
        "p99_ms": pct_ms(samples, 0.99),
        "max_ms": round(max(samples) * 1000, 2),
    }


async def run(system: System, key: str, ws_id: str) -> dict[str, Any]:
    seed_customers(system.database_url, ws_id)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=32)) as session:
        c = Client(session, system.base_url, key, ok=(200,))
        search = await bench_search(c)
        ideas = [
            (await c.call("POST", "/api/v1/ideas", json={"title": f"Idea {n}"}))["data"]["id"]
            for n in range(40)
        ]
        page = await c.call("GET", "/api/v1/customers", params={"limit": "100"})
        links = await bench_links(c, ideas, [x["id"] for x in page["data"]])
        propagation = await bench_propagation(c)
    return {
        "customers_list_search": search,
        "link_create": links,
        "arr_to_idea_total": propagation,
        "seeded_customers": CUSTOMERS,
        # Other work on the machine skews every figure; the 1-minute load says how much.
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def markdown(results: dict[str, Any]) -> str:
    s, li, p = (
        results["customers_list_search"],
        results["link_create"],
        results["arr_to_idea_total"],
    )
    md = [
        "# Customers benchmark",
        "",
        f"One workspace, {results['seeded_customers']:,} customers; 2-core machine; through the "
        "gateway on 127.0.0.1, 8 concurrent clients.",
        "",
        "| Measure | Count | Throughput (req/s) | p50 (ms) | p99 (ms) |",
        "|---|---|---|---|---|",
        f"| GET /customers?search= (25 per page, with total) | {s['requests']} | {s['rps']} "
        f"| {s['p50_ms']} | {s['p99_ms']} |",
        f"| POST /ideas/{{id}}/customers | {li['requests']} | {li['rps']} | {li['p50_ms']} "
        f"| {li['p99_ms']} |",
        f"| ARR PATCH -> idea totalCustomerARR visible | {p['updates']} | - | {p['p50_ms']} "
        f"| {p['p99_ms']} (max {p['max_ms']}) |",
        "",
        "The propagation time runs from sending the PATCH to the first GET of the idea that shows "
        "the new total (PATCH, outbox, relay, RabbitMQ, projection, and the polling reads).",
        "",
        f"Load average (1 min) at the end of the run: {results['load_average_1m']} on 2 cores.",
        "",
    ]
    return "\n".join(md)


async def main() -> dict[str, Any]:
    async with running_system() as system:
        ws = new_workspace(system)
        results = await run(system, ws["key"], ws["id"])
    write_results("customers", results, markdown(results))
    print(json.dumps(results, indent=2))
    return results
