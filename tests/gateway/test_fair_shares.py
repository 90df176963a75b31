"""Fair shares of the gateway's upstream slots, and the request body's time limit
(docs/gateway.md#fair-shares, docs/gateway.md#request-bodies).

The scheduler on a bare object first (shares, turns, bounded waits, cancellation); then a noisy
workspace beside a victim through a gateway of its own with a few slots, in front of the real
webhooks service whose test pings go to a receiver that accepts and never answers; then a body
trickled one byte at a time on a raw socket.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest

from services.gateway.shares import FairShares, Refused, share_of
from tests.support.api import Api, Resp, Workspace, make_key, make_workspace
from tests.support.noisy import assert_victim_unharmed, victim_beside_noise
from tests.support.processes import System, create_database, delete_queues, drop_database

ADDR = "http://127.0.0.1:1"


async def _take(shares: FairShares, ws: str, log: list[str], name: str) -> None:
    await shares.acquire(ADDR, ws)
    log.append(name)


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_share_is_a_fraction_with_a_floor_and_at_most_every_slot() -> None:
    assert share_of(100, 0.25, 4) == 25
    assert share_of(10, 0.25, 4) == 4
    assert share_of(10, 0.26, 1) == 3
    assert share_of(3, 0.25, 4) == 3


async def test_a_workspace_past_its_share_waits_while_another_goes_at_once() -> None:
    shares = FairShares(slots=4, share=2, wait_s=5)
    for _ in range(2):
        await shares.acquire(ADDR, "a")
    third = asyncio.create_task(shares.acquire(ADDR, "a"))
    await _settle()
    assert not third.done() and shares.waiting(ADDR, "a") == 1
    await asyncio.wait_for(shares.acquire(ADDR, "b"), 0.5)  # slots are free: no wait
    assert shares.held(ADDR, "b") == 1 and shares.busy(ADDR) == 3
    shares.release(ADDR, "a")
    await asyncio.wait_for(third, 0.5)
    assert shares.held(ADDR, "a") == 2 and shares.busy(ADDR) == 3


async def test_free_slots_go_round_robin_across_workspaces_fifo_inside_one() -> None:
    shares = FairShares(slots=2, share=2, wait_s=5)
    await shares.acquire(ADDR, "a")
    await shares.acquire(ADDR, "a")
    log: list[str] = []
    tasks = []
    # a queues three, then b two, then c one: first come first overall would serve a's three
    for ws, name in [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), ("b", "b2"), ("c", "c1")]:
        tasks.append(asyncio.create_task(_take(shares, ws, log, name)))
        await _settle()
    held = {"a": 2}
    order = ["a1", "b1", "c1", "a2", "b2", "a3"]
    for _ in order:
        # free one slot of a workspace holding one, as its request ends
        ws = next(w for w, n in held.items() if n)
        held[ws] -= 1
        shares.release(ADDR, ws)
        await _settle()
        held[log[-1][0]] = held.get(log[-1][0], 0) + 1
    await asyncio.gather(*tasks)
    assert log == order


async def test_waits_are_bounded_429_for_a_full_share_503_for_a_full_service() -> None:
    shares = FairShares(slots=3, share=2, wait_s=0.2)
    await shares.acquire(ADDR, "a")
    await shares.acquire(ADDR, "a")
    started = time.monotonic()
    with pytest.raises(Refused) as own:
        await shares.acquire(ADDR, "a")  # its own two hold its share
    assert own.value.reason == "share" and own.value.retry_after == 1
    assert 0.15 < time.monotonic() - started < 2
    await shares.acquire(ADDR, "b")  # the last slot
    with pytest.raises(Refused) as full:
        await shares.acquire(ADDR, "c")  # c holds nothing: the service is full
    assert full.value.reason == "saturated"
    assert shares.waiting(ADDR) == 0 and shares.busy(ADDR) == 3


async def test_cancelled_waits_hold_nothing_and_a_slot_handed_over_passes_on() -> None:
    shares = FairShares(slots=1, share=1, wait_s=5)
    await shares.acquire(ADDR, "a")
    gone = asyncio.create_task(shares.acquire(ADDR, "b"))
    await _settle()
    gone.cancel()
    await asyncio.gather(gone, return_exceptions=True)
    assert shares.waiting(ADDR) == 0 and shares.busy(ADDR) == 1

    # b is handed the slot and cancelled before it runs: the slot goes on to c
    handed = asyncio.create_task(shares.acquire(ADDR, "b"))
    log: list[str] = []
    next_one = asyncio.create_task(_take(shares, "c", log, "c"))
    await _settle()
    shares.release(ADDR, "a")
    handed.cancel()
    await asyncio.gather(handed, return_exceptions=True)
    await asyncio.wait_for(next_one, 0.5)
    assert log == ["c"] and shares.held(ADDR, "b") == 0 and shares.busy(ADDR) == 1
    shares.release(ADDR, "c")
    assert shares.busy(ADDR) == 0 and shares.waiting(ADDR) == 0


# A gateway with few slots a service address, in front of the real services; test pings wait
# WEBHOOK_TIMEOUT_S for a receiver that never answers, holding a slot all that time.
SLOTS, SHARE = 12, 3
SHARES_ENV = {
    "UPSTREAM_SLOTS": str(SLOTS),
    "FAIR_SHARE": "0.25",
    "FAIR_SHARE_MIN": "1",
    "FAIR_SHARE_WAIT_S": "2",
    "WEBHOOK_TIMEOUT_S": "10",
    "REQUEST_BODY_TIMEOUT_S": "2",
}


@dataclass
class Rig:
    system: System
    http: aiohttp.ClientSession
    hanging_url: str  # accepts, reads, never answers
    accepted: list[asyncio.StreamWriter]  # its connections so far

    def workspace(self) -> Workspace:
        ws = make_workspace(self.system.database_url, plan="enterprise", rate_limit=100_000)
        key = make_key(self.system.database_url, ws["id"])
        api = Api(self.http, self.system.base_url, key["key"], None)
        return Workspace(ws["id"], key["key"], key["id"], api, "enterprise")

    async def webhook(self, ws: Workspace) -> str:
        r = await ws.api.post(
            "/api/v1/webhooks", json={"targetUrl": self.hanging_url, "events": ["idea.created"]}
        )
        assert r.status == 200, r.body
        return str(r.data["id"])


@pytest.fixture(scope="module")
async def rig() -> AsyncIterator[Rig]:
    held: list[asyncio.StreamWriter] = []

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        while await reader.read(65536):
            pass

    receiver = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = receiver.sockets[0].getsockname()[1]
    url = create_database()
    prefix = f"imsfair{secrets.token_hex(4)}"
    system = System(url, prefix, env_overrides=SHARES_ENV)
    system.start()
    try:
        await system.wait_ready()
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=60)
        ) as http:
            yield Rig(system, http, f"http://127.0.0.1:{port}/hook", held)
    finally:
        system.stop()
        receiver.close()
        for w in held:
            w.close()
        await delete_queues(prefix)
        drop_database(url)


async def test_noisy_workspace_gets_429_beyond_its_share_and_the_victim_stays_fast(
    rig: Rig,
) -> None:
    """Bursts of 60 test pings (the enterprise rate) each hold a slot for 10 s: on a first-come
    pool they took every slot and the victim's reads waited seconds behind them."""
    noisy, victim = rig.workspace(), rig.workspace()
    noisy_hook, victim_hook = await rig.webhook(noisy), await rig.webhook(victim)
    refusals: list[Resp] = []

    async def ping(_: int) -> Resp:
        r = await noisy.api.post(f"/api/v1/webhooks/{noisy_hook}/test")
        if r.status == 429:
            refusals.append(r)
        return r

    async def read() -> Resp:
        return await victim.api.get(f"/api/v1/webhooks/{victim_hook}")

    report = await victim_beside_noise(ping, read)
    print(report.summary())
    assert_victim_unharmed(report)
    # the victim reads one after another: a stall behind the pings is one slow read, not 1%
    assert report.victim_worst_ms < 2000, report.summary()
    assert report.victim_statuses == {200: len(report.victim_ms)}, report.summary()
    # the first burst's share of pings held their slots for the whole run: every other ping
    # was refused after its bounded wait, none was an error
    assert report.noise_statuses == {200: SHARE, 429: 120 - SHARE}, report.summary()
    for r in refusals:
        assert r.error["code"] == "rate_limited", r.body
        assert r.headers["Retry-After"] == "2"
        assert {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} <= set(r.headers)
    refused = await _sample(rig, "ims_gateway_fair_share_refusals_total")
    assert refused == {("share", "webhooks"): 120 - SHARE}, refused


async def _sample(rig: Rig, name: str) -> dict[tuple[str, ...], float]:
    """The gateway's samples of `name`, by their label values in the labels' name order."""
    async with rig.http.get(rig.system.metrics_url("gateway") + "/metrics") as m:
        text = await m.text()
    out = {}
    for labels, value in re.findall(rf"^{name}{{([^}}]*)}} (\S+)$", text, re.MULTILINE):
        pairs = sorted(p.split("=", 1) for p in labels.split(","))
        out[tuple(v.strip('"') for _, v in pairs)] = float(value)
    return out


async def test_a_service_full_of_everyones_shares_answers_503_after_the_bounded_wait(
    rig: Rig,
) -> None:
    """Four workspaces at their share hold the 12 slots; a fifth waits 2 s, then gets 503."""
    holders = [rig.workspace() for _ in range(SLOTS // SHARE)]
    hooks = [await rig.webhook(ws) for ws in holders]
    late = rig.workspace()
    late_hook = await rig.webhook(late)
    before = len(rig.accepted)
    pings = [
        asyncio.create_task(ws.api.post(f"/api/v1/webhooks/{hook}/test"))
        for ws, hook in zip(holders, hooks, strict=True)
        for _ in range(SHARE)
    ]
    async with asyncio.timeout(8):  # every ping holds its slot, waiting for the receiver
        while len(rig.accepted) < before + SLOTS:
            await asyncio.sleep(0.05)
    started = time.monotonic()
    r = await late.api.get(f"/api/v1/webhooks/{late_hook}")
    waited = time.monotonic() - started
    assert r.status == 503, r.body
    assert r.error["code"] == "service_unavailable"
    assert r.headers["Retry-After"] == "2" and "RateLimit-Remaining" in r.headers
    assert 1.5 < waited < 6, waited
    refused = await _sample(rig, "ims_gateway_fair_share_refusals_total")
    assert refused.get(("saturated", "webhooks")) == 1, refused
    assert [p.status for p in await asyncio.gather(*pings)] == [200] * SLOTS
    # once the slots are free again, the same request goes through
    assert (await late.api.get(f"/api/v1/webhooks/{late_hook}")).status == 200


async def _trickle(
    base_url: str, key: str, path: str, size: int, every_s: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, asyncio.Task[None]]:
    """A POST whose body of `size` bytes comes one byte every `every_s` seconds."""
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n".encode()
    )

    async def drip() -> None:
        for _ in range(size):
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(every_s)

    return reader, writer, asyncio.create_task(drip())


async def test_a_trickled_body_is_cut_off_and_holds_no_slot_meanwhile(rig: Rig) -> None:
    """REQUEST_BODY_TIMEOUT_S is 2 s here: a body sent one byte every 0.5 s gets 400 on `body`
    and its connection is closed; while more bodies than the workspace's share trickle, its
    other requests to the same service go through at once."""
    ws = rig.workspace()
    started = time.monotonic()
    trickles = [
        await _trickle(rig.system.base_url, ws.key, "/api/v1/ideas", 100, 0.5)
        for _ in range(SHARE + 1)
    ]
    try:
        await asyncio.sleep(0.5)
        t0 = time.monotonic()
        r = await ws.api.post("/api/v1/ideas", json={"title": "while the others trickle"})
        assert r.status == 200, r.body
        assert time.monotonic() - t0 < 1.0
        for reader, _, _ in trickles:
            async with asyncio.timeout(8):
                answer = await reader.read()  # the answer, then the server's close
        elapsed = time.monotonic() - started
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 "), answer
        assert b"\r\nConnection: close" in head, head
        assert b'"code":"validation_error"' in body and b'"field":"body"' in body, body
        assert b"within 2 s" in body, body
        assert elapsed < 6, elapsed  # cut off near 2 s, not after the whole body's 50 s
    finally:
        for _, writer, drip in trickles:
            drip.cancel()
            writer.close()
