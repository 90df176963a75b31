"""One request's cost: GET one idea and the first page of 25 through the gateway, against a bare
reference doing the same reads, both up at once and measured in alternating rounds.

The reference: a bare aiohttp server (`web.run_app`, the default event loop, no middlewares)
answering the same two routes with the same SQL as the ideas service (the same prepared
statements, so PostgreSQL does the same work), behind a bare aiohttp proxy that forwards every
request to it. What the ratio measures is therefore the house's HTTP stack (authentication, rate
windows, logging, metrics, the internal hop), not the database.

On a workspace seeded with `BENCH_IDEAS` ideas (default 100,000): wrk flat out with
`BENCH_CONNECTIONS` connections (64) and random ids, `BENCH_ROUNDS` rounds (5) of A B (the
reference, then the system) per call; the ratio is the median of the round-pair ratios. Then a
paced load at half the system's measured capacity (latency from each request's scheduled send
time). CPU seconds per request of the two HTTP processes of each side come from /proc.

`BENCH_BASELINE=<git ref>` also runs that commit's code on the same database, in the same run,
against the same reference (which stays up): before and after ratios from one run.
`python -m bench reference`; results in bench/results/reference.json and reference.md.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench.common import (
    ROOT,
    cpu_seconds,
    new_workspace,
    paced_run,
    seed_ideas,
    source_tree,
    start_system,
    stop_system,
    wait_http,
    write_results,
    wrk_run,
)
from tests.support.processes import LOG_DIR, System, create_database, drop_database, free_port

IDEAS = int(os.environ.get("BENCH_IDEAS", "100000"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "64"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
WRK_SECONDS = int(os.environ.get("BENCH_WRK_SECONDS", "5"))
PACED_SECONDS = float(os.environ.get("BENCH_PACED_SECONDS", "8"))
SAMPLE_IDS = 5000
AIM = {"detail": 0.85, "list": 0.8, "paced_p99_ms": 50}


def calls(ids: list[str]) -> dict[str, list[str]]:
    return {"detail": [f"/api/v1/ideas/{i}" for i in ids], "list": ["/api/v1/ideas?limit=25"]}


def measured(
    base: str, paths: list[str], headers: dict[str, str], pids: list[int], seconds: int
) -> dict[str, Any]:
    before = cpu_seconds(pids)
    r = wrk_run(base, headers, duration_s=seconds, connections=CONNECTIONS, paths=paths)
    r["cpu_us_per_request"] = round((cpu_seconds(pids) - before) / max(1, r["requests"]) * 1e6)
    return r


def compare(
    system: System, sys_pids: list[int], ref: str, ref_pids: list[int], key: str, ids: list[str]
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    out: dict[str, Any] = {}
    for name, paths in calls(ids).items():
        for base, pids in ((ref, ref_pids), (system.base_url, sys_pids)):  # warm up
            measured(base, paths, headers, pids, 2)
        rounds = []
        for _ in range(ROUNDS):
            a = measured(ref, paths, headers, ref_pids, WRK_SECONDS)
            b = measured(system.base_url, paths, headers, sys_pids, WRK_SECONDS)
            rounds.append(
                {
                    "reference": a,
                    "system": b,
                    "ratio": round(b["rps"] / a["rps"], 3),
                    "cpu_ratio": round(
                        a["cpu_us_per_request"] / max(1, b["cpu_us_per_request"]), 3
                    ),
                }
            )
        mid = sorted(rounds, key=lambda r: r["ratio"])[len(rounds) // 2]
        cpu_ratio = sorted(r["cpu_ratio"] for r in rounds)[len(rounds) // 2]
        rate = round(mid["system"]["rps"] / 2)
        paced = [
            paced_run(
                system.base_url + paths[0],
                headers,
                rate=rate,
                duration_s=PACED_SECONDS,
                paths=[system.base_url + p for p in paths[:500]],
            )
            for _ in range(3)
        ]
        out[name] = {
            "ratio": mid["ratio"],
            "cpu_ratio": cpu_ratio,
            "rounds": rounds,
            "system_rps": mid["system"]["rps"],
            "reference_rps": mid["reference"]["rps"],
            "cpu_us": {
                "system": mid["system"]["cpu_us_per_request"],
                "reference": mid["reference"]["cpu_us_per_request"],
            },
            "paced_rate_rps": rate,
            "paced": sorted(paced, key=lambda p: p["p99_ms"])[len(paced) // 2],
        }
    return out


def pids_of(system: System) -> list[int]:
    return [system.procs["gateway"][0].pid, system.procs["ideas"][0].pid]


def start_reference(
    database_url: str, workspace_id: str
) -> tuple[str, list[subprocess.Popen[bytes]]]:
    server_port, proxy_port = free_port(), free_port()
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = open(LOG_DIR / "bench-reference.log", "ab")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.reference",
                "server",
                str(server_port),
                database_url,
                workspace_id,
            ],
            cwd=ROOT,
            stdout=log,
            stderr=log,
        ),
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.reference",
                "proxy",
                str(proxy_port),
                f"http://127.0.0.1:{server_port}",
            ],
            cwd=ROOT,
            stdout=log,
            stderr=log,
        ),
    ]
    log.close()
    return f"http://127.0.0.1:{proxy_port}", procs


async def main() -> dict[str, Any]:
    baseline = os.environ.get("BENCH_BASELINE")
    url = await asyncio.to_thread(create_database)
    ref_procs: list[subprocess.Popen[bytes]] = []
    result: dict[str, Any] = {}
    try:
        seeder = await start_system(url, ROOT)
        try:
            ws = new_workspace(seeder)
            _, seed_s, ids = await asyncio.to_thread(
                seed_ideas, seeder, ws["id"], IDEAS, 1000, SAMPLE_IDS
            )
        finally:
            await stop_system(seeder)
        random.shuffle(ids)
        ref, ref_procs = start_reference(url, ws["id"])
        await wait_http(ref + "/api/v1/ideas?limit=25")
        ref_pids = [p.pid for p in ref_procs]
        runs: list[tuple[str, Path]] = [("after", ROOT)]
        tmp = None
        if baseline:
            tmp = tempfile.TemporaryDirectory()
            runs.insert(0, ("before", source_tree(baseline, tmp.name)))
        for name, root in runs:
            system = await start_system(url, root)
            try:
                result[name] = await asyncio.to_thread(
                    compare, system, pids_of(system), ref, ref_pids, ws["key"], ids
                )
            finally:
                await stop_system(system)
        if tmp is not None:
            tmp.cleanup()
    finally:
        for p in ref_procs:
            p.terminate()
            p.wait(timeout=15)
        await asyncio.to_thread(drop_database, url)
    result.update(
        {
            "machine": machine(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": ("BENCH_BASELINE=" + baseline + " " if baseline else "")
            + "flock /tmp/bench.lock .venv/bin/python -m bench reference",
            "baseline": baseline,
            "ideas": IDEAS,
            "seed_s": seed_s,
            "connections": CONNECTIONS,
            "rounds": ROUNDS,
            "wrk_seconds": WRK_SECONDS,
            "aim": AIM,
            "load_average_end": os.getloadavg(),
        }
    )
    write_results("reference", result, markdown(result))
    print(markdown(result))
    return result


def machine() -> dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), ""
            )
    except OSError:
        pass
    mem_kb = 0
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gb": round(mem_kb / 2**20, 1),
        "python": sys.version.split()[0],
    }


def markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    lines = [
        "# One request against a bare reference\n",
        f"`{r['command']}` on {r['date']}; {m['cores']} cores ({m['cpu']}), "
        f"{m['memory_gb']} GB, Python {m['python']}, shared with other work (load average at "
        f"the end: {', '.join(f'{v:.1f}' for v in r['load_average_end'])}).\n",
        f"{r['ideas']:,} ideas, wrk with {r['connections']} connections, random ids; "
        f"{r['rounds']} rounds of reference then system, {r['wrk_seconds']} s each; ratio = "
        "median of the round-pair ratios. Paced: half the system's capacity, median of 3 runs. "
        "CPU: user+system of the gateway and ideas processes (system) or of the proxy and "
        "server (reference), per request, in the median-ratio round; CPU ratio = median over "
        "the rounds of reference CPU per request / system CPU per request (the same ratio as "
        "throughput on an otherwise idle machine, and far less moved by other work on a shared "
        "one).\n",
        "| code | call | ratio (aim) | CPU ratio | system rps | reference rps | CPU us/req "
        "system / reference | paced rps | paced p50 / p99 ms | paced errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in ("before", "after"):
        if run not in r:
            continue
        for call, c in r[run].items():
            p = c["paced"]
            lines.append(
                f"| {run} | {call} | **{c['ratio']:.2f}** ({AIM[call]}) | {c['cpu_ratio']:.2f} "
                f"| {c['system_rps']:.0f} "
                f"| {c['reference_rps']:.0f} | {c['cpu_us']['system']} / {c['cpu_us']['reference']} "
                f"| {c['paced_rate_rps']} | {p['p50_ms']:.1f} / {p['p99_ms']:.1f} | {p['errors']} |"
            )
    for run in ("before", "after"):
        for call, c in r.get(run, {}).items():
            ratios = ", ".join(f"{x['ratio']:.2f}" for x in c["rounds"])
            cpu = ", ".join(f"{x['cpu_ratio']:.2f}" for x in c["rounds"])
            lines.append(f"\n{run} {call}, every round's ratio: {ratios}; CPU ratio: {cpu}")
    return "\n".join(lines) + "\n"


# ---- the reference: a bare server and a bare proxy ------------------------------------------


def _server(port: int, dsn: str, workspace_id: str) -> None:
    import uuid

    from aiohttp import web

    from libs.api.ideas.requests import ListIdeasQuery
    from libs.common import db
    from services.ideas import listing, prepared
    from services.ideas.render import DETAIL_JSON

    ws = uuid.UUID(workspace_id)
    detail_sql = (
        f"SELECT ({DETAIL_JSON})::text FROM ideas.ideas i WHERE i.workspace_id = %s AND i.id = %s"
    )
    first_page = ListIdeasQuery.model_validate({"limit": 25})

    async def pool_ctx(app: web.Application) -> Any:
        app["pool"] = await db.create_pool(dsn, minsize=1, maxsize=10)  # as every process's
        yield
        app["pool"].close()
        await app["pool"].wait_closed()

    async def one(request: web.Request) -> web.Response:
        async with request.app["pool"].acquire() as conn, conn.cursor() as cur:
            await prepared.execute(cur, detail_sql, (ws, uuid.UUID(request.match_info["id"])))
            row = await cur.fetchone()
        if row is None:
            return web.Response(status=404)
        return web.Response(
            body=b'{"data":' + row[0].encode() + b"}", content_type="application/json"
        )

    async def page(request: web.Request) -> web.Response:
        sql, params = listing.page_sql(first_page, ws, None)
        async with request.app["pool"].acquire() as conn, conn.cursor() as cur:
            await prepared.execute(cur, sql, params)
            rows = (await cur.fetchall())[:25]
            total = await listing.status_total(cur, ws, None)
        body = (
            '{"data":['
            + ",".join(r[2] for r in rows)
            + '],"pagination":{"total":'
            + str(total)
            + "}}"
        )
        return web.Response(text=body, content_type="application/json")

    app = web.Application()
    app.cleanup_ctx.append(pool_ctx)
    app.router.add_get("/api/v1/ideas/{id}", one)
    app.router.add_get("/api/v1/ideas", page)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


def _proxy(port: int, upstream: str) -> None:
    from aiohttp import web

    async def session_ctx(app: web.Application) -> Any:
        app["session"] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), auto_decompress=False
        )
        yield
        await app["session"].close()

    async def forward(request: web.Request) -> web.Response:
        headers = {
            k: v
            for k, v in request.headers.items()
            if k.lower() not in ("host", "connection", "content-length")
        }
        async with request.app["session"].request(
            request.method, upstream + request.path_qs, headers=headers
        ) as r:
            body = await r.read()
            return web.Response(
                body=body,
                status=r.status,
                content_type=r.content_type or "application/octet-stream",
            )

    app = web.Application()
    app.cleanup_ctx.append(session_ctx)
    app.router.add_route("*", "/{tail:.*}", forward)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "server":
        _server(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 4 and sys.argv[1] == "proxy":
        _proxy(int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit("usage: python -m bench.reference server PORT DSN WORKSPACE | proxy PORT UPSTREAM")
