"""Test pings beside another workspace (docs/webhooks.md#test-pings-and-the-shares): a noisy
workspace's bursts of pings to a receiver that accepts and never answers hold at most its
share of delivery connections, the rest answered at once; another workspace's deliveries go
out and its reads stay fast (the shared system, WEBHOOK_TIMEOUT_S 2 s)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.conftest import WorkspaceFactory
from tests.support.api import Resp
from tests.support.noisy import assert_victim_unharmed, victim_beside_noise
from tests.support.processes import System
from tests.webhooks.support import Receiver, Silent, publish
from tests.webhooks.test_delivery import event_data, subscribe

W = "/api/v1/webhooks"


@pytest.fixture
async def silent() -> AsyncIterator[Silent]:
    s = await Silent().start()
    yield s
    await s.stop()


@pytest.fixture
async def noise_http() -> AsyncIterator[aiohttp.ClientSession]:
    """The noise's own client, without a connection limit: the victim's requests never wait
    behind it in the test's client."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        yield session


async def test_pings_to_a_silent_receiver_leave_another_workspace_unharmed(
    system: System,
    new_workspace: WorkspaceFactory,
    receiver: Receiver,
    silent: Silent,
    noise_http: aiohttp.ClientSession,
) -> None:
    """Four bursts of 60 concurrent pings, 0.5 s apart, from a workspace on the enterprise
    plan's rate limit, to a receiver that never answers: at most the host's share (20) is sent
    at once, the rest answered 429 at once; meanwhile another workspace's `GET /webhooks/{id}`
    keeps a p99 under 1 s with no 5xx and each of its deliveries arrives within a second.
    Before, every ping waited the whole timeout: 240 of them at once held more than the
    gateway's 100 connections to the webhooks service, and the reads queued behind them."""
    noisy = await new_workspace(rate_limit=None)  # the enterprise plan's 1,200 a minute
    noise_api = noisy.api.with_key(noisy.key)
    noise_api.session = noise_http
    target = await subscribe(noisy.api, f"http://127.0.0.1:{silent.port}/hook")
    victim = await new_workspace()
    path = receiver.new_path()
    watched = await subscribe(victim.api, receiver.url(path))
    ping_ms: dict[int, float] = {}

    async def noise(i: int) -> Resp:
        t0 = time.monotonic()
        r = await noise_api.post(f"{W}/{target['id']}/test")
        if r.status == 429:
            ping_ms[i] = (time.monotonic() - t0) * 1000
        return r

    async def read() -> Resp:
        return await victim.api.get(f"{W}/{watched['id']}")

    published: list[float] = []

    async def deliveries() -> None:
        while True:
            await asyncio.sleep(0.5)
            published.append(time.time())
            await asyncio.to_thread(
                publish, system.database_url, "idea.created", victim.id, event_data("idea.created")
            )

    sender = asyncio.create_task(deliveries())
    try:
        # 60 every 0.5 s: 240 requests in 1.5 s, well inside the 1,200 of the minute's window
        # (counted over 60 s: nothing keeps a workspace from sending them this fast).
        report = await victim_beside_noise(noise, read, bursts=4, per_minute=7200)
    finally:
        sender.cancel()
    print(report.summary())  # the figures of docs/webhooks.md: pytest -s shows them
    assert_victim_unharmed(report)
    assert report.noise_statuses[200] + report.noise_statuses[429] == 240, report.summary()
    assert report.noise_statuses[429] >= 100, report.summary()
    assert sorted(ping_ms.values())[int(len(ping_ms) * 0.99) - 1] < 1000, report.summary()
    assert silent.peak <= 20, f"{silent.peak} connections at once to the silent receiver"
    arrived = await receiver.wait(path, len(published), timeout=10)
    lags = sorted(r.at - p for r, p in zip(arrived, published, strict=False))
    assert lags[-1] < 1.0, f"victim deliveries lagged {lags}"


async def test_a_refused_ping_says_when_to_try_again(
    new_workspace: WorkspaceFactory, silent: Silent, noise_http: aiohttp.ClientSession
) -> None:
    """A ping over the share is 429 `rate_limited` with `Retry-After` (the receiver timeout,
    by when every attempt holding the share has ended), and a retry after it is sent."""
    ws = await new_workspace()
    api = ws.api.with_key(ws.key)
    api.session = noise_http
    sub = await subscribe(ws.api, f"http://127.0.0.1:{silent.port}/hook")
    first = [asyncio.create_task(api.post(f"{W}/{sub['id']}/test")) for _ in range(20)]
    await wait_until(lambda: silent.accepted >= 20)
    refused = await api.post(f"{W}/{sub['id']}/test")
    assert refused.status == 429, refused.body
    assert refused.json["error"]["code"] == "rate_limited"
    assert "target host" in refused.json["error"]["message"]
    assert refused.headers["Retry-After"] == "2"
    assert all(r.status == 200 for r in await asyncio.gather(*first))
    again = await api.post(f"{W}/{sub['id']}/test")
    assert again.status == 200 and again.json["data"]["error"].startswith("timeout")
    assert silent.accepted == 21


async def wait_until(cond: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.02)
