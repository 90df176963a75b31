"""Similar ideas benchmark (docs/similar.md), through the gateway on a system of its own.

For each size in `BENCH_SIMILAR_SIZES` (default 100,000 and 1,000,000 ideas in one workspace):
ideas are inserted in bulk by `ideasctl seed` (COPY) and their vectors by COPY: random unit vectors (the seeder's
titles combine a few dozen words: their vectors would crowd into clusters of ties), so these figures are latency and
memory, not quality (quality: tests/ideas/test_similar_quality.py). Measured:

- the first search of the workspace (it loads the index from PostgreSQL) and the search
  process's resident memory before and after;
- `POST /ideas/similar` p50 / p99 (each call embeds its text and searches);
- idea create p50 with the embeddings computed (the `similar` queue bound) and without (the
  queue unbound for the run), in the same system;
- `GET /ideas/{id}` and `GET /ideas` p99 alone and under a concurrent similar-query load;
- the CPU a similar query and a read cost, by process (`cpu_per_request`); with
  `BENCH_BASELINE=<git ref>`, that commit's code too, in the same run (`cpu_before_after`).

`BENCH_SIMILAR_IDEAS_REPLICAS` (default 1): ideas processes of the system (and as many search
processes).

Results: bench/results/similar.json and .md.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import statistics
import struct
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aio_pika
import aiohttp
import numpy as np
import psycopg2

from bench.common import (
    ROOT,
    Client,
    client_headers,
    loop_run,
    new_workspace,
    paced_run,
    percentile,
    pooled,
    proc_stat,
    running_system,
    seed_ideas,
    start_system,
    stop_system,
    timed_loop,
)
from services.ideas.embedding import DIM, STATIC_ID, idea_text, quantize
from services.ideas.similar import text_hash
from services.ideas import similar
from services.ideas.similar import Index
from tests.support.processes import AMQP_URL, System, create_database, drop_database

RESULTS = Path(__file__).parent / "results"
SIZES = [int(s) for s in os.environ.get("BENCH_SIMILAR_SIZES", "100000,1000000").split(",") if s]
SECONDS = float(os.environ.get("BENCH_SECONDS", "8"))
CLIENTS = 4
ROUNDS = int(os.environ.get("BENCH_SIMILAR_ROUNDS", "3"))  # of the comparisons (`mixed`)
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
            cur.execute("SELECT id, title, summary FROM ideas.ideas WHERE workspace_id = %s", (ws,))
            rows = cur.fetchall()
        ids = [uuid.UUID(str(r[0])).bytes for r in rows]
        # The hash of each idea's text by the model the service runs, as the embedder would
        # write it: the embedder's catch-up at start leaves these rows alone.
        hashes = [text_hash(STATIC_ID, idea_text(r[1], r[2])) for r in rows]
        for start in range(0, len(ids), 200_000):
            part = ids[start : start + 200_000]
            part_hashes = hashes[start : start + 200_000]
            v = rng.standard_normal((len(part), DIM)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            q = quantize(v)
            buf = io.BytesIO()
            buf.write(b"PGCOPY\n\xff\r\n\0" + struct.pack(">ii", 0, 0))
            ws_bytes = uuid.UUID(ws).bytes
            for idea, vec, digest in zip(part, q, part_hashes):
                buf.write(
                    struct.pack(">hi", 5, 16)
                    + ws_bytes
                    + struct.pack(">i", 16)
                    + idea
                    + struct.pack(">i", DIM)
                    + vec.tobytes()
                    + struct.pack(">i", 16)
                    + digest
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
    """The search process's resident memory (it holds the indexes), with its workers'."""
    pid = system.procs["similar"][0].pid
    pids = [pid, *(int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]
    kb = 0
    for p in pids:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                kb += int(line.split()[1])
    return round(kb / 1024, 1)


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
        "search_ms": search_ms(index),
    }


def search_ms(index: Index) -> dict[str, float]:
    """One search's time in one thread over the index (mean of 100, median of 3 runs of them),
    with the first pass on 192 bits (as served) and with one pass over all 384 (as before it),
    alternating, in one run."""
    queries = np.random.default_rng(5).standard_normal((100, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    runs: dict[str, list[float]] = {"first_pass": [], "one_pass": []}
    served = similar.COARSE_FROM
    try:
        for _ in range(3):
            for name, start in (("first_pass", served), ("one_pass", index.n + 1)):
                similar.COARSE_FROM = start
                t0 = time.perf_counter()
                for q in queries:
                    index.search(q, 10)
                runs[name].append((time.perf_counter() - t0) / len(queries) * 1000)
    finally:
        similar.COARSE_FROM = served
    return {name: round(sorted(r)[1], 2) for name, r in runs.items()}


def prefilter_recall() -> dict[str, Any]:
    """Recall@10 of the sign-bit prefilter (a first pass on 192 bits past 65,536 rows, then
    all 384, then exact rescoring) against an exact search, on clustered vectors (random unit
    vectors have no neighbours worth finding): tight clusters (the 10th neighbour at a cosine
    of about 0.76) and loose ones (about 0.39, the far end of what a duplicate looks like)."""
    out: dict[str, Any] = {"vectors": 200_000, "queries": 100}
    for name, noise in (("tight", 0.6), ("loose", 1.4)):
        rng = np.random.default_rng(2)
        centers = rng.standard_normal((2_000, DIM)).astype(np.float32)
        v = centers[rng.integers(0, 2_000, 200_000)]
        v += noise * rng.standard_normal((200_000, DIM)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        index = Index()
        index.bulk(rng.integers(0, 2**63, (len(v), 2), dtype=np.uint64), quantize(v))
        exact = quantize(v).astype(np.float32) / 127
        hits, tenth = 0, []
        for t in range(100):
            q = v[t * 997]
            s = exact @ q
            best = np.argsort(-s)[:10]
            tenth.append(float(s[best[-1]]))
            got = {tuple(np.frombuffer(i.bytes, np.uint64)) for i, _ in index.search(q, 10)}
            hits += len(got & {tuple(index.ids[j]) for j in best})
        out[f"recall_at_10_{name}"] = hits / 1000
        out[f"tenth_cosine_{name}"] = round(float(np.mean(tenth)), 2)
    return out


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

    # One client: the latency of a search on its own (the machine not saturated); then
    # CLIENTS as fast as they go: the throughput, and the latency of a saturated machine.
    await settle()
    out["similar_post_one_client"] = await timed_loop(similar, 1, SECONDS, 20_000)
    await settle()
    out["similar_post"] = await timed_loop(similar, CLIENTS, SECONDS, 20_000)
    return out


def db_now(system: System) -> Any:
    conn = psycopg2.connect(system.database_url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute("SELECT now()")
            return cur.fetchone()[0]
    finally:
        conn.close()


async def caught_up(system: System, ws: str, since: Any, cap_s: float = 180.0) -> float:
    """Seconds until every idea of `ws` created since `since` has its embedding."""
    started = time.perf_counter()
    conn = psycopg2.connect(system.database_url)
    conn.autocommit = True
    try:
        while time.perf_counter() - started < cap_s:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT count(*) FROM ideas.ideas i LEFT JOIN ideas.embeddings e"
                    " ON e.workspace_id = i.workspace_id AND e.idea_id = i.id"
                    " WHERE i.workspace_id = %s AND i.created_at >= %s AND e.idea_id IS NULL",
                    (ws, since),
                )
                if cur.fetchone()[0] == 0:
                    break
            await asyncio.sleep(0.2)
    finally:
        conn.close()
    return round(time.perf_counter() - started, 1)


def cpu_idle_fraction(seconds: float) -> float:
    """The machine's idle CPU fraction over `seconds` (from /proc/stat)."""

    def read() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return fields[3] + fields[4], sum(fields)  # idle + iowait, all

    idle0, all0 = read()
    time.sleep(seconds)
    idle1, all1 = read()
    return (idle1 - idle0) / max(1, all1 - all0)


def maintain(system: System) -> float:
    """What autovacuum does between two phases on a server that runs it (PostgreSQL's
    default), done here when the server does not (this machine's PostgreSQL has it off):
    VACUUM (ANALYZE) of the bench's database, so that each phase meets the statistics and the
    tables the phases before it would have left on such a server. Without it the ideas list,
    planned for the near-empty table the statistics still described, sorted the whole
    workspace on each page, and the reads got slower round after round (paced reads alone,
    p50 by round: 3.5, 6.7, 8.7 ms). Seconds taken."""
    started = time.perf_counter()
    conn = psycopg2.connect(system.database_url)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW autovacuum")
            if cur.fetchone()[0] == "off":
                cur.execute("VACUUM (ANALYZE)")
    finally:
        conn.close()
    return round(time.perf_counter() - started, 1)


async def settle(system: System | None = None, cap_s: float = 30.0) -> float:
    """Wait until the machine is quiet (CPU at least 85% idle over a second): what a phase
    left behind (consumers, autovacuum) must not land in the next one's figures; with
    `system`, after `maintain`. Seconds waited."""
    if system is not None:
        await asyncio.to_thread(maintain, system)
    started = time.perf_counter()
    while time.perf_counter() - started < cap_s:
        if await asyncio.to_thread(cpu_idle_fraction, 1.0) >= 0.85:
            break
    return round(time.perf_counter() - started, 1)


async def small_workspace(
    system: System, session: aiohttp.ClientSession
) -> tuple[dict[str, Any], Client, list[str]]:
    """A new workspace with 200 ideas through the API (their embeddings by the embedder): its
    record, a client with its key, and the ideas' ids."""
    ws = new_workspace(system)
    c = Client(session, system.base_url, ws["key"])
    ids = [
        (await c.call("POST", "/api/v1/ideas", json={"title": TEXTS[i % 8] + f" {i}"}))["data"][
            "id"
        ]
        for i in range(200)
    ]
    return ws, c, ids


PARTS = ("gateway", "ideas", "similar", "postgres", "rabbitmq", "model")  # a table's parts
# The parts below the requests' CPU priority: the model's processes, and the search process
# (`ims-ideas-similar`, in the idle scheduling class); a tree without it has no such part.
BELOW = ("model", "similar")


def cpu_by_part(system: System) -> dict[str, float]:
    """CPU seconds so far of the system's processes by part: each service, the ideas
    processes' model children (in the idle class or at a lower nice: `model`), PostgreSQL's
    processes and RabbitMQ's. The search process is its own part (`similar`)."""
    part_of = {p.pid: svc for svc, procs in system.procs.items() for p in procs}
    out: dict[str, float] = {}
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        if (found := proc_stat(pid)) is None:
            continue
        name, ppid, cpu = found
        if pid in part_of:
            part = part_of[pid]
        elif part_of.get(ppid) == "ideas":
            part = "model"
        elif name.startswith("postgres"):
            part = "postgres"
        elif name.startswith("beam"):
            part = "rabbitmq"
        else:
            continue
        out[part] = out.get(part, 0.0) + cpu
    return out


async def cpu_per_request(system: System, session: aiohttp.ClientSession) -> dict[str, Any]:
    """The CPU (ms) a `POST /ideas/similar` and a `GET /ideas/{id}` cost, by part, offered
    50 a second (400 of each, twice, in turn): what a similar query takes from the requests
    beside it at their own priority, against what it leaves to the model's idle class."""
    _, c, ids = await small_workspace(system, session)
    calls = {
        "similar": lambda k: c.call(
            "POST", "/api/v1/ideas/similar", json={"title": TEXTS[k % 8] + f" {k}"}
        ),
        "read": lambda k: c.call("GET", f"/api/v1/ideas/{ids[k % len(ids)]}"),
    }
    spent: dict[str, dict[str, float]] = {name: {} for name in calls}
    n = 400
    for _ in range(2):
        for name, call in calls.items():
            await settle(system)
            before, start = cpu_by_part(system), time.perf_counter()
            for k in range(n):
                await call(k)
                await asyncio.sleep(max(0.0, start + (k + 1) / 50 - time.perf_counter()))
            after = cpu_by_part(system)
            for part, t in after.items():
                spent[name][part] = spent[name].get(part, 0.0) + t - before.get(part, 0.0)
    out: dict[str, Any] = {}
    for name, parts in spent.items():
        ms = {part: round(t * 1000 / (2 * n), 2) for part, t in sorted(parts.items())}
        ms["normal_priority"] = round(sum(v for k, v in ms.items() if k not in BELOW), 2)
        out[name] = ms
    out["similar_in_reads"] = round(
        out["similar"]["normal_priority"] / out["read"]["normal_priority"], 2
    )
    return out


async def mixed(
    system: System, session: aiohttp.ClientSession, similar_in_reads: float
) -> dict[str, Any]:
    """Create p50 with and without embeddings; other endpoints' p99 with and without
    similar-query load (a small workspace, so the similar load is the model, not the scan).
    The paced reads also beside a control load: `GET /ideas/{id}` offered at the similar
    queries' rate times `similar_in_reads` (the same CPU at the requests' priority, no model):
    what that much more work costs the reads' p99 on this machine whatever it is.
    Each twice: from 4 clients as fast as they go (the machine saturated; the similar queries
    from 2; the reads from a process of their own, `loop_run`, so that reading the similar
    queries' answers in this process does not delay theirs), and offered at half the rate the busier side (with embeddings, under similar
    load) reached in the first round (paced, open loop: what a service below its capacity
    sees; half of the other side's rate left the busier side near its capacity). `ROUNDS`
    rounds, the two sides of each comparison in turn and their order swapped each round; each
    side's latencies pooled over the rounds (one 8-second run's p99 rests on a few dozen
    requests and moves by tens of percent)."""
    ws, c, ids = await small_workspace(system, session)
    headers = {**client_headers(ws["key"]), "Content-Type": "application/json"}
    runs: dict[str, list[dict[str, Any]]] = {}
    caught: dict[str, list[float]] = {"saturated": [], "paced": []}
    similar_calls: dict[str, int] = {"saturated": 0, "paced": 0}
    # The similar queries' own latencies beside the reads (their model runs in the idle
    # scheduling class: they take the CPU the reads leave).
    similar_ms: dict[str, list[float]] = {"saturated": [], "paced": []}
    rates: dict[str, float] = {}

    async def create(i: int) -> None:
        await c.call(
            "POST",
            "/api/v1/ideas",
            json={"title": f"Created idea {i}", "summary": "Something to embed"},
        )

    def paced_creates(rate: float) -> dict[str, Any]:
        body = json.dumps({"title": "Paced idea", "summary": "Something to embed"}).encode()
        url = f"{system.base_url}/api/v1/ideas"
        return paced_run(url, headers, rate, SECONDS, method="POST", body=body, raw=True)

    read_urls = [
        f"{system.base_url}/api/v1/ideas?limit=25"
        if i % 2 == 0
        else f"{system.base_url}/api/v1/ideas/{ids[i]}"
        for i in range(len(ids))
    ]

    def paced_reads(rate: float) -> dict[str, Any]:
        return paced_run(read_urls[0], headers, rate, SECONDS, paths=read_urls, raw=True)

    async def similar_query(n: int) -> None:
        await c.call("POST", "/api/v1/ideas/similar", json={"title": TEXTS[n % 8] + f" {n}"})

    async def read_one(n: int) -> None:
        await c.call("GET", f"/api/v1/ideas/{ids[n % len(ids)]}")

    async def under_similar_load(
        measure: Any, rate: float | None, took: list[float], call: Any = similar_query
    ) -> tuple[Any, int]:
        """`measure()` while similar queries (or `call`s) run: from 2 clients as fast as they
        go, or offered at `rate` a second; each call's latency (ms) goes to `took`."""
        stop = False

        async def background(offset: int, every: float | None) -> int:
            n, start = 0, time.perf_counter()
            while not stop:
                sent = time.perf_counter()
                await call(n + offset)
                took.append((time.perf_counter() - sent) * 1000)
                n += 1
                if every is not None:
                    await asyncio.sleep(max(0.0, start + n * every - time.perf_counter()))
            return n

        every = 2 / rate if rate else None
        load = [asyncio.create_task(background(k, every)) for k in range(2)]
        await asyncio.sleep(0.5)  # the load running before the measure starts
        try:
            result = await measure()
        finally:
            stop = True
        return result, sum(await asyncio.gather(*load))

    async def creates(paced: bool, with_embeddings: bool) -> None:
        name = "create_paced" if paced else "create"
        name += "_with_embeddings" if with_embeddings else "_without_embeddings"
        await settle(system)
        since = db_now(system)
        if not with_embeddings:
            await bind(system, False)
        try:
            if paced:
                result = await asyncio.to_thread(paced_creates, rates["create"])
            else:
                result = await timed_loop(create, CLIENTS, SECONDS, 5_000, raw=True)
        finally:
            if not with_embeddings:
                await bind(system, True)
        runs.setdefault(name, []).append(result)
        if with_embeddings:
            caught["paced" if paced else "saturated"].append(
                await caught_up(system, ws["id"], since)
            )

    async def read_load(paced: bool, loaded: bool) -> None:
        name = "reads_paced" if paced else "reads"
        name += "_under_similar_load" if loaded else "_alone"
        if paced:
            measure = lambda: asyncio.to_thread(paced_reads, rates["reads"])  # noqa: E731
        else:
            # From a process of its own, as the paced reads: the similar queries' answers are
            # read in this process's event loop meanwhile.
            measure = lambda: asyncio.to_thread(  # noqa: E731
                loop_run, read_urls, headers, CLIENTS, SECONDS
            )
        await settle(system)
        if loaded:
            mode = "paced" if paced else "saturated"
            rate = rates["similar"] if paced else None
            result, n = await under_similar_load(measure, rate, similar_ms[mode])
            similar_calls[mode] += n
        else:
            result = await measure()
        runs.setdefault(name, []).append(result)

    async def reads_beside_control() -> None:
        await settle(system)
        rate = round(rates["similar"] * similar_in_reads, 1)
        rates["control"] = rate
        result, _ = await under_similar_load(
            lambda: asyncio.to_thread(paced_reads, rates["reads"]), rate, [], read_one
        )
        runs.setdefault("reads_paced_beside_control", []).append(result)

    for r in range(ROUNDS):
        order = (True, False) if r % 2 == 0 else (False, True)
        for with_embeddings in order:
            await creates(False, with_embeddings)
        # The paced rates: half what the busier side reached in the first round (with
        # embeddings / under similar load), so that both sides run at most half loaded.
        rates.setdefault("create", round(runs["create_with_embeddings"][0]["rps"] / 2))
        for with_embeddings in order:
            await creates(True, with_embeddings)
        for loaded in order:
            await read_load(False, loaded)
        rates.setdefault("reads", round(runs["reads_under_similar_load"][0]["rps"] / 2))
        # The similar queries offered at half the rate they reached beside saturating reads.
        rates.setdefault("similar", round(similar_calls["saturated"] / SECONDS / 2, 1))
        sides = [lambda: read_load(True, False), lambda: read_load(True, True)]
        sides.append(reads_beside_control)
        for side in sides[r % 3 :] + sides[: r % 3]:  # each side first in one round
            await side()

    out: dict[str, Any] = {name: pooled(results) for name, results in runs.items()}
    out["rounds"] = ROUNDS
    out["embeddings_caught_up_s"] = max(caught["saturated"])
    out["paced_embeddings_caught_up_s"] = max(caught["paced"])
    out["similar_calls_meanwhile"] = similar_calls["saturated"]
    out["similar_calls_meanwhile_paced"] = similar_calls["paced"]
    out["similar_paced_rate"] = rates["similar"]
    for mode, took in similar_ms.items():
        out[f"similar_beside_reads_{mode}"] = {
            "p50_ms": round(percentile(took, 50), 2),
            "p99_ms": round(percentile(took, 99), 2),
            "requests": len(took),
        }
    out["control_paced_rate"] = rates["control"]
    out["similar_in_reads"] = similar_in_reads
    out["create_paced_rate"] = rates["create"]
    out["reads_paced_rate"] = rates["reads"]
    for name, changed, base, q in (
        ("create_p50_slowdown", "create_with_embeddings", "create_without_embeddings", "p50_ms"),
        (
            "create_paced_p50_slowdown",
            "create_paced_with_embeddings",
            "create_paced_without_embeddings",
            "p50_ms",
        ),
        ("reads_p99_change", "reads_under_similar_load", "reads_alone", "p99_ms"),
        ("reads_paced_p99_change", "reads_paced_under_similar_load", "reads_paced_alone", "p99_ms"),
        (
            "reads_paced_control_p99_change",
            "reads_paced_beside_control",
            "reads_paced_alone",
            "p99_ms",
        ),
    ):
        b = out[base][q]
        out[name] = round(out[changed][q] / b - 1, 3) if b else None
    return out


async def cpu_before_after(baseline: str) -> dict[str, Any]:
    """`cpu_per_request` of commit `baseline`'s code and of this tree's, each on a system of
    its own, in turn (`ROUNDS` pairs): CPU seconds vary less than latencies, but a machine's
    speed still moves over minutes; each part's figures are the median of the rounds."""
    from bench.webhooks import source_tree

    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        old = source_tree(baseline, tmp)
        for _ in range(ROUNDS):
            for name, root in (("before", old), ("after", ROOT)):
                url = await asyncio.to_thread(create_database)
                system = await start_system(url, root)
                try:
                    async with aiohttp.ClientSession() as session:
                        runs[name].append(await cpu_per_request(system, session))
                finally:
                    await stop_system(system)
                    await asyncio.to_thread(drop_database, url)
    out: dict[str, Any] = {"baseline": baseline, "rounds": ROUNDS}
    for name, measured in runs.items():
        out[name] = {
            request: {
                part: round(statistics.median(m[request].get(part, 0.0) for m in measured), 2)
                for part in sorted({part for m in measured for part in m[request]})
            }
            for request in ("similar", "read")
        }
        out[name]["similar_in_reads"] = round(
            statistics.median(m["similar_in_reads"] for m in measured), 2
        )
    return out


async def main() -> dict[str, Any]:
    results: dict[str, Any] = {
        "note": "random unit vectors in the index: latency and memory, not quality",
        "machine_cpus": os.cpu_count(),
    }
    if baseline := os.environ.get("BENCH_BASELINE"):
        results["cpu_before_after"] = await cpu_before_after(baseline)
    results["index_memory_1m"] = index_bytes_per_million()
    results["prefilter_recall"] = prefilter_recall()
    count = int(os.environ.get("BENCH_SIMILAR_IDEAS_REPLICAS", "1"))
    replicas = {"ideas": count, "similar": count}
    async with running_system(replicas) as system, aiohttp.ClientSession() as session:
        results["sizes"] = []
        results["cpu_per_request"] = await cpu_per_request(system, session)
        weight = results["cpu_per_request"]["similar_in_reads"]
        results["mixed"] = await mixed(system, session, weight)
        write(results)
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
        "| ideas | seed s | first search (index load) s | POST /ideas/similar, 1 client: "
        f"p50 / p99 ms (rps) | {CLIENTS} clients: p50 / p99 ms (rps) | "
        "search process RSS before / after load MB |",
        "|---|---|---|---|---|---|",
    ]
    for s in r["sizes"]:
        one, p = s.get("similar_post_one_client"), s["similar_post"]
        lines.append(
            f"| {s['ideas']:,} | {s['seed_s']} | {s['first_search_s']} | "
            + (f"{one['p50_ms']} / {one['p99_ms']} ({one['rps']}) | " if one else "— | ")
            + f"{p['p50_ms']} / {p['p99_ms']} ({p['rps']}) | "
            f"{s['rss_before_mb']} / {s['rss_after_load_mb']} |"
        )
    mem, rec = r["index_memory_1m"], r["prefilter_recall"]
    lines += [
        "",
        f"Index memory for {mem['vectors']:,} vectors: {mem['mib_used']} MiB "
        f"({mem['bytes_per_vector']} bytes a vector: int8 vector, sign bits, id, live flag)."
        f" A search over them, in one thread: {mem['search_ms']['first_pass']} ms with the "
        f"first pass on 192 bits, {mem['search_ms']['one_pass']} ms in one pass over all 384."
        f" Prefilter recall@10 on {rec['vectors']:,} clustered vectors: "
        f"{rec['recall_at_10_tight']} in tight clusters (10th neighbour at cosine "
        f"{rec['tenth_cosine_tight']}), {rec['recall_at_10_loose']} in loose ones "
        f"({rec['tenth_cosine_loose']}).",
        "",
        f"The comparisons: {m['rounds']} rounds, the two sides of each in turn; each side's "
        "latencies pooled over the rounds.",
        "",
        "| load | p50 ms | p99 ms | rps |",
        "|---|---|---|---|",
    ]
    for name in (
        "create_with_embeddings",
        "create_without_embeddings",
        "create_paced_with_embeddings",
        "create_paced_without_embeddings",
        "reads_alone",
        "reads_under_similar_load",
        "reads_paced_alone",
        "reads_paced_under_similar_load",
        "reads_paced_beside_control",
    ):
        x = m[name]
        lines.append(f"| {name} | {x['p50_ms']} | {x['p99_ms']} | {x['rps']} |")
    lines += [
        "",
        "Saturated (4 clients as fast as they go): create p50 with embeddings vs without "
        f"{m['create_p50_slowdown']:+.1%} (the embeddings caught up "
        f"{m['embeddings_caught_up_s']} s after the burst); reads p99 under similar load vs "
        f"alone {m['reads_p99_change']:+.1%} ({m['similar_calls_meanwhile']} similar calls "
        "meanwhile).",
        "",
        f"Paced at half the busier side's rates ({m['create_paced_rate']} creates, "
        f"{m['reads_paced_rate']} reads a second): create p50 with embeddings vs without "
        f"{m['create_paced_p50_slowdown']:+.1%} (caught up {m['paced_embeddings_caught_up_s']}"
        f" s after); reads p99 under similar load vs alone {m['reads_paced_p99_change']:+.1%}"
        f" ({m['similar_calls_meanwhile_paced']} similar calls meanwhile, offered at "
        f"{m['similar_paced_rate']} a second).",
        "",
        f"The control: the paced reads beside {m['control_paced_rate']} more `GET /ideas/{{id}}`"
        f" a second (the similar queries' rate times {m['similar_in_reads']}, a similar query's "
        "CPU at the requests' priority in reads, measured below; no model): reads p99 vs alone "
        f"{m['reads_paced_control_p99_change']:+.1%}.",
        "",
        "The similar queries' own latency beside the reads, p50 / p99 ms: "
        + "; ".join(
            f"{mode} {s['p50_ms']} / {s['p99_ms']} ({s['requests']} calls)"
            for mode in ("saturated", "paced")
            if (s := m.get(f"similar_beside_reads_{mode}"))
        )
        + ".",
        "",
    ]
    if ba := r.get("cpu_before_after"):
        lines += [
            f"Before and after, one run (`BENCH_BASELINE={ba['baseline']}`, {ba['rounds']} "
            "rounds in turn, each part's median): CPU ms a request, by part.",
            "",
            "| request | code | " + " | ".join(PARTS) + " | normal_priority |",
            "|---|---|" + "---|" * (len(PARTS) + 1),
        ]
        for request in ("similar", "read"):
            for name in ("before", "after"):
                x = ba[name][request]
                lines.append(
                    f"| {request} | {name} | "
                    + " | ".join(str(x.get(p, 0.0)) for p in PARTS)
                    + f" | {x['normal_priority']} |"
                )
        lines += [
            "",
            f"A similar query in reads' worth at the requests' priority: before "
            f"{ba['before']['similar_in_reads']}, after {ba['after']['similar_in_reads']}.",
            "",
        ]
    if cpu := r.get("cpu_per_request"):
        parts = sorted({part for name in ("similar", "read") for part in cpu[name]})
        lines += [
            "CPU a request costs, by part, ms (offered 50 a second; below the requests' "
            "priority: `similar`, the search process in the idle scheduling class, and "
            "`model`, the model's child processes; `normal_priority`: all the others). A "
            f"similar query costs {cpu['similar_in_reads']} reads' worth at the requests' "
            "priority.",
            "",
            "| request | " + " | ".join(parts) + " |",
            "|---|" + "---|" * len(parts),
        ]
        for name, label in (("similar", "POST /ideas/similar"), ("read", "GET /ideas/{id}")):
            lines.append(
                f"| {label} | " + " | ".join(str(cpu[name].get(p, 0.0)) for p in parts) + " |"
            )
        lines.append("")
    return "\n".join(lines)
