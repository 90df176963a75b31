"""Webhook benchmark: deliveries per second, API-call-to-receiver latency, and that latency
again beside a receiver that never answers (it must not move by more than 20%).

`BENCH_BASELINE=<git ref>` measures that commit's code too, in the same run, on the same
database schema (today's migrations), in alternating rounds (`BENCH_ROUNDS`, default 3: before,
after, before, after, ...), and writes every round with the median of the round pairs' ratios:
on a shared machine only ratios of measures taken next to each other mean much.

Runs its own processes (gateway, ideas, webhooks) on a fresh database. The receiver is a bare
aiohttp server answering 204 in a process of its own (`python -m bench.webhooks receiver`), so
it is not what is measured; it reports arrivals on its stdout. Each latency sample is split
into stages from the timestamps the system keeps (the event's `createdAt`, the delivery row's
`created_at`), so the slowest stage shows. Every loop is bounded in count and time.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import psycopg2

from bench.common import cpu_seconds, source_tree, write_results
from tests.support.api import make_key, make_workspace
from tests.support.processes import (
    LOG_DIR,
    create_database,
    delete_queues,
    drop_database,
    free_port,
)
from tests.webhooks.support import PartSystem

ROOT = Path(__file__).resolve().parents[1]
FANOUT = 10  # subscriptions per workspace in the throughput run
THROUGHPUT_IDEAS = 1000  # x FANOUT deliveries
LATENCY_SAMPLES = 400
TIME_LIMIT_S = 120


class Receiver:
    """The receiver process and what it reported: arrival times (Unix s) by idea id."""

    def __init__(self) -> None:
        self.port = free_port()
        self.arrivals: dict[str, float] = {}
        self.done = asyncio.Event()
        self.done_at = 0.0
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.webhooks",
            "receiver",
            str(self.port),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
        )
        self._reader = asyncio.create_task(self._read())
        await asyncio.wait_for(self._ready.wait(), 30)

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        async for line in self.proc.stdout:
            kind, *rest = line.decode().split()
            if kind == "arr":
                self.arrivals.setdefault(rest[0], float(rest[1]))
            elif kind == "done":
                self.done_at = float(rest[0])
                self.done.set()
            elif kind == "ready":
                self._ready.set()

    async def expect(self, session: aiohttp.ClientSession, n: int) -> None:
        self.done.clear()
        async with session.post(f"http://127.0.0.1:{self.port}/_expect?n={n}") as r:
            assert r.status == 204

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            await self.proc.wait()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)


async def receiver_main(port: int) -> None:
    """204 to everything; `/ok*` arrivals are reported by idea id, `/hang*` never answers,
    the rest are counted until the number set by `/_expect` is reached."""
    import orjson
    from aiohttp import web

    state = {"count": 0, "want": 0}
    out = sys.stdout

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        path = request.path
        if path.startswith("/hang"):
            await asyncio.sleep(3600)
        elif path.startswith("/ok"):
            idea_id = orjson.loads(body)["data"]["idea"]["id"]
            out.write(f"arr {idea_id} {time.time()}\n")
            out.flush()
        else:
            state["count"] += 1
            if state["count"] == state["want"]:
                out.write(f"done {time.time()}\n")
                out.flush()
        return web.Response(status=204)

    async def expect(request: web.Request) -> web.StreamResponse:
        state["count"], state["want"] = 0, int(request.query["n"])
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/_expect", expect)
    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=True, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    out.write("ready\n")
    out.flush()
    await asyncio.sleep(3 * TIME_LIMIT_S + 600)  # bounded: the bench terminates it sooner


class Client:
    def __init__(self, session: aiohttp.ClientSession, base: str, key: str) -> None:
        self.session, self.base = session, base
        self.headers = {"Authorization": f"Bearer {key}"}

    async def post(self, path: str, body: Any) -> Any:
        async with self.session.post(self.base + path, json=body, headers=self.headers) as r:
            assert r.status in (200, 201), await r.text()
            return await r.json()


def workspace(sys_: PartSystem, session: aiohttp.ClientSession) -> Client:
    ws = make_workspace(sys_.database_url, rate_limit=1_000_000)
    return Client(session, sys_.base_url, make_key(sys_.database_url, ws["id"])["key"])


async def throughput(
    sys_: PartSystem, session: aiohttp.ClientSession, rcv: Receiver
) -> dict[str, Any]:
    api = workspace(sys_, session)
    for i in range(FANOUT):
        await api.post(
            "/api/v1/webhooks",
            {"targetUrl": f"http://127.0.0.1:{rcv.port}/t{i}", "events": ["idea.created"]},
        )
    want = THROUGHPUT_IDEAS * FANOUT
    await rcv.expect(session, want)
    pid = sys_.procs["webhooks"][0].pid
    cpu_before = cpu_seconds([pid])
    started = time.time()
    for start in range(0, THROUGHPUT_IDEAS, 100):
        await api.post(
            "/api/v1/ideas/batch", {"ideas": [{"title": f"bench {start + j}"} for j in range(100)]}
        )
    posted = time.time() - started
    await asyncio.wait_for(rcv.done.wait(), TIME_LIMIT_S)
    elapsed = rcv.done_at - started
    cpu = cpu_seconds([pid]) - cpu_before
    return {
        "deliveries": want,
        "seconds": round(elapsed, 2),
        "apiSeconds": round(posted, 2),
        "deliveriesPerSecond": round(want / elapsed, 1),
        "webhooksCpuUsPerDelivery": round(cpu / want * 1e6, 1),
    }


async def latency(
    sys_: PartSystem, session: aiohttp.ClientSession, rcv: Receiver, with_hanging: bool
) -> dict[str, Any]:
    api = workspace(sys_, session)
    ok = await api.post(
        "/api/v1/webhooks",
        {"targetUrl": f"http://127.0.0.1:{rcv.port}/ok", "events": ["idea.created"]},
    )
    if with_hanging:
        await api.post(
            "/api/v1/webhooks",
            {"targetUrl": f"http://localhost:{rcv.port}/hang", "events": ["idea.created"]},
        )
    samples: list[float] = []
    sent: dict[str, tuple[float, float]] = {}
    deadline = time.monotonic() + TIME_LIMIT_S
    for i in range(LATENCY_SAMPLES):
        started = time.time()
        idea = (await api.post("/api/v1/ideas", {"title": f"latency {i}"}))["data"]
        sent[idea["id"]] = (started, time.time())
        while idea["id"] not in rcv.arrivals:
            assert time.monotonic() < deadline, "deliveries stopped arriving"
            await asyncio.sleep(0.0005)
        samples.append((rcv.arrivals[idea["id"]] - started) * 1000)
        await asyncio.sleep(0.02)  # a steady trickle, not a burst
    q = statistics.quantiles(samples, n=100)
    stages = await asyncio.to_thread(
        stage_split, sys_.database_url, ok["data"]["id"], sent, rcv.arrivals
    )
    return {
        "samples": len(samples),
        "p50_ms": round(statistics.median(samples), 2),
        "p99_ms": round(q[98], 2),
        "stages_p50_ms": stages,
    }


def stage_split(
    url: str, sub_id: str, sent: dict[str, tuple[float, float]], arrivals: dict[str, float]
) -> dict[str, float]:
    """Median ms of each stage: API call -> event written (ideas) -> API answer; event ->
    delivery row written (relay, RabbitMQ, consumer); delivery row -> receiver (claim, POST)."""
    conn = psycopg2.connect(url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute(
                "SELECT convert_from(body, 'UTF8'), extract(epoch FROM created_at)"
                " FROM webhooks.deliveries WHERE subscription_id = %s",
                (sub_id,),
            )
            rows = cur.fetchall()
    finally:
        conn.close()
    split: dict[str, list[float]] = {
        "started": [],
        "api_to_event": [],
        "event_to_api_answer": [],
        "event_to_delivery_row": [],
        "delivery_row_to_receiver": [],
    }
    for body, row_at in rows:
        event = json.loads(body)
        idea_id = event["data"]["idea"]["id"]
        if idea_id not in sent or idea_id not in arrivals:
            continue
        started, answered = sent[idea_id]
        event_at = datetime.fromisoformat(event["createdAt"].replace("Z", "+00:00")).timestamp()
        split["started"].append(started)
        split["api_to_event"].append((event_at - started) * 1000)
        split["event_to_api_answer"].append((answered - event_at) * 1000)
        split["event_to_delivery_row"].append((float(row_at) - event_at) * 1000)
        split["delivery_row_to_receiver"].append((arrivals[idea_id] - float(row_at)) * 1000)
    if os.environ.get("BENCH_DEBUG"):  # every sample's stages, for a look at the slow ones
        with open(os.environ["BENCH_DEBUG"], "a") as f:
            f.write(json.dumps(split) + "\n")
    del split["started"]
    return {k: round(statistics.median(v), 2) for k, v in split.items() if v}


ROWS = [
    ("deliveries/s", "throughput", "deliveriesPerSecond"),
    ("webhooks process CPU per delivery (us)", "throughput", "webhooksCpuUsPerDelivery"),
    ("API call to receiver p50 (ms)", "latency", "p50_ms"),
    ("API call to receiver p99 (ms)", "latency", "p99_ms"),
    ("beside a hanging receiver p50 (ms)", "latencyBesideHangingReceiver", "p50_ms"),
    ("beside a hanging receiver p99 (ms)", "latencyBesideHangingReceiver", "p99_ms"),
]


async def main() -> dict[str, Any]:
    baseline = os.environ.get("BENCH_BASELINE")
    if not baseline:
        result = await measure(ROOT)
        write(result)
        return result
    # Rounds alternate (before, after, before, after, ...): on a shared machine only ratios of
    # measures taken next to each other mean much, and the median of the pairs' ratios holds.
    rounds = max(1, int(os.environ.get("BENCH_ROUNDS", "3")))
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        old = source_tree(baseline, tmp)
        for _ in range(rounds):
            pairs.append((await measure(old), await measure(ROOT)))
    ratios = {
        label: round(statistics.median(a[part][key] / b[part][key] for b, a in pairs), 3)
        for label, part, key in ROWS
    }
    after = pairs[-1][1]
    result = {
        "baseline": baseline,
        "rounds": rounds,
        "before": [b for b, _ in pairs],
        "after": [a for _, a in pairs],
        "medianRatios": ratios,
    }
    write(after, result)
    return result


async def measure(root: Path) -> dict[str, Any]:
    url = await asyncio.to_thread(create_database)
    sys_ = PartSystem(
        url,
        f"imsbench{secrets.token_hex(4)}",
        env_overrides={
            "WEBHOOK_RETRY_SCHEDULE": "0,1,1",
            "WEBHOOK_TIMEOUT_S": "2",
            "LOG_LEVEL": "warning",
        },
        services=("gateway", "ideas", "webhooks"),
        root=root,
    )
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    rcv = Receiver()
    await rcv.start()
    sys_.start()
    try:
        await sys_.wait_ready()
        print(f"webhooks pid {sys_.procs['webhooks'][0].pid}", file=sys.stderr, flush=True)
        async with aiohttp.ClientSession() as session:
            result = {
                "throughput": await throughput(sys_, session, rcv),
                "latency": await latency(sys_, session, rcv, with_hanging=False),
                "latencyBesideHangingReceiver": await latency(
                    sys_, session, rcv, with_hanging=True
                ),
            }
    finally:
        sys_.stop()
        await rcv.stop()
        await delete_queues(sys_.amqp_prefix)
        await asyncio.to_thread(drop_database, url)
    base, hung = result["latency"], result["latencyBesideHangingReceiver"]
    result["p50Ratio"] = round(hung["p50_ms"] / base["p50_ms"], 3)
    result["p99Ratio"] = round(hung["p99_ms"] / base["p99_ms"], 3)
    return result


def write(result: dict[str, Any], compared: dict[str, Any] | None = None) -> None:
    write_results("webhooks", compared or result, markdown(result, compared))
    print(json.dumps(compared or result, indent=2))


def markdown(result: dict[str, Any], compared: dict[str, Any] | None = None) -> str:
    t, a, b = result["throughput"], result["latency"], result["latencyBesideHangingReceiver"]
    stages = " / ".join(f"{k} {v}" for k, v in a["stages_p50_ms"].items())
    return (
        "# Webhooks benchmark\n\n"
        "`scripts/test_env.sh .venv/bin/python -m bench webhooks` (with "
        "`BENCH_BASELINE=<ref> BENCH_ROUNDS=<n>` for before and after)\n\n"
        "| Measure | Value |\n|---|---|\n"
        f"| deliveries/s ({t['deliveries']} to a local receiver, {FANOUT} subscriptions) "
        f"| {t['deliveriesPerSecond']} |\n"
        f"| API call to receiver, p50 / p99 (ms) | {a['p50_ms']} / {a['p99_ms']} |\n"
        f"| same beside a receiver that never answers, p50 / p99 (ms) "
        f"| {b['p50_ms']} / {b['p99_ms']} |\n"
        f"| ratio p50 / p99 (must stay <= 1.2) | {result['p50Ratio']} / {result['p99Ratio']} |\n"
        f"| stages, median ms | {stages} |\n" + (comparison(compared) if compared else "")
    )


def comparison(c: dict[str, Any]) -> str:
    """The before/after table of a run with BENCH_BASELINE: every round, and the median of the
    round pairs' ratios."""
    n = c["rounds"]
    lines = [
        f"\n## Before and after, one run (`BENCH_BASELINE={c['baseline']}`, `BENCH_ROUNDS={n}`)\n",
        "Rounds alternate on the same machine: before, after, before, after, ... The table "
        "above is the last round of the current code. Each cell lists the rounds in order; "
        "the last column is the median of the ratios of each round's pair.\n",
        "| Measure | before | after | median after / before |",
        "|---|---|---|---|",
    ]
    for label, part, key in ROWS:
        b = " / ".join(str(r[part][key]) for r in c["before"])
        a = " / ".join(str(r[part][key]) for r in c["after"])
        lines.append(f"| {label} | {b} | {a} | {c['medianRatios'][label]} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "receiver":
        try:
            import uvloop

            uvloop.run(receiver_main(int(sys.argv[2])))
        except ImportError:
            asyncio.run(receiver_main(int(sys.argv[2])))
    else:
        asyncio.run(main())
