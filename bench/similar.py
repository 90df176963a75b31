"""Similar ideas benchmark (docs/similar.md#benchmark): the similar service as it runs, with its
default model, the transformer (`SIMILAR_MODEL=minilm`: new ideas embedded by the embedder from
queue `similar`, a search text by the search process's worker), through the gateway, on a test
system of its own.

For each size in `BENCH_SIMILAR_SIZES` (default 100,000 and 1,000,000 ideas in one workspace)
the ideas are inserted in bulk (`seed`: `ideasctl seed`, COPY), the similar service's copy of
them as the backfill writes it, and their vectors by COPY: random unit vectors (the seeder's
titles combine a few dozen words: their vectors would crowd into clusters of ties), each row
with the hash of its idea's text by the model the service runs, so the embedder's catch-up
leaves them alone. These figures are latency, memory, lag and CPU, not quality (quality:
tests/similar/test_quality.py). Measured:

1. `POST /ideas/similar` p50 and p99 from 1 client and from 4 as fast as they go, each search a
   text never searched before (the search process keeps its recent texts' vectors: a repeated
   text would measure that cache, not the model; `texts_embedded` counts where the vectors came
   from; a refused search is counted, `search_errors`, and the run goes on), reported against
   the aims (p50 < 50 ms, p99 < 150 ms with 4 clients), not asserted;
2. the index's memory: its own arrays for 1,000,000 vectors (`index_bytes_per_million`), and
   the search process's RSS before and after its first search of each workspace loads it;
3. the embedding lag, in the first size's workspace: creates offered at `RATE` a second for
   `LAG_S` seconds (an open loop: each create is sent at its scheduled time, whatever the ones
   before it are doing), every `PROBE_EVERY`th probed through the gateway with
   `POST /ideas/similar` of its own title and summary until it is among the answers (from when
   the sample before it was found: `create`); the lag is from the create's answer to the
   answer of the probe that found it. Its p50 and p99, the
   share found within `CONTRACT_S` (the contract: 2 s), the probes' rate, and when the last
   sampled idea was found and the last idea embedded after the load stopped;
4. the ideas process's CPU a create (utime + stime of it and its children, /proc), at the same
   paced rate, with the similar service's two processes running and stopped (`System.stop_one`
   and `start_one`), in `ROUNDS` pairs of alternating rounds (ABBA: running, stopped, stopped,
   running, ...): each round's figure, each side's median and their ratio (the aim: within 5%).
   Stopped, the `similar` queue still exists and is bound, so the ideas service publishes the
   same messages (the queue's depth at the end of each stopped round says so).

Results: bench/results/similar.json and .md.
"""

from __future__ import annotations

import asyncio
import functools
import io
import itertools
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aio_pika
import aiohttp
import numpy as np
import psycopg2

from bench.common import (
    Client,
    client_headers,
    new_workspace,
    paced_run,
    percentile,
    proc_stat,
    running_system,
    seed_ideas,
    table,
    timed_loop,
    write_results,
)
from services.similar import index as similar
from services.similar.embedding import DEFAULT_MODEL, TRANSFORMERS, idea_text, quantize
from services.similar.index import Index, text_hash
from tests.support.processes import AMQP_URL, System

MODEL = TRANSFORMERS[DEFAULT_MODEL]  # the default model's vectors: their width, id and join
DIM = MODEL.dim
SIZES = [int(s) for s in os.environ.get("BENCH_SIMILAR_SIZES", "100000,1000000").split(",") if s]
SECONDS = float(os.environ.get("BENCH_SECONDS", "20"))  # each latency run
CLIENTS = 4
# The gateway's low-priority concurrencies compared (`concurrency_runs`), and their workspace.
LOW_LIMITS = [int(s) for s in os.environ.get("BENCH_SIMILAR_LOW_LIMITS", "1,4").split(",") if s]
LOW_SIZE = int(os.environ.get("BENCH_SIMILAR_LOW_SIZE", "100000"))
AIM_P50_MS, AIM_P99_MS = 50.0, 150.0  # POST /ideas/similar with CLIENTS clients
RATE = float(os.environ.get("BENCH_SIMILAR_RATE", "50"))  # creates a second, paced
LAG_S = float(os.environ.get("BENCH_SIMILAR_LAG_S", "60"))
PROBE_EVERY = int(os.environ.get("BENCH_SIMILAR_PROBE_EVERY", "5"))  # every 5th create probed
PROBE_S = 0.25  # between one create's probes, for its first PROBE_FINE_S
PROBE_FINE_S = 2.5
PROBE_SLOW_S = 1.0  # between its probes after that
PROBE_CAP_S = 300.0  # a create not found by then counts as not found
CONTRACT_S = 2.0  # a created idea is found by search within this (docs/similar.md#the-index)
ROUNDS = int(os.environ.get("BENCH_SIMILAR_ROUNDS", "3"))  # pairs of CPU rounds
ROUND_S = float(os.environ.get("BENCH_SIMILAR_ROUND_S", "20"))
SIMILAR_PROCESSES = ("similar", "similar-embedder")
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
WORDS = (
    "invoices calendar mobile tablet export import archive search filters tags labels roles "
    "permissions audit budget forecast payroll inventory shipping returns refunds coupons "
    "checkout onboarding tutorial reminders alerts webhooks sandbox staging backups restore "
    "translation currency timezone accessibility contrast fonts printing barcode scanner "
    "warehouse suppliers contracts signatures approvals comments mentions attachments "
    "templates duplicates merge history versions offline sync latency uptime quota"
).split()
FRESH = itertools.count()  # every search text and created idea of the run is a new one


def fresh_text() -> dict[str, str]:
    """A title and summary never used before in this run: one of `TEXTS` with three words of
    `WORDS` and a number, so that texts of one run are not near copies of each other."""
    n = next(FRESH)
    w = [WORDS[(n * k + k * k) % len(WORDS)] for k in (7, 13, 29)]
    return {
        "title": f"{TEXTS[n % len(TEXTS)]}: {w[0]} and {w[1]}",
        "summary": f"We need it for {w[2]}, request {n}",
    }


def seed(system: System, ws: str, n: int) -> float:
    """n ideas (`ideasctl seed`, COPY), the similar service's copy of them (as the backfill
    writes it) and n random unit vectors (COPY binary); seconds."""
    started = time.perf_counter()
    seed_ideas(system, ws, n, 100, 1)
    conn = psycopg2.connect(system.database_url)
    rng = np.random.default_rng(7)
    try:
        with conn, conn.cursor() as cur:
            cur.execute(
                'INSERT INTO "similar".ideas (workspace_id, idea_id, title, summary, status,'
                " merged_into_id, version) SELECT workspace_id, id, title, summary, status,"
                " merged_into_id, 0 FROM ideas.ideas WHERE workspace_id = %s"
                " ON CONFLICT DO NOTHING",
                (ws,),
            )
            cur.execute("SELECT id, title, summary FROM ideas.ideas WHERE workspace_id = %s", (ws,))
            rows = cur.fetchall()
        ids = [uuid.UUID(str(r[0])).bytes for r in rows]
        # The hash of each idea's text by the model the service runs, as the embedder would
        # write it: the embedder's catch-up at start leaves these rows alone.
        hashes = [text_hash(MODEL.model_id, idea_text(r[1], r[2], MODEL.join)) for r in rows]
        for start in range(0, len(ids), 200_000):
            part = ids[start : start + 200_000]
            part_hashes = hashes[start : start + 200_000]
            v = rng.standard_normal((len(part), DIM)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            q = quantize(v)
            buf = io.BytesIO()
            buf.write(b"PGCOPY\n\xff\r\n\0" + struct.pack(">ii", 0, 0))
            ws_bytes = uuid.UUID(ws).bytes
            for idea, vec, digest in zip(part, q, part_hashes, strict=True):
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
                    'COPY "similar".embeddings (workspace_id, idea_id, vector,'
                    " text_hash, live) FROM STDIN (FORMAT binary)",
                    buf,
                )
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute('VACUUM ANALYZE "similar".ideas, "similar".embeddings')
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
    index = Index(DIM)
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
    with the first pass on 192 bits (as served) and with one pass over all the vector's bits (as before it),
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
    all of them, then exact rescoring) against an exact search, on clustered vectors (random unit
    vectors have no neighbours worth finding): tight clusters (the 10th neighbour at a cosine
    of about 0.76) and loose ones (about 0.39, the far end of what a duplicate looks like)."""
    out: dict[str, Any] = {"vectors": 200_000, "queries": 100}
    for name, noise in (("tight", 0.6), ("loose", 1.4)):
        rng = np.random.default_rng(2)
        centers = rng.standard_normal((2_000, DIM)).astype(np.float32)
        v = centers[rng.integers(0, 2_000, 200_000)]
        v += noise * rng.standard_normal((200_000, DIM)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        index = Index(DIM)
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


# ---- 1 and 2: searches and memory, by size ------------------------------------------------


async def texts_embedded(system: System) -> dict[str, float]:
    """`ims_similar_search_texts_total` so far, by where the vector came from (`model`,
    `recent`), from the search process's /metrics."""
    async with aiohttp.ClientSession() as s:
        async with s.get(system.metrics_url("similar") + "/metrics") as r:
            text = await r.text()
    found = re.finditer(
        r'^ims_similar_search_texts_total\{source="(\w+)"\} (\S+)$', text, re.MULTILINE
    )
    return {m.group(1): float(m.group(2)) for m in found}


async def search(c: Client, errors: list[str] | None = None, _: int = 0) -> None:
    """One search of a new text; with `errors`, a refusal is kept there instead of raised (a
    search process starved of CPU can answer 503: counted, the run goes on)."""
    try:
        await c.call("POST", "/api/v1/ideas/similar", json={**fresh_text(), "limit": 10})
    except RuntimeError as err:
        if errors is None:
            raise
        errors.append(str(err)[:200])


def aims(four: dict[str, Any]) -> dict[str, bool]:
    return {"p50_met": four["p50_ms"] < AIM_P50_MS, "p99_met": four["p99_ms"] < AIM_P99_MS}


async def size_run(
    system: System, session: aiohttp.ClientSession, n: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A workspace of `n` seeded ideas: the first search (it loads the index) and the search
    process's RSS around it, then `POST /ideas/similar` from 1 client and from `CLIENTS`,
    `SECONDS` each, every text a new one. Its figures and the workspace."""
    ws = new_workspace(system)
    seconds = await asyncio.to_thread(seed, system, ws["id"], n)
    c = Client(session, system.base_url, ws["key"])
    out: dict[str, Any] = {"ideas": n, "seed_s": seconds, "rss_before_mb": rss_mb(system)}
    started = time.perf_counter()
    await search(c)
    out["first_search_s"] = round(time.perf_counter() - started, 2)
    out["rss_after_load_mb"] = rss_mb(system)
    before, errors = await texts_embedded(system), list[str]()
    out["load_average"] = round(os.getloadavg()[0], 1)
    call = functools.partial(search, c, errors)
    out["similar_post_one_client"] = await timed_loop(call, 1, SECONDS, 10**6)
    out["similar_post"] = await timed_loop(call, CLIENTS, SECONDS, 10**6)
    out["search_errors"] = len(errors)
    out["search_error_first"] = errors[0] if errors else None
    after = await texts_embedded(system)
    out["texts_embedded"] = {k: int(after[k] - before.get(k, 0.0)) for k in sorted(after)}
    out["aims"] = aims(out["similar_post"])
    return out, ws


# ---- 3: the embedding lag ---------------------------------------------------------------


@dataclass
class Sample:
    """A probed create: when its answer came, when the probe that found it answered."""

    answered: float
    found: float | None = None
    probes: list[float] = field(default_factory=list)  # each probe's send time


@dataclass
class Lag:
    samples: list[Sample] = field(default_factory=list)
    chain: asyncio.Event | None = None  # set when the last sample sent so far is done
    create_ms: list[float] = field(default_factory=list)
    probe_ms: list[float] = field(default_factory=list)
    errors: int = 0
    probe_errors: int = 0
    late_sends: int = 0


async def probe(c: Client, lag: Lag, body: dict[str, str], idea: str, sample: Sample) -> None:
    """`POST /ideas/similar` of the idea's own text until the idea is among the answers:
    every `PROBE_S` for `PROBE_FINE_S`, then every `PROBE_SLOW_S`, for `PROBE_CAP_S` at most."""
    while (since := time.perf_counter() - sample.answered) < PROBE_CAP_S:
        sent = time.perf_counter()
        sample.probes.append(sent)
        try:
            answer = await c.call("POST", "/api/v1/ideas/similar", json={**body, "limit": 10})
        except (RuntimeError, aiohttp.ClientError):
            lag.probe_errors += 1
            answer = {"data": []}
        lag.probe_ms.append((time.perf_counter() - sent) * 1000)
        if any(h["idea"]["id"] == idea for h in answer["data"]):
            sample.found = time.perf_counter()
            return
        await asyncio.sleep(PROBE_S if since < PROBE_FINE_S else PROBE_SLOW_S)


async def create(c: Client, lag: Lag, k: int) -> None:
    """One create of the paced load; every `PROBE_EVERY`th is then probed, from when the
    sample before it was found (or its answer, if later). The embedder takes the events in
    their order, so an idea is not found before the ones created before it: probing it while
    an earlier one is not found yet would only add load (the probes' CPU at the requests'
    priority is CPU the embedder's idle-class model does not get). Should one be embedded
    before an earlier one, its lag is overstated by at most that wait, never understated."""
    before, done = lag.chain, asyncio.Event()
    if k % PROBE_EVERY == 0:
        lag.chain = done
    body = fresh_text()
    sent = time.perf_counter()
    try:
        idea = (await c.call("POST", "/api/v1/ideas", json=body))["data"]["id"]
    except (RuntimeError, aiohttp.ClientError):
        lag.errors += 1
        done.set()
        return
    lag.create_ms.append((time.perf_counter() - sent) * 1000)
    if k % PROBE_EVERY == 0:
        sample = Sample(time.perf_counter())
        lag.samples.append(sample)
        try:
            if before is not None:
                await before.wait()
            await probe(c, lag, body, idea, sample)
        finally:
            done.set()


async def offer(c: Client, lag: Lag) -> tuple[float, set[asyncio.Task[None]]]:
    """Creates at `RATE` a second for `LAG_S` (each at its scheduled time, whatever the ones
    before it are doing): when the last was sent, and the creates and probes still running."""
    tasks: set[asyncio.Task[None]] = set()
    start = time.perf_counter() + 0.1
    for k in range(int(RATE * LAG_S)):
        delay = start + k / RATE - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        elif delay < -0.005:
            lag.late_sends += 1
        task = asyncio.create_task(create(c, lag, k))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    return time.perf_counter(), tasks


def all_embedded(system: System, ws: str, since: Any, cap_s: float = PROBE_CAP_S) -> float:
    """When (`time.perf_counter()`) every idea of `ws` created since `since` had its
    embedding row, polled every 0.2 s."""
    conn = psycopg2.connect(system.database_url)
    conn.autocommit = True
    started = time.perf_counter()
    try:
        while time.perf_counter() - started < cap_s:
            with conn.cursor() as cur:
                cur.execute(
                    'SELECT count(*) FROM ideas.ideas i LEFT JOIN "similar".embeddings e'
                    " ON e.workspace_id = i.workspace_id AND e.idea_id = i.id"
                    " WHERE i.workspace_id = %s AND i.created_at >= %s AND e.idea_id IS NULL",
                    (ws, since),
                )
                if cur.fetchone()[0] == 0:
                    break
            time.sleep(0.2)
    finally:
        conn.close()
    return time.perf_counter()


def db_now(system: System) -> Any:
    conn = psycopg2.connect(system.database_url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute("SELECT now()")
            return cur.fetchone()[0]
    finally:
        conn.close()


async def lag_run(system: System, ws: dict[str, Any]) -> dict[str, Any]:
    """The embedding lag at `RATE` creates a second in workspace `ws` (module docstring, 3),
    with the embedder's CPU meanwhile."""
    lag = Lag()
    since = await asyncio.to_thread(db_now, system)
    embedder = system.procs["similar-embedder"][0].pid
    cpu0, load0 = tree_cpu(embedder), os.getloadavg()[0]
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        c = Client(session, system.base_url, ws["key"])
        started = time.perf_counter()
        ended, running = await offer(c, lag)
        while len(lag.create_ms) + lag.errors < int(RATE * LAG_S):  # every create answered
            await asyncio.sleep(0.01)
        _, embedded = await asyncio.gather(
            asyncio.gather(*running),
            asyncio.to_thread(all_embedded, system, ws["id"], since, 900.0),
        )
    out = lag_summary(lag, started, ended, embedded)
    out["embedder_cpu_ms_per_create"] = round(
        (tree_cpu(embedder) - cpu0) * 1000 / max(1, len(lag.create_ms)), 2
    )
    out["load_average"] = [round(load0, 1), round(os.getloadavg()[0], 1)]
    return out


def lag_summary(lag: Lag, started: float, ended: float, embedded: float) -> dict[str, Any]:
    found = [s for s in lag.samples if s.found is not None]
    lags = [s.found - s.answered for s in found if s.found is not None]
    probes = sorted(t for s in lag.samples for t in s.probes)
    span = probes[-1] - probes[0] if len(probes) > 1 else 0.0
    return {
        "offered_rps": RATE,
        "seconds": LAG_S,
        "creates": len(lag.create_ms),
        "create_errors": lag.errors,
        "achieved_rps": round(len(lag.create_ms) / (ended - started), 1),
        "late_sends_5ms": lag.late_sends,
        "create_p50_ms": round(percentile(lag.create_ms, 50), 2),
        "create_p99_ms": round(percentile(lag.create_ms, 99), 2),
        "sampled": len(lag.samples),
        "found": len(found),
        "lag_p50_s": round(percentile(lags, 50), 3),
        "lag_p99_s": round(percentile(lags, 99), 3),
        "lag_max_s": round(max(lags, default=0.0), 3),
        "found_within_contract": round(sum(x <= CONTRACT_S for x in lags) / len(lag.samples), 3),
        "contract_s": CONTRACT_S,
        "last_found_after_load_s": round(max(s.found for s in found) - ended, 2) if found else None,
        "all_embedded_after_load_s": round(embedded - ended, 2),
        "probe_every": PROBE_EVERY,
        "probe_s": [PROBE_S, PROBE_FINE_S, PROBE_SLOW_S],
        "probes": len(probes),
        "probe_errors": lag.probe_errors,
        "probe_rps": round(len(probes) / span, 1) if span else 0.0,
        "probe_p50_ms": round(percentile(lag.probe_ms, 50), 2),
        "probe_p99_ms": round(percentile(lag.probe_ms, 99), 2),
    }


# ---- 4: the ideas process's CPU a create, the similar service running and stopped ---------


def tree_cpu(pid: int) -> float:
    """User + system CPU seconds so far of a process and its descendants (those running)."""
    total, stack = 0.0, [pid]
    while stack:
        p = stack.pop()
        if (found := proc_stat(p)) is None:
            continue
        total += found[2]
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return total


async def queue_depth(system: System) -> int:
    """The messages ready in the `similar` queue (a passive declare: it must exist)."""
    conn = await aio_pika.connect(AMQP_URL)
    try:
        ch = await conn.channel()
        queue = await ch.declare_queue(f"{system.amqp_prefix}.similar", passive=True)
        return int(queue.declaration_result.message_count or 0)
    finally:
        await conn.close()


async def set_similar(system: System, running: bool) -> None:
    """Start or stop the similar service's two processes (a no-op when they already are)."""
    for svc in SIMILAR_PROCESSES:
        up = system.procs[svc][0].poll() is None
        if running and not up:
            system.start_one(svc, 0)
        elif not running and up:
            system.stop_one(svc, 0)
    if running:
        await system.wait_ready(timeout=180)


def bodies(n: int) -> list[bytes]:
    return [json.dumps(fresh_text()).encode() for _ in range(n)]


# A control for the similar processes' CPU beside the ideas process: a process spinning a
# given share of one CPU (the embedder's) in the idle class, as the embedder's model does.
SPINNER = """
import os, sys, time
cpu, duty, period = int(sys.argv[1]), float(sys.argv[2]), 0.02
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
while True:
    until = time.thread_time() + duty * period
    while time.thread_time() < until:
        pass
    time.sleep(period * (1 - duty))
"""


async def cpu_round(system: System, ws: dict[str, Any], state: str, duty: float) -> dict[str, Any]:
    """`ROUND_S` of creates at `RATE` a second (a paced generator of its own) with the similar
    processes running, stopped, or stopped beside the control (`SPINNER` at `duty` of the
    embedder's CPU): the ideas process's CPU a create, with its children's, from before the
    first create to a second after the last (its relay publishing the last ones)."""
    running = state == "running"
    await set_similar(system, running)
    if running:  # what the stopped rounds left in the queue, embedded before the round
        await asyncio.to_thread(all_embedded, system, ws["id"], "-infinity", 600.0)
    cpu = str(max(os.sched_getaffinity(0)))
    spin = [sys.executable, "-c", SPINNER, cpu, str(duty)]
    control = subprocess.Popen(spin) if state == "control" else None
    try:
        await asyncio.sleep(2.0)
        pid = system.procs["ideas"][0].pid
        headers = {**client_headers(ws["key"]), "Content-Type": "application/json"}
        url = f"{system.base_url}/api/v1/ideas"
        load, before = os.getloadavg()[0], tree_cpu(pid)
        n = int(RATE * ROUND_S)
        result = await asyncio.to_thread(
            paced_run, url, headers, RATE, ROUND_S, "POST", bodies=bodies(n), warm=0
        )
        await asyncio.sleep(1.0)
        spent = tree_cpu(pid) - before
    finally:
        if control is not None:
            control.kill()
            control.wait()
    out = {
        "similar": state,
        "creates": result["ok"],
        "errors": result["errors"],
        "cpu_ms_per_create": round(spent * 1000 / max(1, result["ok"]), 3),
        "create_p50_ms": result["p50_ms"],
        "create_p99_ms": result["p99_ms"],
        "load_average": round(load, 1),
    }
    if not running:
        out["similar_queue_depth_after"] = await queue_depth(system)
    return out


STATES = ("running", "stopped", "control")


async def cpu_rounds(system: System, ws: dict[str, Any], duty: float) -> dict[str, Any]:
    """`ROUNDS` rounds of each state, in turn and back (running, stopped, control, control,
    stopped, running, ...); each state's median, and the running and control ones against the
    stopped one. Leaves the similar processes running."""
    order = [s for r in range(ROUNDS) for s in (STATES if r % 2 == 0 else STATES[::-1])]
    rounds = [await cpu_round(system, ws, state, duty) for state in order]
    await set_similar(system, True)
    median = {
        side: statistics.median(r["cpu_ms_per_create"] for r in rounds if r["similar"] == side)
        for side in STATES
    }
    return {
        "offered_rps": RATE,
        "round_s": ROUND_S,
        "control_duty": round(duty, 3),
        "rounds": rounds,
        "median_running_ms": round(median["running"], 3),
        "median_stopped_ms": round(median["stopped"], 3),
        "median_control_ms": round(median["control"], 3),
        "ratio": round(median["running"] / median["stopped"], 3),
        "control_ratio": round(median["control"] / median["stopped"], 3),
    }


# ---- the run ------------------------------------------------------------------------------


# ---- the gateway's low-priority concurrency -------------------------------------------------


async def concurrency_runs(n: int) -> list[dict[str, Any]]:
    """`POST /ideas/similar` in a workspace of `n` ideas with the gateway forwarding at most
    each of `LOW_LIMITS` similar queries at once (`LOW_PRIORITY_CONCURRENCY`,
    docs/gateway.md#priorities), each on a system of its own, in the order of the limits and
    back, so that a drift of the machine's load falls on both."""
    out = []
    for limit in LOW_LIMITS + LOW_LIMITS[::-1]:
        env = {"LOW_PRIORITY_CONCURRENCY": str(limit)}
        async with running_system(env=env) as system, aiohttp.ClientSession() as session:
            measured, _ = await size_run(system, session, n)
        keep = ("similar_post_one_client", "similar_post", "aims", "load_average")
        out.append({"limit": limit, **{k: measured[k] for k in keep}})
    return out


def concurrency_lines(runs: list[dict[str, Any]]) -> list[str]:
    header = [
        "gateway forwards at most",
        "1 client: p50 / p99 ms (rps, searches)",
        f"{CLIENTS} clients: p50 / p99 ms (rps, searches)",
        f"aims with {CLIENTS}",
        "load average",
    ]
    rows = [
        [
            r["limit"],
            _latency(r["similar_post_one_client"]),
            _latency(r["similar_post"]),
            _aims(r),
            r["load_average"],
        ]
        for r in runs
    ]
    return [
        f"The gateway's low-priority concurrency (`LOW_PRIORITY_CONCURRENCY`), "
        f"{LOW_SIZE:,} ideas, each run on a system of its own, in turn:",
        "",
        *table(header, rows),
    ]


async def main() -> dict[str, Any]:
    results: dict[str, Any] = {
        "note": "random unit vectors in the index: latency and memory, not quality",
        "model": MODEL.model_id,
        "dim": DIM,
        "machine_cpus": os.cpu_count(),
        "index_memory_1m": index_bytes_per_million(),
        "prefilter_recall": prefilter_recall(),
        "sizes": [],
    }
    async with running_system() as system, aiohttp.ClientSession() as session:
        for n in SIZES:
            measured, ws = await size_run(system, session, n)
            results["sizes"].append(measured)
            write(results)  # each part as soon as it is measured
            if "lag" not in results:  # the first size's workspace: a realistic size
                results["lag"] = await lag_run(system, ws)
                write(results)
                # the control spins the embedder's share of a CPU in the lag part
                duty = min(0.9, results["lag"]["embedder_cpu_ms_per_create"] * RATE / 1000)
                results["cpu_per_create"] = await cpu_rounds(system, ws, duty)
                write(results)
    if LOW_LIMITS:
        results["low_priority_concurrency"] = await concurrency_runs(LOW_SIZE)
        write(results)
    print(json.dumps(results, indent=2))
    return results


def write(results: dict[str, Any]) -> None:
    write_results("similar", results, markdown(results))


# ---- the report ---------------------------------------------------------------------------


def _latency(x: dict[str, Any]) -> str:
    return f"{x['p50_ms']} / {x['p99_ms']} ({x['rps']}, {x['requests']} searches)"


def _aims(s: dict[str, Any]) -> str:
    met = s["aims"]
    return (
        f"p50 {'met' if met['p50_met'] else 'missed'}, p99 {'met' if met['p99_met'] else 'missed'}"
    )


def sizes_table(sizes: list[dict[str, Any]]) -> list[str]:
    header = [
        "ideas",
        "seed s",
        "first search (index load) s",
        "1 client: p50 / p99 ms (rps, searches)",
        f"{CLIENTS} clients: p50 / p99 ms (rps, searches)",
        f"aims with {CLIENTS} (p50 < {AIM_P50_MS:.0f}, p99 < {AIM_P99_MS:.0f} ms)",
        "texts embedded: model / recent",
        "errors",
        "search process RSS before / after load MB",
        "load average",
    ]
    rows = [
        [
            f"{s['ideas']:,}",
            s["seed_s"],
            s["first_search_s"],
            _latency(s["similar_post_one_client"]),
            _latency(s["similar_post"]),
            _aims(s),
            f"{s['texts_embedded'].get('model', 0)} / {s['texts_embedded'].get('recent', 0)}",
            s.get("search_errors", 0),
            f"{s['rss_before_mb']} / {s['rss_after_load_mb']}",
            s["load_average"],
        ]
        for s in sizes
    ]
    return table(header, rows)


def index_note(mem: dict[str, Any], rec: dict[str, Any], dim: int) -> str:
    return (
        f"Index memory for {mem['vectors']:,} vectors: {mem['mib_used']} MiB "
        f"({mem['bytes_per_vector']} bytes a vector: int8 vector, sign bits, id, live flag)."
        f" A search over them, in one thread: {mem['search_ms']['first_pass']} ms with the "
        f"first pass on 192 bits, {mem['search_ms']['one_pass']} ms in one pass over all {dim}."
        f" Prefilter recall@10 on {rec['vectors']:,} clustered vectors: "
        f"{rec['recall_at_10_tight']} in tight clusters (10th neighbour at cosine "
        f"{rec['tenth_cosine_tight']}), {rec['recall_at_10_loose']} in loose ones "
        f"({rec['tenth_cosine_loose']})."
    )


def lag_lines(g: dict[str, Any]) -> list[str]:
    fine, until, slow = g["probe_s"]
    rows = [
        [
            "creates",
            f"{g['creates']} in {g['seconds']:.0f} s, {g['achieved_rps']} a second "
            f"(offered {g['offered_rps']}; {g['create_errors']} errors, {g['late_sends_5ms']} "
            "sent 5 ms or more late)",
        ],
        ["create p50 / p99 ms", f"{g['create_p50_ms']} / {g['create_p99_ms']}"],
        ["sampled / found", f"{g['sampled']} / {g['found']}"],
        ["lag p50 / p99 / max s", f"{g['lag_p50_s']} / {g['lag_p99_s']} / {g['lag_max_s']}"],
        [
            f"found within {g['contract_s']:.0f} s (the contract)",
            f"{g['found_within_contract']:.1%}",
        ],
        [
            "the last sampled idea found, after the load stopped",
            f"{g['last_found_after_load_s']} s",
        ],
        [
            "every created idea embedded, after the load stopped",
            f"{g['all_embedded_after_load_s']} s",
        ],
        [
            "probes",
            f"{g['probes']}, {g['probe_rps']} a second, p50 / p99 {g['probe_p50_ms']} / "
            f"{g['probe_p99_ms']} ms, {g['probe_errors']} errors",
        ],
        ["the embedder's CPU a create", f"{g['embedder_cpu_ms_per_create']} ms"],
        ["load average, start / end", " / ".join(map(str, g["load_average"]))],
    ]
    return [
        "Embedding lag: from a create's answer to the answer of the `POST /ideas/similar` of its "
        f"own text that found it (every {g['probe_every']}th create, probed from when the sample "
        f"before it was found: every {fine} s for {until} s, then every {slow} s), in the first "
        "size's workspace.",
        "",
        *table(["", "measured"], rows),
    ]


def cpu_lines(p: dict[str, Any]) -> list[str]:
    rows = [
        [
            i + 1,
            r["similar"],
            r["creates"],
            r["cpu_ms_per_create"],
            r["create_p50_ms"],
            r["create_p99_ms"],
            r.get("similar_queue_depth_after", ""),
            r["load_average"],
        ]
        for i, r in enumerate(p["rounds"])
    ]
    header = [
        "round",
        "similar processes",
        "creates",
        "ideas CPU ms a create",
        "create p50 ms",
        "create p99 ms",
        "`similar` queue depth after",
        "load average",
    ]
    return [
        f"The ideas process's CPU a create (with its children, /proc), {p['offered_rps']} "
        f"creates a second for {p['round_s']:.0f} s a round: median with the similar processes "
        f"running {p['median_running_ms']} ms, stopped {p['median_stopped_ms']} ms, ratio "
        f"{p['ratio']} (the aim: within 5%). Stopped, the `similar` queue still exists and is "
        "bound: the ideas service publishes the same messages, which wait in it. The control: "
        "the similar processes stopped, a process spinning "
        f"{p.get('control_duty', '')} of the embedder's CPU in the idle class (the embedder's "
        f"share in the lag part): median {p.get('median_control_ms', '')} ms, against stopped "
        f"{p.get('control_ratio', '')}: what any busy CPU beside the ideas process costs it "
        "on this machine.",
        "",
        *table(header, rows),
    ]


def markdown(r: dict[str, Any]) -> str:
    lines = [
        "# Similar ideas benchmark",
        "",
        f"`python -m bench similar` (bench/similar.py), the model `{r['model']}`, "
        f"{r['machine_cpus']} CPUs. Vectors in the index are random unit vectors: the figures "
        "are latency and memory, not quality. `POST /ideas/similar`, each search a text never "
        "searched before:",
        "",
        *sizes_table(r["sizes"]),
        "",
        index_note(r["index_memory_1m"], r["prefilter_recall"], r.get("dim", 384)),
    ]
    if "lag" in r:
        lines += ["", *lag_lines(r["lag"])]
    if "cpu_per_create" in r:
        lines += ["", *cpu_lines(r["cpu_per_create"])]
    if "low_priority_concurrency" in r:
        lines += ["", *concurrency_lines(r["low_priority_concurrency"])]
    return "\n".join(lines)
