"""Webhook benchmark: deliveries per second, API-call-to-receiver latency, and that latency
again beside a receiver that never answers (it must not move by more than 20%).

Runs its own processes (gateway, ideas, webhooks) on a fresh database; the receivers are
aiohttp servers on 127.0.0.1 in this process. Every loop is bounded in count and time.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.support.api import make_key, make_workspace
from tests.support.processes import create_database, delete_queues, drop_database, free_port
from tests.webhooks.support import PartSystem

RESULTS = Path(__file__).parent / "results"
FANOUT = 10            # subscriptions per workspace in the throughput run
THROUGHPUT_IDEAS = 400  # x FANOUT deliveries
LATENCY_SAMPLES = 200
TIME_LIMIT_S = 120


class Sink:
    """Records when each idea id arrived; `hang` paths never answer."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.count = 0
        self.done = asyncio.Event()
        self.want = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if request.path.startswith("/hang"):
            await asyncio.sleep(3600)
        now = time.perf_counter()
        self.count += 1
        self.arrivals.setdefault(body["data"]["idea"]["id"], now)
        if self.want and self.count >= self.want:
            self.done.set()
        return web.Response(status=204)


async def start_sink(sink: Sink) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_post("/{tail:.*}", sink.handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port


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


async def throughput(sys_: PartSystem, session: aiohttp.ClientSession, sink: Sink,
                     port: int) -> dict[str, Any]:
    api = workspace(sys_, session)
    for i in range(FANOUT):
        await api.post("/api/v1/webhooks", {"targetUrl": f"http://127.0.0.1:{port}/t{i}",
                                            "events": ["idea.created"]})
    sink.count, sink.want = 0, THROUGHPUT_IDEAS * FANOUT
    sink.done.clear()
    started = time.perf_counter()
    for start in range(0, THROUGHPUT_IDEAS, 100):
        await api.post("/api/v1/ideas/batch",
                       {"ideas": [{"title": f"bench {start + j}"} for j in range(100)]})
    await asyncio.wait_for(sink.done.wait(), TIME_LIMIT_S)
    elapsed = time.perf_counter() - started
    return {"deliveries": sink.want, "seconds": round(elapsed, 2),
            "deliveriesPerSecond": round(sink.want / elapsed, 1)}


async def latency(sys_: PartSystem, session: aiohttp.ClientSession, sink: Sink, port: int,
                  with_hanging: bool) -> dict[str, Any]:
    api = workspace(sys_, session)
    await api.post("/api/v1/webhooks", {"targetUrl": f"http://127.0.0.1:{port}/ok",
                                        "events": ["idea.created"]})
    if with_hanging:
        await api.post("/api/v1/webhooks", {"targetUrl": f"http://localhost:{port}/hang",
                                            "events": ["idea.created"]})
    samples: list[float] = []
    deadline = time.perf_counter() + TIME_LIMIT_S
    for i in range(LATENCY_SAMPLES):
        started = time.perf_counter()
        idea = (await api.post("/api/v1/ideas", {"title": f"latency {i}"}))["data"]
        while idea["id"] not in sink.arrivals:
            assert time.perf_counter() < deadline, "deliveries stopped arriving"
            await asyncio.sleep(0.001)
        samples.append((sink.arrivals[idea["id"]] - started) * 1000)
        await asyncio.sleep(0.02)  # a steady trickle, not a burst
    q = statistics.quantiles(samples, n=100)
    return {"samples": len(samples), "p50_ms": round(statistics.median(samples), 2),
            "p99_ms": round(q[98], 2)}


async def main() -> dict[str, Any]:
    url = await asyncio.to_thread(create_database)
    sys_ = PartSystem(url, f"imsbench{secrets.token_hex(4)}",
                      env_overrides={"WEBHOOK_RETRY_SCHEDULE": "0,1,1", "WEBHOOK_TIMEOUT_S": "2",
                                     "LOG_LEVEL": "warning"},
                      services=("gateway", "ideas", "webhooks"))
    sink = Sink()
    runner, port = await start_sink(sink)
    sys_.start()
    try:
        await sys_.wait_ready()
        async with aiohttp.ClientSession() as session:
            result = {
                "throughput": await throughput(sys_, session, sink, port),
                "latency": await latency(sys_, session, sink, port, with_hanging=False),
                "latencyBesideHangingReceiver": await latency(sys_, session, sink, port,
                                                              with_hanging=True),
            }
    finally:
        sys_.stop()
        await runner.cleanup()
        await delete_queues(sys_.amqp_prefix)
        await asyncio.to_thread(drop_database, url)
    base, hung = result["latency"], result["latencyBesideHangingReceiver"]
    result["p50Ratio"] = round(hung["p50_ms"] / base["p50_ms"], 3)
    result["p99Ratio"] = round(hung["p99_ms"] / base["p99_ms"], 3)
    write(result)
    return result


def write(result: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "webhooks.json").write_text(json.dumps(result, indent=2) + "\n")
    t, a, b = result["throughput"], result["latency"], result["latencyBesideHangingReceiver"]
    (RESULTS / "webhooks.md").write_text(
        "# Webhooks benchmark\n\n"
        "| Measure | Value |\n|---|---|\n"
        f"| deliveries/s ({t['deliveries']} to a local receiver, {FANOUT} subscriptions) "
        f"| {t['deliveriesPerSecond']} |\n"
        f"| API call to receiver, p50 / p99 (ms) | {a['p50_ms']} / {a['p99_ms']} |\n"
        f"| same beside a receiver that never answers, p50 / p99 (ms) "
        f"| {b['p50_ms']} / {b['p99_ms']} |\n"
        f"| ratio p50 / p99 (must stay <= 1.2) | {result['p50Ratio']} / {result['p99Ratio']} |\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
