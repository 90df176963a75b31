"""Similar ideas benchmark (docs/similar.md), through the gateway on a system of its own.

For each size in `BENCH_SIMILAR_SIZES` (default 100,000 and 1,000,000 ideas in one workspace):
ideas are inserted in bulk by `ideasctl seed` (COPY) and their vectors by COPY: random unit vectors (embedding a
million texts one by one would take hours on this machine), so these figures are latency and
memory, not quality (quality: tests/ideas/test_similar_quality.py). Measured:

- the first search of the workspace (it loads the index from PostgreSQL) and the ideas
  process's resident memory before and after;
- `POST /ideas/similar` p50 / p99 (each call embeds its text and searches);
- idea create p50 with the embeddings computed (the `similar` queue bound) and without (the
  queue unbound for the run), in the same system;
- `GET /ideas/{id}` and `GET /ideas` p99 alone and under a concurrent similar-query load.

Results: bench/results/similar.json and .md.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import struct
import time
import uuid
from pathlib import Path
from typing import Any

import aio_pika
import aiohttp
import numpy as np
import psycopg2

from bench.common import Client, new_workspace, running_system, seed_ideas, timed_loop
from services.ideas.embedding import DIM, quantize
from services.ideas.similar import Index
from tests.support.processes import AMQP_URL, System

RESULTS = Path(__file__).parent / "results"
SIZES = [int(s) for s in os.environ.get("BENCH_SIMILAR_SIZES", "100000,1000000").split(",")]
SECONDS = float(os.environ.get("BENCH_SECONDS", "8"))
CLIENTS = 4
TEXTS = [
    "Dark mode for the dashboard",
    "Export reports as PDF",
    "Single sign-on with Okta",
    "Keyboard shortcuts for power users",
    "Offline mode on the train",
    "Slack notifications for comments",
    "Annual billing with a discount",
    "Bulk edit of many records at once",
]


def seed(system: System, ws: str, n: int) -> float:
    """n ideas (`ideasctl seed`, COPY) and n random unit vectors (COPY binary); seconds."""
    started = time.perf_counter()
    seed_ideas(system, ws, n, 100, 1)
    conn = psycopg2.connect(system.database_url)
    rng = np.random.default_rng(7)
    try:
        with conn, conn.cursor() as cur:
            cur.execute("SELECT id FROM ideas.ideas WHERE workspace_id = %s", (ws,))
            ids = [uuid.UUID(str(r[0])).bytes for r in cur.fetchall()]
        for start in range(0, len(ids), 200_000):
            part = ids[start : start + 200_000]
            v = rng.standard_normal((len(part), DIM)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            q = quantize(v)
            buf = io.BytesIO()
            buf.write(b"PGCOPY\n\xff\r\n\0" + struct.pack(">ii", 0, 0))
            ws_bytes = uuid.UUID(ws).bytes
            for idea, vec in zip(part, q):
                buf.write(
                    struct.pack(">hi", 5, 16)
                    + ws_bytes
                    + struct.pack(">i", 16)
                    + idea
                    + struct.pack(">i", DIM)
                    + vec.tobytes()
                    + struct.pack(">i", 16)
                    + b"\0" * 16
                    + struct.pack(">i", 1)
                    + b"\1"
                )
            buf.write(struct.pack(">h", -1))
            buf.seek(0)
            with conn, conn.cursor() as cur:
                cur.copy_expert(
                    "COPY ideas.embeddings (workspace_id, idea_id, vector,"
                    " text_hash, live) FROM STDIN (FORMAT binary)",
                    buf,
                )
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE ideas.embeddings")
    finally:
        conn.close()
    return round(time.perf_counter() - started, 1)


def rss_mb(system: System) -> float:
    pid = system.procs["ideas"][0].pid
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def index_bytes_per_million() -> dict[str, Any]:
    """The in-memory index's own arrays for 1,000,000 vectors (measured by building one)."""
    rng = np.random.default_rng(1)
    vecs = np.zeros((1_000_000, DIM), np.int8)
    for start in range(0, 1_000_000, 100_000):
        v = rng.standard_normal((100_000, DIM)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        vecs[start : start + 100_000] = quantize(v)
    index = Index()
    index.bulk(rng.integers(0, 2**63, (1_000_000, 2), dtype=np.uint64), vecs)
    del vecs
    used = index.n * (16 + DIM + DIM // 8 + 1 + 16)  # + the sorted id lookup
    return {
        "vectors": index.n,
        "bytes_used": used,
        "mib_used": round(used / 2**20, 1),
        "bytes_per_vector": used // index.n,
        "mib_allocated": round(index.nbytes / 2**20, 1),
    }


def prefilter_recall() -> dict[str, Any]:
    """Recall@10 of the sign-bit prefilter plus exact rescoring against an exact search, on
    clustered vectors (random unit vectors have no neighbours worth finding)."""
    rng = np.random.default_rng(2)
    centers = rng.standard_normal((2_000, DIM)).astype(np.float32)
    v = centers[rng.integers(0, 2_000, 200_000)] + 0.6 * rng.standard_normal((200_000, DIM)).astype(
        np.float32
    )
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    index = Index()
    index.bulk(rng.integers(0, 2**63, (len(v), 2), dtype=np.uint64), quantize(v))
    exact = quantize(v).astype(np.float32) / 127
    hits = 0
    for t in range(100):
        q = v[t * 997]
        best = set(np.argsort(-(exact @ q))[:10].tolist())
        got = index.search(q, 10)
        ids = {tuple(np.frombuffer(i.bytes, np.uint64)) for i, _ in got}
        rows = {tuple(index.ids[j]) for j in best}
        hits += len(ids & rows)
    return {"vectors": len(v), "queries": 100, "recall_at_10": hits / 1000}


async def bind(system: System, bound: bool) -> None:
    conn = await aio_pika.connect(AMQP_URL)
    try:
        ch = await conn.channel()
        queue = await ch.declare_queue(f"{system.amqp_prefix}.similar", passive=True)
        for key in ("idea.created", "idea.updated", "idea.status_changed", "idea.deleted"):
            if bound:
                await queue.bind(f"{system.amqp_prefix}.events", routing_key=key)
            else:
                await queue.unbind(f"{system.amqp_prefix}.events", routing_key=key)
    finally:
        await conn.close()


async def size_run(system: System, session: aiohttp.ClientSession, n: int) -> dict[str, Any]:
    ws = new_workspace(system)
    seconds = seed(system, ws["id"], n)
    c = Client(session, system.base_url, ws["key"])
    out: dict[str, Any] = {"ideas": n, "seed_s": seconds, "rss_before_mb": rss_mb(system)}
    started = time.perf_counter()
    await c.call("POST", "/api/v1/ideas/similar", json={"title": "warm up"})
    out["first_search_s"] = round(time.perf_counter() - started, 2)
    out["rss_after_load_mb"] = rss_mb(system)

    async def similar(i: int) -> None:
        await c.call(
            "POST",
            "/api/v1/ideas/similar",
            json={"title": TEXTS[i % len(TEXTS)] + f" {i}", "limit": 10},
        )

    out["similar_post"] = await timed_loop(similar, CLIENTS, SECONDS, 20_000)
    return out


async def mixed(system: System, session: aiohttp.ClientSession) -> dict[str, Any]:
    """Create p50 with and without embeddings; other endpoints' p99 with and without
    similar-query load (a small workspace, so the similar load is the model, not the scan)."""
    ws = new_workspace(system)
    c = Client(session, system.base_url, ws["key"])
    ids = [
        (await c.call("POST", "/api/v1/ideas", json={"title": TEXTS[i % 8] + f" {i}"}))["data"][
            "id"
        ]
        for i in range(200)
    ]
    out: dict[str, Any] = {}

    async def create(i: int) -> None:
        await c.call(
            "POST",
            "/api/v1/ideas",
            json={"title": f"Created idea {i}", "summary": "Something to embed"},
        )

    out["create_with_embeddings"] = await timed_loop(create, CLIENTS, SECONDS, 5_000)
    await bind(system, False)
    try:
        out["create_without_embeddings"] = await timed_loop(create, CLIENTS, SECONDS, 5_000)
    finally:
        await bind(system, True)
    base = out["create_without_embeddings"]["p50_ms"]
    out["create_p50_slowdown"] = (
        round(out["create_with_embeddings"]["p50_ms"] / base - 1, 3) if base else None
    )

    async def reads(i: int) -> None:
        if i % 2:
            await c.call("GET", f"/api/v1/ideas/{ids[i % len(ids)]}")
        else:
            await c.call("GET", "/api/v1/ideas", params={"limit": "25"})

    out["reads_alone"] = await timed_loop(reads, CLIENTS, SECONDS, 20_000)
    stop = time.perf_counter() + SECONDS

    async def background() -> int:
        n = 0
        while time.perf_counter() < stop:
            await c.call("POST", "/api/v1/ideas/similar", json={"title": TEXTS[n % 8] + f" {n}"})
            n += 1
        return n

    load = [asyncio.create_task(background()) for _ in range(2)]
    out["reads_under_similar_load"] = await timed_loop(reads, CLIENTS, SECONDS, 20_000)
    out["similar_calls_meanwhile"] = sum(await asyncio.gather(*load))
    alone = out["reads_alone"]["p99_ms"]
    out["reads_p99_change"] = (
        round(out["reads_under_similar_load"]["p99_ms"] / alone - 1, 3) if alone else None
    )
    return out


async def main() -> dict[str, Any]:
    results: dict[str, Any] = {
        "note": "random unit vectors in the index: latency and memory, not quality",
        "machine_cpus": os.cpu_count(),
    }
    results["index_memory_1m"] = index_bytes_per_million()
    results["prefilter_recall"] = prefilter_recall()
    async with running_system() as system, aiohttp.ClientSession() as session:
        results["mixed"] = await mixed(system, session)
        results["sizes"] = []
        for n in SIZES:
            results["sizes"].append(await size_run(system, session, n))
            write(results)  # each size as soon as it is measured
    print(json.dumps(results, indent=2))
    return results


def write(results: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "similar.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "similar.md").write_text(markdown(results))


def markdown(r: dict[str, Any]) -> str:
    m = r["mixed"]
    lines = [
        "# Similar ideas benchmark",
        "",
        "`python -m bench similar` (bench/similar.py). Vectors in the index are random unit "
        "vectors: the figures are latency and memory, not quality.",
        "",
        "| ideas | seed s | first search (index load) s | POST /ideas/similar p50 ms | "
        "p99 ms | rps | ideas RSS before / after load MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in r["sizes"]:
        p = s["similar_post"]
        lines.append(
            f"| {s['ideas']:,} | {s['seed_s']} | {s['first_search_s']} | "
            f"{p['p50_ms']} | {p['p99_ms']} | {p['rps']} | "
            f"{s['rss_before_mb']} / {s['rss_after_load_mb']} |"
        )
    mem, rec = r["index_memory_1m"], r["prefilter_recall"]
    lines += [
        "",
        f"Index memory for {mem['vectors']:,} vectors: {mem['mib_used']} MiB "
        f"({mem['bytes_per_vector']} bytes a vector: int8 vector, sign bits, id, live flag)."
        f" Prefilter recall@10 on {rec['vectors']:,} clustered vectors: "
        f"{rec['recall_at_10']}.",
        "",
        "| load | p50 ms | p99 ms | rps |",
        "|---|---|---|---|",
    ]
    for name in (
        "create_with_embeddings",
        "create_without_embeddings",
        "reads_alone",
        "reads_under_similar_load",
    ):
        x = m[name]
        lines.append(f"| {name} | {x['p50_ms']} | {x['p99_ms']} | {x['rps']} |")
    lines += [
        "",
        f"Create p50 with embeddings vs without: {m['create_p50_slowdown']:+.1%}. "
        f"Reads p99 under similar load vs alone: {m['reads_p99_change']:+.1%} "
        f"({m['similar_calls_meanwhile']} similar calls meanwhile).",
        "",
    ]
    return "\n".join(lines)
