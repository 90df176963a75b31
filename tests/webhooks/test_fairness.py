"""Per-workspace fairness: one workspace pointing its subscriptions at hanging receivers holds
only its own share of the dispatcher, and another workspace's deliveries go out at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.webhooks.support import (
    PartSystem,
    Receiver,
    publish_events,
    sample_idea,
    start_part_system,
    stop_part_system,
    workspace_api,
)

# 8 slots in all, 2 per host, 4 per workspace: four hanging hosts could take every slot.
ENV = {
    "WEBHOOK_CONCURRENCY": "8",
    "WEBHOOK_PER_HOST_CONCURRENCY": "2",
    "WEBHOOK_PER_WORKSPACE_CONCURRENCY": "4",
    "WEBHOOK_TIMEOUT_S": "3",
}


@pytest.fixture(scope="module")
async def small() -> AsyncIterator[PartSystem]:
    sys_ = await start_part_system(ENV)
    yield sys_
    await stop_part_system(sys_)


@pytest.fixture(scope="module")
async def receivers() -> AsyncIterator[list[Receiver]]:
    rs = [await Receiver().start() for _ in range(3)]
    yield rs
    for r in rs:
        await r.stop()


async def test_hanging_receivers_of_one_workspace_do_not_delay_another(
    small: PartSystem, http: Any, openapi: Any, receivers: list[Receiver]
) -> None:
    """Workspace A's 40 deliveries to four hanging hosts are under way; workspace B's
    delivery still arrives within a second, and A keeps going within its share."""
    hanging, healthy = receivers[:2], receivers[2]
    a_id, a_api = workspace_api(small, http, openapi)
    b_id, b_api = workspace_api(small, http, openapi)
    hang_paths = []
    for r in hanging:
        for host in ("127.0.0.1", "localhost"):  # two host keys per receiver
            path = r.new_path()
            r.answer(path, "hang")
            hang_paths.append((r, path))
            resp = await a_api.post(
                "/api/v1/webhooks",
                json={"targetUrl": r.url(path, host), "events": ["idea.created"]},
            )
            assert resp.status == 200, resp.body
    ok_path = healthy.new_path()
    resp = await b_api.post(
        "/api/v1/webhooks", json={"targetUrl": healthy.url(ok_path), "events": ["idea.created"]}
    )
    assert resp.status == 200, resp.body
    publish_events(
        small.database_url, [("idea.created", a_id, {"idea": sample_idea()}) for _ in range(10)]
    )
    await wait_for(lambda: sum(len(r.at(p)) for r, p in hang_paths) >= 4, 5.0)
    await asyncio.sleep(0.3)  # A's rows are all written and its attempts hang
    started = time.time()
    publish_events(small.database_url, [("idea.created", b_id, {"idea": sample_idea()})])
    (got,) = await healthy.wait(ok_path, 1, timeout=10)
    assert got.at - started < 1.0, f"B waited {got.at - started:.2f} s behind A"
    # A held at most its share (4) at any moment, not every slot.
    assert sum(len(r.at(p)) for r, p in hang_paths) <= 4


async def wait_for(cond: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.05)
