"""Analytics benchmark: each report's latency and each export's time and memory on 1,000,000 ideas.

Seeds (once; the database `ims_bench_analytics` is kept between runs) one workspace with
1,000,000 ideas spread over the last 180 days, 1,000,000 signals, 20,000 customers and 100,000
idea links, starts the real processes, then through the gateway:
- every report: 5 warm-up calls, then up to 40 timed calls (at most 20 s each): p50, p99;
- every export (4 kinds x CSV/JSON) of 10,000 records: wall time, and the analytics process's
  peak resident memory over its idle level (the peak is reset through /proc/<pid>/clear_refs);
- what the rollup triggers (ideas migration 0300) cost the writes: idea create, vote, and a
  signal recorded by the automation API, one client, in rounds alternating with the triggers
  on and off (the workspace's rollups are rebuilt afterwards): p50, p99 and the p50 ratio.
Writes bench/results/analytics.json and .md.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

import aiohttp
import psycopg2

from bench.common import client_headers, percentile, write_results
from services.ctl import admin
from services.ctl.migrate import migrate
from services.ctl.seed import set_rollup_triggers
from tests.support.processes import System, delete_queues, url_dsn_for

DB_NAME = "ims_bench_analytics"
IDEAS = 1_000_000
RESULTS = Path(__file__).parent / "results"
REPORTS = {
    "summary": {},
    "ideas-over-time": {"group_by": "status"},
    "decisions": {},
    "funnel": {},
    "signals": {},
    "roadmap": {},
    "revenue-impact": {},
    "categories": {},
}
EXPORTS = ("ideas", "customers", "decisions", "signals")

SEED_SQL = """
SET synchronous_commit = off;
SET maintenance_work_mem = '512MB';
SELECT setseed(0.42);
INSERT INTO ideas.roadmap_stages (workspace_id, id, name, slug, position, is_default)
VALUES (%(ws)s, gen_random_uuid(), 'Now', 'now', 0, true),
       (%(ws)s, gen_random_uuid(), 'Next', 'next', 1, false),
       (%(ws)s, gen_random_uuid(), 'Later', 'later', 2, false);
INSERT INTO ideas.products (workspace_id, id, name)
SELECT %(ws)s, gen_random_uuid(), 'Product ' || n FROM generate_series(1, 10) n;
CREATE TEMP TABLE stage_ids AS
    SELECT row_number() OVER (ORDER BY position) AS k, id FROM ideas.roadmap_stages
     WHERE workspace_id = %(ws)s;
CREATE TEMP TABLE product_ids AS
    SELECT row_number() OVER (ORDER BY name) AS k, id FROM ideas.products
     WHERE workspace_id = %(ws)s;
INSERT INTO ideas.ideas (workspace_id, id, number, title, title_key, status, source, category,
    product_id, roadmap_stage_id, vote_count, signal_count, rice_reach, rice_impact,
    rice_confidence, rice_effort, rice_score, decided_at, closure_category, decision_owner_email,
    decision_owner_name, decision_deadline, shipped_at, created_at, last_activity_at)
SELECT %(ws)s, gen_random_uuid(), n, 'Idea ' || n, 'idea ' || n, st,
       (ARRAY['slack','discord','teams','zendesk','intercom','email','api','chrome'])[1 + (n %% 8)],
       CASE WHEN n %% 10 = 0 THEN NULL ELSE 'category-' || (n %% 20) END,
       (SELECT id FROM product_ids WHERE k = 1 + n %% 10),
       CASE WHEN n %% 3 = 0 THEN NULL ELSE (SELECT id FROM stage_ids WHERE k = 1 + n %% 3) END,
       (n %% 50), (n %% 7),
       CASE WHEN r2 < 0.6 THEN 1 + (n %% 1000) END, CASE WHEN r2 < 0.6 THEN 1 + n %% 3 END,
       CASE WHEN r2 < 0.6 THEN 0.5 END, CASE WHEN r2 < 0.6 THEN 1 + n %% 5 END,
       CASE WHEN r2 < 0.6 THEN (1 + (n %% 1000)) * (1 + n %% 3) * 0.5 / (1 + n %% 5) END,
       CASE WHEN closed THEN created + (now() - created) * r3 END,
       CASE st WHEN 'shipped' THEN 'shipped' WHEN 'rejected' THEN 'rejected_scope'
               WHEN 'archived' THEN 'archived' WHEN 'duplicate' THEN 'duplicate' END,
       'owner' || (n %% 12) || '@example.com', 'Owner ' || (n %% 12),
       CASE WHEN n %% 5 = 0 THEN created + interval '30 days' END,
       CASE WHEN st = 'shipped' THEN created + (now() - created) * r3 END,
       created, created
  FROM (SELECT n, r2, r3, created, st,
               st IN ('shipped', 'rejected', 'archived', 'duplicate') AS closed
          FROM (SELECT n, random() AS r1, random() AS r2, random() AS r3,
                       now() - random() * interval '180 days' AS created
                  FROM generate_series(1, %(ideas)s) n) g,
       LATERAL (SELECT CASE WHEN r1 < 0.05 THEN 'captured' WHEN r1 < 0.30 THEN 'new'
                            WHEN r1 < 0.45 THEN 'under_review' WHEN r1 < 0.55 THEN 'planned'
                            WHEN r1 < 0.62 THEN 'in_progress' WHEN r1 < 0.75 THEN 'shipped'
                            WHEN r1 < 0.88 THEN 'rejected' WHEN r1 < 0.93 THEN 'archived'
                            WHEN r1 < 0.96 THEN 'duplicate' ELSE 'deleted' END AS st) s) x;
INSERT INTO ideas.signals (workspace_id, id, idea_id, platform, similarity, sentiment,
                           sentiment_score, content, detected_at)
SELECT %(ws)s, gen_random_uuid(), i.id,
       (ARRAY['slack','discord','teams','zendesk','intercom'])[1 + g %% 5], 0.8,
       (ARRAY['positive','neutral','negative'])[1 + g %% 3], ((g %% 21) - 10) / 10.0,
       'Signal ' || g, now() - ((g * 7919) %% 180) * interval '1 day' - g * interval '1 ms'
  FROM generate_series(1::bigint, %(ideas)s) g
  JOIN ideas.ideas i ON i.workspace_id = %(ws)s AND i.number = 1 + (g * 7919) %% %(ideas)s;
INSERT INTO customers.customers (id, workspace_id, name, email, arr, mrr, plan, created_at)
SELECT gen_random_uuid(), %(ws)s, 'Customer ' || n, 'c' || n || '@example.com',
       (n %% 100) * 1000, (n %% 100) * 1000 / 12.0, 'pro', now() - n * interval '1 minute'
  FROM generate_series(1, 20000) n;
CREATE TEMP TABLE customer_ids AS
    SELECT row_number() OVER (ORDER BY created_at) AS k, id, arr FROM customers.customers
     WHERE workspace_id = %(ws)s;
INSERT INTO customers.idea_links (workspace_id, idea_id, customer_id)
SELECT %(ws)s, i.id, c.id
  FROM generate_series(1::bigint, 100000) g
  JOIN ideas.ideas i ON i.workspace_id = %(ws)s AND i.number = 1 + (g * 104729) %% %(ideas)s
  JOIN customer_ids c ON c.k = 1 + g %% 20000
ON CONFLICT DO NOTHING;
UPDATE ideas.ideas i SET total_customer_arr = a.arr, customer_count = a.n
  FROM (SELECT l.idea_id, sum(c.arr) AS arr, count(*) AS n FROM customers.idea_links l
          JOIN customer_ids c ON c.id = l.customer_id WHERE l.workspace_id = %(ws)s
         GROUP BY l.idea_id) a
 WHERE i.workspace_id = %(ws)s AND i.id = a.idea_id;
"""


def prepare(url: str) -> tuple[str, str]:
    """Migrate; seed the workspace unless a previous run did; return (workspace id, key)."""
    migrate(url)
    conn = psycopg2.connect(url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id FROM gateway.workspaces WHERE name = 'analytics-bench'")
            row = cur.fetchone()
        if row is None:
            ws = admin.create_workspace(conn, "analytics-bench", "enterprise", 1_000_000)["id"]
            started = time.monotonic()
            with conn, conn.cursor() as cur:
                cur.execute(SEED_SQL, {"ws": ws, "ideas": IDEAS})
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("VACUUM ANALYZE ideas.ideas")
                cur.execute("VACUUM ANALYZE ideas.signals")
                cur.execute("VACUUM ANALYZE customers.customers")
                cur.execute("VACUUM ANALYZE customers.idea_links")
                cur.execute(
                    "VACUUM ANALYZE ideas.idea_months, ideas.signal_days,"
                    " ideas.signal_idea_days, ideas.signal_firsts"
                )
            print(f"seeded {IDEAS} ideas in {time.monotonic() - started:.0f} s", flush=True)
        else:
            ws = str(row[0])
        with conn, conn.cursor() as cur:  # ideas the API creates get numbers after the seeded
            cur.execute(
                """
                INSERT INTO ideas.workspace_state AS s (workspace_id, next_idea_number)
                SELECT %(ws)s, coalesce(max(number), 0) + 1 FROM ideas.ideas
                 WHERE workspace_id = %(ws)s
                ON CONFLICT (workspace_id) DO UPDATE
                SET next_idea_number = greatest(s.next_idea_number, EXCLUDED.next_idea_number)""",
                {"ws": ws},
            )
        key = admin.create_key(conn, ws, "bench", "all", "production")["key"]
    finally:
        conn.close()
    return ws, key


def memory_kb(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0])
    return out


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS


async def time_report(
    session: aiohttp.ClientSession, url: str, params: dict[str, str]
) -> dict[str, Any]:
    for _ in range(5):
        async with session.get(url, params=params) as r:
            assert r.status == 200, await r.text()
            await r.read()
    samples: list[float] = []
    deadline = time.monotonic() + 20
    while len(samples) < 40 and time.monotonic() < deadline:
        t0 = time.perf_counter()
        async with session.get(url, params=params) as r:
            await r.read()
        samples.append((time.perf_counter() - t0) * 1000)
    return {
        "n": len(samples),
        "p50_ms": round(statistics.median(samples), 1),
        "p99_ms": round(percentile(samples, 99), 1),
    }


async def time_export(
    session: aiohttp.ClientSession, url: str, fmt: str, pid: int
) -> dict[str, Any]:
    idle = memory_kb(pid)["VmRSS"]
    reset_peak(pid)
    t0 = time.perf_counter()
    size = records = 0
    async with session.get(url, params={"format": fmt, "limit": "10000"}) as r:
        assert r.status == 200, await r.text()
        async for chunk in r.content.iter_chunked(65536):
            size += len(chunk)
            records += chunk.count(b"\n") if fmt == "csv" else 0
    elapsed = time.perf_counter() - t0
    peak = memory_kb(pid)["VmHWM"]
    return {
        "seconds": round(elapsed, 3),
        "bytes": size,
        "peak_over_idle_mb": round((peak - idle) / 1024, 2),
        "idle_rss_mb": round(idle / 1024, 1),
    }


async def main() -> dict[str, Any]:
    url = url_dsn_for(DB_NAME)
    ws, key = await asyncio.to_thread(prepare, url)
    prefix = f"imsbench{secrets.token_hex(3)}"
    system = System(url, prefix, env_overrides={"EXPORT_PER_HOUR": "1000", "LOG_LEVEL": "warning"})
    system.start()
    result: dict[str, Any] = {"ideas": IDEAS, "reports": {}, "exports": {}}
    try:
        await system.wait_ready(60)
        pid = system.procs["analytics"][0].pid
        headers = client_headers(key)
        async with aiohttp.ClientSession(base_url=system.base_url, headers=headers) as session:
            for name, params in REPORTS.items():
                if os.environ.get("BENCH_REPORTS", "1") == "0":  # 0: exports (and writes) only
                    break
                result["reports"][name] = await time_report(
                    session, f"/api/v1/analytics/{name}", params
                )
                print(name, result["reports"][name], flush=True)
            for kind in EXPORTS:  # one warm-up each, so that idle includes the code paths
                await time_export(session, f"/api/v1/export/{kind}", "json", pid)
            for kind in EXPORTS:
                for fmt in ("csv", "json"):
                    res = await time_export(session, f"/api/v1/export/{kind}", fmt, pid)
                    result["exports"][f"{kind}.{fmt}"] = res
                    print(kind, fmt, res, flush=True)
            if os.environ.get("BENCH_WRITES", "1") != "0":  # 0: reports and exports only
                result["writes"] = await time_writes(session, url, ws)
                print("writes", result["writes"], flush=True)
    finally:
        system.stop()
        await delete_queues(prefix)
    write_results("analytics", result, markdown(result))
    return result


WRITE_ROUNDS, WRITES_PER_ROUND, WARM_UP = 8, 60, 20


def set_triggers(url: str, ws: str, on: bool) -> None:
    conn = psycopg2.connect(url)
    conn.autocommit = True
    try:
        set_rollup_triggers(conn, enabled=on, inserts_only=False)
        with conn.cursor() as cur:
            if on:
                cur.execute("SELECT ideas.rebuild_rollups(%s)", (ws,))
    finally:
        conn.close()


async def time_writes(session: aiohttp.ClientSession, url: str, ws: str) -> dict[str, Any]:
    ids: list[str] = []
    async with session.get("/api/v1/ideas", params={"limit": "100"}) as r:
        ids = [i["id"] for i in (await r.json())["data"]]
    platforms = ("slack", "discord", "teams", "zendesk", "intercom")
    counter = iter(range(1 << 30))

    async def create() -> None:
        async with session.post(
            "/api/v1/ideas", json={"title": f"Write cost {next(counter)}"}
        ) as r:
            assert r.status in (200, 201), await r.text()

    async def vote() -> None:
        n = next(counter)
        async with session.post(
            f"/api/v1/ideas/{ids[n % len(ids)]}/vote", json={"voter": f"write-cost-{n}"}
        ) as r:
            assert r.status in (200, 201), await r.text()

    async def signal() -> None:
        n = next(counter)
        async with session.post(
            "/api/v1/automation/ideas",
            json={
                "title": "Write cost duplicate",
                "url": "https://example.com/write-cost",
                "source": platforms[n % len(platforms)],
            },
        ) as r:
            assert r.status in (200, 201), await r.text()

    ops = {"create": create, "vote": vote, "signal": signal}
    samples: dict[str, dict[str, list[float]]] = {m: {k: [] for k in ops} for m in ("on", "off")}
    await signal()  # the first call creates the idea the others add signals to
    try:
        for rnd in range(WRITE_ROUNDS):
            mode = "on" if rnd % 2 == 0 else "off"
            await asyncio.to_thread(set_triggers, url, ws, mode == "on")
            for name, op in ops.items():
                for _ in range(WARM_UP):
                    await op()
                for _ in range(WRITES_PER_ROUND):
                    t0 = time.perf_counter()
                    await op()
                    samples[mode][name].append((time.perf_counter() - t0) * 1000)
    finally:
        await asyncio.to_thread(set_triggers, url, ws, True)
    out: dict[str, Any] = {}
    for name in ops:
        on, off = samples["on"][name], samples["off"][name]
        out[name] = {
            "n": len(on),
            "on_p50_ms": round(statistics.median(on), 2),
            "on_p99_ms": round(percentile(on, 99), 2),
            "off_p50_ms": round(statistics.median(off), 2),
            "off_p99_ms": round(percentile(off, 99), 2),
            "p50_ratio": round(statistics.median(on) / statistics.median(off), 2),
        }
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# Analytics on {result['ideas']:,} ideas",
        "",
        "| Report | p50 ms | p99 ms | calls |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {k} | {v['p50_ms']} | {v['p99_ms']} | {v['n']} |" for k, v in result["reports"].items()
    ]
    lines += [
        "",
        "| Export (10,000 records) | seconds | MB | peak RSS over idle, MB |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {k} | {v['seconds']} | {v['bytes'] / 1e6:.1f} | {v['peak_over_idle_mb']} |"
        for k, v in result["exports"].items()
    ]
    lines += [
        "",
        "| Write, with / without the rollup triggers | p50 ms on | p99 ms on | p50 ms off"
        " | p99 ms off | p50 ratio | calls each |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {k} | {v['on_p50_ms']} | {v['on_p99_ms']} | {v['off_p50_ms']} | {v['off_p99_ms']}"
        f" | {v['p50_ratio']} | {v['n']} |"
        for k, v in result.get("writes", {}).items()
    ]
    return "\n".join(lines)
