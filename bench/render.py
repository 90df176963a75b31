"""Rendering benchmark: what a list page, an idea's detail and an export cost, per request.

On a 2-core machine shared with other runs, wall-clock latencies swing by a factor of two with
the load of others. The CPU time that the run's own processes spend per request barely moves
with it, and it is what the rendering of a body changes. So this bench reports both, for calls
made one at a time through the gateway (no queueing): the p50 latency, and the CPU
milliseconds per request of the gateway, of the service that answers (ideas or analytics) and
of PostgreSQL (its postmaster and backends; meaningful when the database server serves only
this run, e.g. the private one `scripts/devenv.py` starts).

Seeds one workspace with `BENCH_IDEAS` ideas (default 50,000) by `ideasctl seed`, then measures
`GET /ideas?limit=25`, `GET /ideas?limit=100`, `GET /ideas/{id}` and the ideas export of 10,000
records in JSON and CSV. `BENCH_ACCEPT_ENCODING` sets what the client accepts (default
aiohttp's `gzip, deflate`). Writes bench/results/render.json and .md.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

import aiohttp
import psycopg2

from bench.common import (
    ACCEPT_ENCODING,
    client_headers,
    cpu_seconds,
    new_workspace,
    proc_stat,
    running_system,
    seed_ideas,
    write_results,
)

IDEAS = int(os.environ.get("BENCH_IDEAS", "50000"))
MEASURES = {  # name: (path, params, service, calls)
    "list_25": ("/api/v1/ideas", {"limit": "25"}, "ideas", 400),
    "list_100": ("/api/v1/ideas", {"limit": "100"}, "ideas", 200),
    "detail": ("/api/v1/ideas/{id}", {}, "ideas", 400),
    "export_json_10k": (
        "/api/v1/export/ideas",
        {"format": "json", "limit": "10000"},
        "analytics",
        6,
    ),
    "export_csv_10k": ("/api/v1/export/ideas", {"format": "csv", "limit": "10000"}, "analytics", 6),
}


def postgres_pids(dsn: str) -> list[int]:
    """The postmaster of `dsn`'s server and its children (the backends)."""
    conn = psycopg2.connect(dsn)
    with conn.cursor() as cur:
        cur.execute("SHOW data_directory")
        data = cur.fetchone()[0]
    conn.close()
    try:
        master = int(Path(data, "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []  # a server this user cannot see into: no database figure
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (found := proc_stat(int(entry.name))) and found[1] == master:
            children.append(int(entry.name))
    return [master, *children]


async def measure(
    session: aiohttp.ClientSession, base: str, ids: list[str], pids: dict[str, list[int]], dsn: str
) -> dict[str, Any]:
    rnd = random.Random(5)
    out: dict[str, Any] = {}
    for name, (path, params, service, calls) in MEASURES.items():
        # bound now: each call runs inside this iteration, but the loop moves the names on
        async def call(path: str = path, params: Any = params) -> int:
            url = base + path.replace("{id}", ids[rnd.randrange(len(ids))])
            async with session.get(url, params=params) as r:
                body = await r.read()
                assert r.status == 200, body[:200]
                return len(body)

        for _ in range(max(2, calls // 20)):  # warm-up: caches, prepared statements
            await call()
        groups = {
            "gateway": pids["gateway"],
            service: pids[service],
            "postgres": postgres_pids(dsn),
        }
        before = {k: cpu_seconds(v) * 1000 for k, v in groups.items()}
        latencies, size = [], 0
        for _ in range(calls):
            t0 = time.perf_counter()
            size = await call()
            latencies.append((time.perf_counter() - t0) * 1000)
        cpu = {k: round((cpu_seconds(v) * 1000 - before[k]) / calls, 3) for k, v in groups.items()}
        out[name] = {
            "calls": calls,
            "p50_ms": round(statistics.median(latencies), 2),
            "cpu_ms_per_call": cpu,
            "cpu_ms_total": round(sum(cpu.values()), 3),
            "body_bytes": size,
        }
        print(name, out[name], flush=True)
    return out


async def main() -> dict[str, Any]:
    async with running_system(env={"EXPORT_PER_HOUR": "1000", "LOG_LEVEL": "warning"}) as system:
        ws = new_workspace(system)
        _, _, ids = seed_ideas(system, ws["id"], IDEAS, IDEAS // 50, 2000)
        pids = {svc: [p.pid for p in procs] for svc, procs in system.procs.items()}
        async with aiohttp.ClientSession(headers=client_headers(ws["key"])) as session:
            measured = await measure(session, system.base_url, ids, pids, system.database_url)
    result = {
        "ideas": IDEAS,
        "accept_encoding": ACCEPT_ENCODING or "gzip, deflate",
        "results": measured,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    write_results("render", result, markdown(result))
    return result


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# Rendering cost on {result['ideas']:,} ideas",
        "",
        f"One call at a time through the gateway; client Accept-Encoding: "
        f"{result['accept_encoding']}; load average {result['load_average_1m']} at the end.",
        "",
        "| Measure | p50 ms | CPU ms/call: gateway | service | PostgreSQL | total | body bytes |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, v in result["results"].items():
        cpu = v["cpu_ms_per_call"]
        service = next(k for k in cpu if k not in ("gateway", "postgres"))
        lines.append(
            f"| {name} | {v['p50_ms']} | {cpu['gateway']} | {cpu[service]} | "
            f"{cpu['postgres']} | {v['cpu_ms_total']} | {v['body_bytes']} |"
        )
    return "\n".join(lines)
