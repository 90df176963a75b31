"""Similar ideas benchmark (docs/similar.md), through the gateway on a system of its own.

For each size in `BENCH_SIMILAR_SIZES` (default 100,000 and 1,000,000 ideas in one workspace):
ideas are inserted in bulk by `ideasctl seed` (COPY) and their vectors by COPY: random unit vectors (the seeder's
titles combine a few dozen words: their vectors would crowd into clusters of ties), so these figures are latency and
memory, not quality (quality: tests/similar/test_quality.py). The similar service's copy of the
ideas is filled as `ideasctl similar rebuild`'s backfill fills it. Measured:

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
import functools
import io
import json
import os
import random
import re
import statistics
import struct
import tempfile
import time
import uuid
from dataclasses import dataclass
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
    table,
    timed_loop,
    write_results,
)
from services.similar import index as similar
from services.similar.embedding import DIM, MODEL_ID, idea_text, quantize
from services.similar.index import Index, text_hash
from tests.support.processes import AMQP_URL, System, create_database, drop_database

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
        hashes = [text_hash(MODEL_ID, idea_text(r[1], r[2])) for r in rows]
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
                    'SELECT count(*) FROM ideas.ideas i LEFT JOIN "similar".embeddings e'
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
# (`ims-similar`, in the idle scheduling class); a tree without it has no such part.
BELOW = ("model", "similar")


def cpu_by_part(system: System) -> dict[str, float]:
    """CPU seconds so far of the system's processes by part: each service, the model's
    processes (in the idle class or at a lower nice: `model`: the embedder, the search
    process's transformer workers), PostgreSQL's processes and RabbitMQ's. The search process
    is its own part (`similar`)."""
    part_of = {p.pid: svc for svc, procs in system.procs.items() for p in procs}
    out: dict[str, float] = {}
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        if (found := proc_stat(pid)) is None:
            continue
        name, ppid, cpu = found
        if pid in part_of:
            part = "model" if part_of[pid] == "similar-embedder" else part_of[pid]
        elif part_of.get(ppid) == "similar":  # the search process's transformer worker
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


PHASE_S = 1.0  # one phase of an alternating run
GUARD_S = 0.05  # a phase's first moments, left out of every phase's figures
LEAD_S = 3.0  # the load generators' start-up, before the first phase
WARM_ROUNDS = 2  # the first rounds of phases, left out: the generators warming up
ALTERNATING_S = float(os.environ.get("BENCH_ALTERNATING_S", "480"))  # the paced reads' run
BOOTSTRAP = 1000
# The paced similar queries' rate, a share of the paced reads': not what they reached beside
# the saturated reads, which is the gateway's turn for them (docs/gateway.md#priorities)
# more than the load a service sees.
SIMILAR_SHARE = float(os.environ.get("BENCH_SIMILAR_SHARE", "0.1"))

Phase = tuple[int, str, float, float]  # round, name, start, end (`time.perf_counter()`)


def schedule(names: list[str], seconds: float, start: float, seed: int = 3) -> list[Phase]:
    """Phases of `PHASE_S` from `start` for `seconds`: rounds in which each of `names` takes
    one turn, in an order shuffled for each round."""
    rng = random.Random(seed)
    phases: list[Phase] = []
    for rnd in range(WARM_ROUNDS + max(1, round(seconds / PHASE_S / len(names)))):
        order = list(names)
        rng.shuffle(order)
        for name in order:
            begin = start + len(phases) * PHASE_S
            phases.append((rnd, name, begin, begin + PHASE_S))
    return phases


async def alternating(
    measure: Any, loads: dict[str, Any], seconds: float
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[Phase]]:
    """A measure's run (`measure(windows)`, blocking: a load generator's child process, each
    request with its send time, `sent_at`) while the phases in `loads` take turns (`schedule`):
    each load's generator (`load(windows)`, the same kind, None: nothing) sends within its own
    phases only. A machine's speed moves over seconds and minutes, so comparing runs made one
    after the other compares moments as much as loads; phases a second long, interleaved, meet
    the same moments. Every generator is a process of its own, started before the first phase,
    so this process does nothing meanwhile. The measure's result, each load's, and the phases;
    the calls a load leaves in flight at a phase's end run into the next phase's first
    moments (`GUARD_S`, left out)."""
    phases = schedule(list(loads), seconds, time.perf_counter() + LEAD_S)
    whole = [(phases[0][2], phases[-1][3])]
    names = [name for name, load in loads.items() if load is not None]
    results = await asyncio.gather(
        asyncio.to_thread(measure, whole),
        *(
            asyncio.to_thread(loads[name], [(s, e) for _, n, s, e in phases if n == name])
            for name in names
        ),
    )
    return results[0], dict(zip(names, results[1:], strict=True)), phases


def _p(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q, method="inverted_cdf"))


def _pooled_p99(rounds: dict[int, np.ndarray], pick: Any) -> float:
    return _p(np.concatenate([rounds[r] for r in pick]), 99)


def _median_p99(rounds: dict[int, np.ndarray], pick: Any) -> float:
    return float(np.median([_p(rounds[r], 99) for r in pick]))


def _phase_parts(
    result: dict[str, Any], phases: list[Phase]
) -> tuple[dict[str, dict[int, np.ndarray]], dict[str, float]]:
    """The latencies of a run's requests by phase type and round (warm rounds and each
    phase's guard left out), and each type's seconds."""
    latency = np.asarray(result["latencies_ms"])
    sent = np.asarray(result["sent_at"])
    order = np.argsort(sent)
    latency, sent = latency[order], sent[order]
    parts: dict[str, dict[int, np.ndarray]] = {}
    seconds: dict[str, float] = {}
    for rnd, name, start, end in phases:
        if rnd < WARM_ROUNDS:
            continue
        lo, hi = np.searchsorted(sent, [start + GUARD_S, end])
        if hi > lo:
            parts.setdefault(name, {})[rnd] = latency[lo:hi]
            seconds[name] = seconds.get(name, 0.0) + end - start - GUARD_S
    return parts, seconds


def _phase_summary(rounds: dict[int, np.ndarray], seconds: float) -> dict[str, Any]:
    values = np.concatenate(list(rounds.values()))
    return {
        "phases": len(rounds),
        "requests": len(values),
        "rps": round(len(values) / seconds, 1),
        "p50_ms": round(_p(values, 50), 2),
        "p99_ms": round(_p(values, 99), 2),
        "phase_p99_median_ms": round(_median_p99(rounds, list(rounds)), 2),
        "phase_p99_max_ms": round(max(_p(v, 99) for v in rounds.values()), 2),
    }


def _changes(
    out: dict[str, Any],
    parts: dict[str, dict[int, np.ndarray]],
    rng: np.random.Generator,
    pair: tuple[str, str],
    suffix: str,
) -> None:
    """`pair`'s first type's pooled p99 and phases' median p99 against the second's, with 90%
    intervals (a bootstrap over their common rounds), into `out`."""
    name, other = pair
    common = sorted(set(parts[name]) & set(parts[other]))
    for key, stat in (("p99", _pooled_p99), ("phase_p99_median", _median_p99)):
        draws = []
        for _ in range(BOOTSTRAP):
            pick = rng.choice(common, len(common))
            draws.append(stat(parts[name], pick) / stat(parts[other], pick) - 1)
        point = out[name][f"{key}_ms"] / out[other][f"{key}_ms"] - 1
        out[name][f"{key}_change{suffix}"] = round(point, 3)
        out[name][f"{key}_change{suffix}_90"] = [
            round(float(np.percentile(draws, 5)), 3),
            round(float(np.percentile(draws, 95)), 3),
        ]


def by_phase(
    result: dict[str, Any],
    phases: list[Phase],
    base: str,
    against: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The requests of an alternating run by phase type: p50, p99 and rate of all its requests
    together, and the median of its phases' own p99s (each phase's second alone: a stall of
    the whole machine now and then, seen in every phase type alike, moves the pooled p99 of
    the type it lands in, the median hardly). Each other type's changes of both against
    `base`'s, with 90% intervals (a bootstrap over the rounds: the rounds drawn with
    replacement, `BOOTSTRAP` times); `against` adds, for a type, its changes against another
    type's (`p99_change_vs`, `phase_p99_median_change_vs` and their intervals)."""
    parts, seconds = _phase_parts(result, phases)
    out: dict[str, Any] = {
        name: _phase_summary(rounds, seconds[name]) for name, rounds in parts.items()
    }
    rng = np.random.default_rng(0)
    for name in parts:
        if name != base:
            _changes(out, parts, rng, (name, base), "")
    for name, other in (against or {}).items():
        out[name]["vs"] = other
        _changes(out, parts, rng, (name, other), "_vs")
    return out


async def loop_lateness(system: System) -> dict[str, int]:
    """Each part's count so far of event-loop wake-ups at least 10 ms late
    (`ims_event_loop_lag_seconds`, docs/running.md#event-loop-lag); a tree without the
    metric has no parts."""
    out: dict[str, int] = {}
    async with aiohttp.ClientSession() as session:
        for svc, ports in system.ports.items():
            for i in range(len(ports)):
                try:
                    async with session.get(system.metrics_url(svc, i) + "/metrics") as r:
                        text = await r.text()
                except aiohttp.ClientError:
                    continue
                total = re.search(r"^ims_event_loop_lag_seconds_count (\S+)$", text, re.M)
                under = re.search(
                    r'^ims_event_loop_lag_seconds_bucket\{le="0.01"\} (\S+)$', text, re.M
                )
                if total and under:
                    late = int(float(total.group(1)) - float(under.group(1)))
                    out[svc] = out.get(svc, 0) + late
    return out


def stalls(result: dict[str, Any], lateness: dict[str, int]) -> dict[str, Any]:
    """Where a run's tail could have come from besides the load: its generator's own
    lateness (sends late by 5 ms or more, its loop's stalls of 5 ms or more and the longest)
    and each process's loop wake-ups 10 ms late or more (`lateness`)."""
    own = [late for _, late in result.get("stalls", [])]
    return {
        "generator_late_sends": result.get("late_starts", 0),
        "generator_stalls": len(own),
        "generator_longest_stall_ms": round(max(own, default=0.0) * 1000, 1),
        "service_loops_late_10ms": lateness,
    }


@dataclass(frozen=True)
class Targets:
    """The reads' and the similar queries' requests of `reads_comparison`."""

    headers: dict[str, str]
    reads: list[str]  # `GET /ideas?limit=25` and `GET /ideas/{id}`, in turn
    read_one: list[str]  # `GET /ideas/{id}`
    similar: str
    bodies: list[bytes]


def targets(system: System, key: str, ids: list[str]) -> Targets:
    base = system.base_url
    return Targets(
        headers={**client_headers(key), "Content-Type": "application/json"},
        reads=[
            f"{base}/api/v1/ideas?limit=25" if i % 2 == 0 else f"{base}/api/v1/ideas/{ids[i]}"
            for i in range(len(ids))
        ],
        read_one=[f"{base}/api/v1/ideas/{i}" for i in ids],
        similar=f"{base}/api/v1/ideas/similar",
        bodies=[json.dumps({"title": TEXTS[n % 8] + f" {n}"}).encode() for n in range(len(ids))],
    )


async def saturated_reads(system: System, t: Targets) -> tuple[dict[str, Any], list[float]]:
    """The saturated run: the reads from `CLIENTS` clients, alone and beside similar queries
    from 2 (`by_phase`), and the similar queries' latencies."""
    await settle(system)
    result, loaded, phases = await alternating(
        lambda windows: loop_run(t.reads, t.headers, CLIENTS, 0, windows=windows),
        {
            "alone": None,
            "similar": lambda windows: loop_run(
                [t.similar], t.headers, 2, 0, "POST", t.bodies, windows
            ),
        },
        round(ALTERNATING_S / 4),
    )
    return by_phase(result, phases, "alone"), loaded["similar"]["latencies_ms"]


def paced_rates(saturated: dict[str, Any], similar_in_reads: float) -> dict[str, float]:
    """The paced run's rates: the reads at half what they reached beside similar queries,
    saturated; the similar queries at `SIMILAR_SHARE` of that; the control at their CPU."""
    reads_rps = round(saturated["similar"]["rps"] / 2)
    similar_rps = round(reads_rps * SIMILAR_SHARE, 1)
    return {
        "reads": reads_rps,
        "similar": similar_rps,
        "control": round(similar_rps * similar_in_reads, 1),
    }


async def paced_reads(system: System, t: Targets, rates: dict[str, float]) -> dict[str, Any]:
    """The paced run (`ALTERNATING_S`): the reads alone, beside similar queries, beside the
    control and beside as many more reads as similar queries; what else was late meanwhile."""

    def paced(url: str, rate: float, **kw: Any) -> Any:
        return lambda windows: paced_run(
            url, t.headers, rate, 0, raw=True, windows=windows, warm=4, **kw
        )

    await settle(system)
    lateness = await loop_lateness(system)
    result, loaded, phases = await alternating(
        paced(t.reads[0], rates["reads"], paths=t.reads),
        {
            "alone": None,
            "similar": paced(t.similar, rates["similar"], method="POST", bodies=t.bodies),
            "control": paced(t.read_one[0], rates["control"], paths=t.read_one),
            # as many more requests as similar queries: what any route at their rate costs
            "as_many_reads": paced(t.read_one[0], rates["similar"], paths=t.read_one),
        },
        ALTERNATING_S,
    )
    after = await loop_lateness(system)
    return {
        "paced": by_phase(result, phases, "alone", {"similar": "as_many_reads"}),
        "paced_stalls": stalls(result, {k: v - lateness.get(k, 0) for k, v in after.items()}),
        # each load generator's CPU a request: the machine's too, beside the system's
        "paced_generators_cpu_ms": {
            "reads": result.get("cpu_ms_per_request"),
            **{name: r.get("cpu_ms_per_request") for name, r in loaded.items()},
        },
        "similar_ms": loaded["similar"]["latencies_ms"],
    }


async def reads_comparison(
    system: System,
    key: str,
    ids: list[str],
    similar_in_reads: float,
    rates: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The reads' side of `mixed`, on a workspace with `ids` (key `key`): `by_phase` of the
    saturated run and of the paced one, the similar queries' own latencies in each
    (`similar_beside_reads`, p50, p99 and count; the search process runs in the idle scheduling
    class: it takes the CPU the reads leave), and the paced rates (`rates`: reads, similar,
    control), from the saturated run unless given (to offer another system the same load)."""
    t = targets(system, key, ids)
    saturated, similar_saturated = await saturated_reads(system, t)
    if rates is None:
        rates = paced_rates(saturated, similar_in_reads)
    paced = await paced_reads(system, t, rates)
    similar_ms = {"saturated": similar_saturated, "paced": paced["similar_ms"]}
    return {
        "saturated": saturated,
        "paced": paced["paced"],
        "paced_stalls": paced["paced_stalls"],
        "paced_generators_cpu_ms": paced["paced_generators_cpu_ms"],
        "similar_beside_reads": {
            mode: {
                "p50_ms": round(percentile(took, 50), 2),
                "p99_ms": round(percentile(took, 99), 2),
                "requests": len(took),
            }
            for mode, took in similar_ms.items()
        },
        "rates": rates,
    }


async def create_idea(c: Client, i: int) -> None:
    await c.call(
        "POST",
        "/api/v1/ideas",
        json={"title": f"Created idea {i}", "summary": "Something to embed"},
    )


def paced_creates(system: System, key: str, rate: float) -> dict[str, Any]:
    headers = {**client_headers(key), "Content-Type": "application/json"}
    body = json.dumps({"title": "Paced idea", "summary": "Something to embed"}).encode()
    url = f"{system.base_url}/api/v1/ideas"
    return paced_run(url, headers, rate, SECONDS, method="POST", body=body, raw=True)


Creates = tuple[dict[str, list[dict[str, Any]]], dict[str, list[float]]]  # runs, caught up s


async def create_phase(
    system: System, c: Client, ws: dict[str, Any], rate: float | None, with_embeddings: bool
) -> tuple[str, dict[str, Any], float | None]:
    """One side of the creates' comparison: from `CLIENTS` clients as fast as they go, or
    offered at `rate` a second (open loop); the `similar` queue unbound for the run without
    embeddings. Its name, its result, and with embeddings, the seconds until they caught up."""
    name = "create" if rate is None else "create_paced"
    name += "_with_embeddings" if with_embeddings else "_without_embeddings"
    await settle(system)
    since = db_now(system)
    if not with_embeddings:
        await bind(system, False)
    try:
        if rate is not None:
            result = await asyncio.to_thread(paced_creates, system, ws["key"], rate)
        else:
            result = await timed_loop(
                functools.partial(create_idea, c), CLIENTS, SECONDS, 5_000, raw=True
            )
    finally:
        if not with_embeddings:
            await bind(system, True)
    caught = await caught_up(system, ws["id"], since) if with_embeddings else None
    return name, result, caught


async def create_runs(
    system: System, c: Client, ws: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, list[float]], float]:
    """`ROUNDS` rounds of creates, the two sides in turn and their order swapped each round,
    saturated and then paced at half the rate the side with embeddings reached in the first
    round: each side's latencies pooled, the seconds each burst's embeddings took to catch
    up, and the paced rate."""
    runs: dict[str, list[dict[str, Any]]] = {}
    caught: dict[str, list[float]] = {"saturated": [], "paced": []}
    rate: float | None = None
    for r in range(ROUNDS):
        order = (True, False) if r % 2 == 0 else (False, True)
        for paced in (False, True):
            if paced and rate is None:
                rate = round(runs["create_with_embeddings"][0]["rps"] / 2)
            for with_embeddings in order:
                name, result, took = await create_phase(
                    system, c, ws, rate if paced else None, with_embeddings
                )
                runs.setdefault(name, []).append(result)
                if took is not None:
                    caught["paced" if paced else "saturated"].append(took)
    assert rate is not None
    return {name: pooled(results) for name, results in runs.items()}, caught, rate


def reads_fields(reads: dict[str, Any], caught: dict[str, list[float]]) -> dict[str, Any]:
    """`mixed`'s figures of the reads' runs (`reads_comparison`) and of the embeddings'
    catching up."""
    saturated, paced = reads["saturated"], reads["paced"]
    beside = reads["similar_beside_reads"]
    return {
        "rounds": ROUNDS,
        "alternating": {
            "phase_s": PHASE_S,
            "guard_s": GUARD_S,
            "saturated_s": round(ALTERNATING_S / 4),
            "warm_rounds": WARM_ROUNDS,
            "paced_s": ALTERNATING_S,
        },
        "reads_alone": saturated["alone"],
        "reads_under_similar_load": saturated["similar"],
        "reads_paced_alone": paced["alone"],
        "reads_paced_under_similar_load": paced["similar"],
        "reads_paced_beside_control": paced["control"],
        "reads_paced_beside_as_many_reads": paced["as_many_reads"],
        "embeddings_caught_up_s": max(caught["saturated"]),
        "paced_embeddings_caught_up_s": max(caught["paced"]),
        "similar_calls_meanwhile": beside["saturated"]["requests"],
        "similar_calls_meanwhile_paced": beside["paced"]["requests"],
        "similar_paced_rate": reads["rates"]["similar"],
        **{f"similar_beside_reads_{mode}": summary for mode, summary in beside.items()},
    }


def changes(out: dict[str, Any], reads: dict[str, Any]) -> dict[str, Any]:
    """The creates' p50 with embeddings against without, and the reads' p99 changes."""
    saturated, paced = reads["saturated"], reads["paced"]
    found: dict[str, Any] = {}
    for name, changed, base in (
        ("create_p50_slowdown", "create_with_embeddings", "create_without_embeddings"),
        (
            "create_paced_p50_slowdown",
            "create_paced_with_embeddings",
            "create_paced_without_embeddings",
        ),
    ):
        b = out[base]["p50_ms"]
        found[name] = round(out[changed]["p50_ms"] / b - 1, 3) if b else None
    found["reads_p99_change"] = saturated["similar"]["p99_change"]
    found["reads_paced_p99_change"] = paced["similar"]["p99_change"]
    found["reads_paced_control_p99_change"] = paced["control"]["p99_change"]
    found["reads_paced_as_many_reads_p99_change"] = paced["as_many_reads"]["p99_change"]
    return found


async def mixed(
    system: System, session: aiohttp.ClientSession, similar_in_reads: float
) -> dict[str, Any]:
    """Create p50 with and without embeddings; other endpoints' p99 with and without
    similar-query load (a small workspace, so the similar load is the model, not the scan).

    Creates: from 4 clients as fast as they go (the machine saturated), then offered at half
    the rate the side with embeddings reached in the first round (paced, open loop: what a
    service below its capacity sees). `ROUNDS` rounds, the two sides in turn and their order
    swapped each round; each side's latencies pooled over the rounds.

    Reads (`GET /ideas?limit=25` and `GET /ideas/{id}`, in turn): one long run each, in which
    phases of a second take turns (`alternating`): the reads alone, and beside similar
    queries. Saturated, for a quarter of `ALTERNATING_S`: the reads from 4 clients as fast as
    they go, the similar queries from 2. Paced, for `ALTERNATING_S`: the reads offered at half
    the rate they reached beside similar queries, saturated, and the similar queries at
    `SIMILAR_SHARE` of that, with two more phases: the control, `GET /ideas/{id}` offered at
    the similar queries' rate times `similar_in_reads` (the same CPU at the requests'
    priority, no model), what that much more work costs the reads' p99 on this machine
    whatever it is; and as many `GET /ideas/{id}` as similar queries (`as_many_reads`), what
    that many more requests through the gateway cost. Every load comes from a process of its
    own."""
    ws, c, ids = await small_workspace(system, session)
    out, caught, create_rate = await create_runs(system, c, ws)
    reads = await reads_comparison(system, ws["key"], ids, similar_in_reads)
    out.update(reads_fields(reads, caught))
    out["control_paced_rate"] = reads["rates"]["control"]
    out["similar_in_reads"] = similar_in_reads
    out["create_paced_rate"] = create_rate
    out["reads_paced_rate"] = reads["rates"]["reads"]
    out.update(changes(out, reads))
    out["paced_stalls"] = reads["paced_stalls"]
    out["paced_generators_cpu_ms"] = reads["paced_generators_cpu_ms"]
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
        if baseline:
            # Before the sizes: their million rows leave PostgreSQL writing them out for
            # minutes, which the code before would meet and this tree's did not (this
            # tree's system idles meanwhile).
            results["reads_before"] = await reads_before(baseline, results["mixed"])
            write(results)
        for n in SIZES:
            results["sizes"].append(await size_run(system, session, n))
            write(results)  # each size as soon as it is measured
    print(json.dumps(results, indent=2))
    return results


async def reads_before(baseline: str, after: dict[str, Any]) -> dict[str, Any]:
    """`reads_comparison` of commit `baseline`'s code on a system of its own, offered the same
    paced load as this tree's in `mixed` (`after`)."""
    from bench.webhooks import source_tree

    rates = {
        "reads": after["reads_paced_rate"],
        "similar": after["similar_paced_rate"],
        "control": after["control_paced_rate"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        url = await asyncio.to_thread(create_database)
        system = await start_system(url, source_tree(baseline, tmp))
        try:
            async with aiohttp.ClientSession() as session:
                ws, _, ids = await small_workspace(system, session)
                reads = await reads_comparison(
                    system, ws["key"], ids, after["similar_in_reads"], rates
                )
        finally:
            await stop_system(system)
            await asyncio.to_thread(drop_database, url)
    out: dict[str, Any] = {"baseline": baseline, "rates": rates}
    for mode in ("saturated", "paced"):
        out[mode] = reads[mode]
        out[f"similar_beside_reads_{mode}"] = reads["similar_beside_reads"][mode]
    out["paced_stalls"] = reads["paced_stalls"]
    return out


def write(results: dict[str, Any]) -> None:
    write_results("similar", results, markdown(results))


def _change(x: dict[str, Any], key: str) -> str:
    """A change with its 90% interval, `+1.2% (-0.3% to +2.5%)`; empty when `x` has none."""
    if f"{key}_change" not in x:
        return ""
    lo, hi = x[f"{key}_change_90"]
    return f"{x[f'{key}_change']:+.1%} ({lo:+.1%} to {hi:+.1%})"


def _latency(x: dict[str, Any]) -> str:
    return f"{x['p50_ms']} / {x['p99_ms']} ({x['rps']})"


def sizes_table(sizes: list[dict[str, Any]]) -> list[str]:
    header = [
        "ideas",
        "seed s",
        "first search (index load) s",
        "POST /ideas/similar, 1 client: p50 / p99 ms (rps)",
        f"{CLIENTS} clients: p50 / p99 ms (rps)",
        "search process RSS before / after load MB",
    ]
    rows = [
        [
            f"{s['ideas']:,}",
            s["seed_s"],
            s["first_search_s"],
            _latency(one) if (one := s.get("similar_post_one_client")) else "—",
            _latency(s["similar_post"]),
            f"{s['rss_before_mb']} / {s['rss_after_load_mb']}",
        ]
        for s in sizes
    ]
    return table(header, rows)


def index_note(mem: dict[str, Any], rec: dict[str, Any]) -> str:
    return (
        f"Index memory for {mem['vectors']:,} vectors: {mem['mib_used']} MiB "
        f"({mem['bytes_per_vector']} bytes a vector: int8 vector, sign bits, id, live flag)."
        f" A search over them, in one thread: {mem['search_ms']['first_pass']} ms with the "
        f"first pass on 192 bits, {mem['search_ms']['one_pass']} ms in one pass over all 384."
        f" Prefilter recall@10 on {rec['vectors']:,} clustered vectors: "
        f"{rec['recall_at_10_tight']} in tight clusters (10th neighbour at cosine "
        f"{rec['tenth_cosine_tight']}), {rec['recall_at_10_loose']} in loose ones "
        f"({rec['tenth_cosine_loose']})."
    )


LOADS = (
    "create_with_embeddings",
    "create_without_embeddings",
    "create_paced_with_embeddings",
    "create_paced_without_embeddings",
    "reads_alone",
    "reads_under_similar_load",
    "reads_paced_alone",
    "reads_paced_under_similar_load",
    "reads_paced_beside_control",
    "reads_paced_beside_as_many_reads",
)


def loads_table(m: dict[str, Any]) -> list[str]:
    a = m["alternating"]
    note = (
        f"Creates: {m['rounds']} rounds, the two sides in turn; each side's latencies pooled "
        "over the rounds. Reads: one run each, saturated "
        f"({a['saturated_s']} s) and paced ({a['paced_s']} s), "
        f"in which phases of {a['phase_s']} s take turns in a shuffled order "
        f"(the first {a['guard_s'] * 1000:.0f} ms of each left out); the "
        "p99 changes with a 90% interval, a bootstrap over the rounds of phases."
    )
    header = [
        "load",
        "p50 ms",
        "p99 ms",
        "rps",
        "p99 vs alone (90% interval)",
        "phases' p99, median ms",
        "the same vs alone (90% interval)",
    ]
    rows = [
        [
            name,
            x["p50_ms"],
            x["p99_ms"],
            x["rps"],
            _change(x, "p99"),
            x.get("phase_p99_median_ms", ""),
            _change(x, "phase_p99_median"),
        ]
        for name in LOADS
        if (x := m[name])
    ]
    return [note, "", *table(header, rows)]


def loads_notes(m: dict[str, Any]) -> list[str]:
    vs = m["reads_paced_under_similar_load"]
    return [
        "Saturated (4 clients as fast as they go): create p50 with embeddings vs without "
        f"{m['create_p50_slowdown']:+.1%} (the embeddings caught up "
        f"{m['embeddings_caught_up_s']} s after the burst); reads p99 under similar load vs "
        f"alone {m['reads_p99_change']:+.1%} ({m['similar_calls_meanwhile']} similar calls "
        "meanwhile).",
        "",
        f"Paced ({m['create_paced_rate']} creates, {m['reads_paced_rate']} reads a second): "
        "create p50 with embeddings vs without "
        f"{m['create_paced_p50_slowdown']:+.1%} (caught up {m['paced_embeddings_caught_up_s']}"
        f" s after); reads p99 under similar load vs alone {m['reads_paced_p99_change']:+.1%}"
        f" ({m['similar_calls_meanwhile_paced']} similar calls meanwhile, offered at "
        f"{m['similar_paced_rate']} a second).",
        "",
        f"The control: the paced reads beside {m['control_paced_rate']} more `GET /ideas/{{id}}`"
        f" a second (the similar queries' rate times {m['similar_in_reads']}, a similar query's "
        "CPU at the requests' priority in reads, measured below; no model): reads p99 vs alone "
        f"{m['reads_paced_control_p99_change']:+.1%}. Beside as many more `GET /ideas/{{id}}`"
        f" as similar queries ({m['similar_paced_rate']} a second: what any route at their "
        "rate costs the reads, the gateway's part above all): "
        f"{m['reads_paced_as_many_reads_p99_change']:+.1%}.",
        "",
        "The paced reads beside similar queries against beside as many more reads "
        "(the same number of requests, the one difference the route): p99 "
        f"{vs['p99_change_vs']:+.1%} ({vs['p99_change_vs_90'][0]:+.1%} to "
        f"{vs['p99_change_vs_90'][1]:+.1%}), phases' p99 median "
        f"{vs['phase_p99_median_change_vs']:+.1%} "
        f"({vs['phase_p99_median_change_vs_90'][0]:+.1%} to "
        f"{vs['phase_p99_median_change_vs_90'][1]:+.1%}).",
        "",
    ]


def stalls_note(m: dict[str, Any]) -> list[str]:
    """What else was late in the paced run, and the similar queries' own latency."""
    lines = []
    if st := m.get("paced_stalls"):
        loops = ", ".join(f"{n} times ({svc})" for svc, n in st["service_loops_late_10ms"].items())
        generators = ", ".join(
            f"{name} {ms}" for name, ms in m.get("paced_generators_cpu_ms", {}).items()
        )
        lines += [
            "Besides the loads, in the paced run: the reads' generator sent "
            f"{st['generator_late_sends']} requests 5 ms or more late and its loop "
            f"stalled {st['generator_stalls']} times for 5 ms or more (longest "
            f"{st['generator_longest_stall_ms']} ms); the services' event loops woke 10 ms "
            f"or more late {loops or 'never'} (docs/running.md#event-loop-lag). The load "
            f"generators' own CPU a request, ms: {generators}.",
            "",
        ]
    beside = "; ".join(
        f"{mode} {s['p50_ms']} / {s['p99_ms']} ({s['requests']} calls)"
        for mode in ("saturated", "paced")
        if (s := m.get(f"similar_beside_reads_{mode}"))
    )
    return [
        *lines,
        f"The similar queries' own latency beside the reads, p50 / p99 ms: {beside}.",
        "",
    ]


def reads_before_table(r: dict[str, Any]) -> list[str]:
    if not (rb := r.get("reads_before")):
        return []
    m = r["mixed"]
    rows = []
    for mode, label in (
        ("saturated", "reads_under_similar_load"),
        ("paced", "reads_paced_under_similar_load"),
    ):
        for code, x, sim in (
            ("before", rb[mode]["similar"], rb[f"similar_beside_reads_{mode}"]),
            ("after", m[label], m[f"similar_beside_reads_{mode}"]),
        ):
            floor = (
                f"{x['p99_change_vs']:+.1%} / {x['phase_p99_median_change_vs']:+.1%}"
                if "p99_change_vs" in x
                else "—"
            )
            cells = [_change(x, "p99"), _change(x, "phase_p99_median")]
            rows.append([mode, code, *cells, floor, f"{sim['p50_ms']} / {sim['p99_ms']}"])
    header = [
        "run",
        "code",
        "pooled p99",
        "phases' p99, median",
        "against as many more reads: pooled / median",
        "similar queries p50 / p99 ms",
    ]
    return [
        f"Before and after (`BENCH_BASELINE={rb['baseline']}`'s code on a system of its "
        "own after this tree's, the same paced rates): the reads' p99 beside similar "
        "queries vs alone, pooled / the phases' median, with 90% intervals.",
        "",
        *table(header, rows),
        "",
    ]


def cpu_before_after_table(r: dict[str, Any]) -> list[str]:
    if not (ba := r.get("cpu_before_after")):
        return []
    rows = [
        [request, name, *(x.get(p, 0.0) for p in PARTS), x["normal_priority"]]
        for request in ("similar", "read")
        for name in ("before", "after")
        if (x := ba[name][request])
    ]
    return [
        f"Before and after, one run (`BENCH_BASELINE={ba['baseline']}`, {ba['rounds']} "
        "rounds in turn, each part's median): CPU ms a request, by part.",
        "",
        *table(["request", "code", *PARTS, "normal_priority"], rows),
        "",
        f"A similar query in reads' worth at the requests' priority: before "
        f"{ba['before']['similar_in_reads']}, after {ba['after']['similar_in_reads']}.",
        "",
    ]


def cpu_table(r: dict[str, Any]) -> list[str]:
    if not (cpu := r.get("cpu_per_request")):
        return []
    parts = sorted({part for name in ("similar", "read") for part in cpu[name]})
    rows = [
        [label, *(cpu[name].get(p, 0.0) for p in parts)]
        for name, label in (("similar", "POST /ideas/similar"), ("read", "GET /ideas/{id}"))
    ]
    return [
        "CPU a request costs, by part, ms (offered 50 a second; below the requests' "
        "priority: `similar`, the search process in the idle scheduling class, and "
        "`model`, the model's child processes; `normal_priority`: all the others). A "
        f"similar query costs {cpu['similar_in_reads']} reads' worth at the requests' "
        "priority.",
        "",
        *table(["request", *parts], rows),
        "",
    ]


def markdown(r: dict[str, Any]) -> str:
    lines = [
        "# Similar ideas benchmark",
        "",
        "`python -m bench similar` (bench/similar.py). Vectors in the index are random unit "
        "vectors: the figures are latency and memory, not quality.",
        "",
        *sizes_table(r["sizes"]),
        "",
        index_note(r["index_memory_1m"], r["prefilter_recall"]),
        "",
        *loads_table(r["mixed"]),
        "",
        *loads_notes(r["mixed"]),
        *stalls_note(r["mixed"]),
        *reads_before_table(r),
        *cpu_before_after_table(r),
        *cpu_table(r),
    ]
    return "\n".join(lines)
