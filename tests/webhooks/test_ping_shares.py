"""Test pings count in the shares of delivery connections (docs/webhooks.md#test-pings-and-the-shares):
the workspace's and the target host's, the host keyed by its canonical spelling. A small
system of its own: 8 slots in all, 2 per host, 4 per workspace, WEBHOOK_TIMEOUT_S 2."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.api import Api, Resp
from tests.webhooks.support import (
    PartSystem,
    Receiver,
    Silent,
    publish,
    sample_idea,
    start_part_system,
    stop_part_system,
    workspace_api,
)
from tests.webhooks.test_delivery import deliveries_when, subscribe

W = "/api/v1/webhooks"
ENV = {
    "WEBHOOK_CONCURRENCY": "8",
    "WEBHOOK_PER_HOST_CONCURRENCY": "2",
    "WEBHOOK_PER_WORKSPACE_CONCURRENCY": "4",
}


@pytest.fixture(scope="module")
async def small() -> AsyncIterator[PartSystem]:
    sys_ = await start_part_system(ENV)
    yield sys_
    await stop_part_system(sys_)


@pytest.fixture
async def silents() -> AsyncIterator[list[Silent]]:
    """Three receivers that accept and never answer (three hosts), and one on ::1."""
    rs = [await Silent().start() for _ in range(3)] + [await Silent("::1").start()]
    yield rs
    for r in rs:
        await r.stop()


def ping(api: Api, sub: dict[str, Any]) -> asyncio.Task[Resp]:
    return asyncio.create_task(api.post(f"{W}/{sub['id']}/test"))


def assert_refused(r: Resp, share: str) -> None:
    assert r.status == 429, r.body
    assert r.json["error"]["code"] == "rate_limited", r.body
    assert r.json["error"]["message"].startswith(share), r.body
    assert r.headers["Retry-After"] == "2"


async def test_pings_count_in_the_workspace_share(
    small: PartSystem, http: Any, openapi: Any, silents: list[Silent], receiver: Receiver
) -> None:
    """Six pings at once over three hanging hosts (two each, within each host's share): four
    are sent, the workspace's share, and two are refused at once. Meanwhile the workspace's
    own delivery waits for its share to free, and another workspace's goes out at once."""
    a_id, a = workspace_api(small, http, openapi)
    b_id, b = workspace_api(small, http, openapi)
    subs = [await subscribe(a, s.url(), ["customer.created"]) for s in silents[:3]]
    a_path, b_path = receiver.new_path(), receiver.new_path()
    await subscribe(a, receiver.url(a_path))
    await subscribe(b, receiver.url(b_path))
    started = time.time()
    pings = [ping(a, sub) for sub in subs for _ in range(2)]
    done, _ = await asyncio.wait(pings, timeout=1.0)
    refused = [t.result() for t in done]
    assert len(refused) == 2, [r.body for r in refused]
    for r in refused:
        assert_refused(r, "This workspace")
    assert sum(s.accepted for s in silents) == 4
    publish(small.database_url, "idea.created", a_id, {"idea": sample_idea()})
    publish(small.database_url, "idea.created", b_id, {"idea": sample_idea()})
    (got_b,) = await receiver.wait(b_path, 1, timeout=5)
    assert got_b.at - started < 1.5, f"B's delivery came {got_b.at - started:.2f} s in"
    sent = await asyncio.gather(*pings)
    assert sorted(r.status for r in sent) == [200] * 4 + [429] * 2
    (got_a,) = await receiver.wait(a_path, 1, timeout=5)
    assert got_a.at - started > 1.5, f"A's delivery came {got_a.at - started:.2f} s in"
    assert sum(s.accepted for s in silents) == 4


async def test_pings_and_deliveries_share_a_host(
    small: PartSystem, http: Any, openapi: Any, receiver: Receiver
) -> None:
    """Pings holding a host's share make a delivery to that host wait for a slot (it then
    succeeds on its first attempt, not on a retry after waiting out its timeout in line);
    deliveries holding the share make a ping to that host answer 429 at once."""
    a_id, a = workspace_api(small, http, openapi)
    b_id, b = workspace_api(small, http, openapi)
    hang, ok = receiver.new_path(), receiver.new_path()
    receiver.answer(hang, "hang")
    a_sub = await subscribe(a, receiver.url(hang))
    b_sub = await subscribe(b, receiver.url(ok))
    started = time.time()
    pings = [ping(a, a_sub) for _ in range(2)]
    await receiver.wait(hang, 2, timeout=5)
    publish(small.database_url, "idea.created", b_id, {"idea": sample_idea()})
    (got,) = await receiver.wait(ok, 1, timeout=6)
    assert got.at - started > 1.5, f"the delivery came {got.at - started:.2f} s in"
    assert all(r.status == 200 for r in await asyncio.gather(*pings))
    detail = await deliveries_when(
        b, b_sub["id"], lambda d: d["recentDeliveries"][0]["status"] == "delivered"
    )
    assert detail["recentDeliveries"][0]["attemptCount"] == 1, detail
    # Now deliveries hold the host: the ping to its other path is refused at once.
    for _ in range(2):
        publish(small.database_url, "idea.created", a_id, {"idea": sample_idea()})
    await receiver.wait(hang, 4, timeout=5)
    t0 = time.monotonic()
    r = await b.post(f"{W}/{b_sub['id']}/test")
    assert time.monotonic() - t0 < 1.0
    assert_refused(r, "The target host")
    assert len(receiver.at(ok)) == 1
    assert (await a.delete(f"{W}/{a_sub['id']}")).status == 200  # no retries left behind


@pytest.mark.parametrize(
    ("silent", "spellings"),
    [
        (0, ["localhost", "LOCALHOST", "LocalHost."]),
        (3, ["[::1]", "[0:0:0:0:0:0:0:1]", "[0::1]"]),
    ],
)
async def test_host_spellings_share_one_share(
    small: PartSystem,
    http: Any,
    openapi: Any,
    silents: list[Silent],
    silent: int,
    spellings: list[str],
) -> None:
    """One host written three ways is one host: two pings hang on two spellings (the host's
    share) and a ping to the third is refused at once, before any connection."""
    target = silents[silent]
    _, api = workspace_api(small, http, openapi)
    subs = [await subscribe(api, target.url(host)) for host in spellings]
    pings = [ping(api, sub) for sub in subs[:2]]
    deadline = time.monotonic() + 5
    while target.accepted < 2:
        assert time.monotonic() < deadline, f"{target.accepted} pings arrived"
        await asyncio.sleep(0.02)
    t0 = time.monotonic()
    r = await api.post(f"{W}/{subs[2]['id']}/test")
    assert time.monotonic() - t0 < 1.0
    assert_refused(r, "The target host")
    assert all(r.status == 200 for r in await asyncio.gather(*pings))
    assert target.accepted == 2
