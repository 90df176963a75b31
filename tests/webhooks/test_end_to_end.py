"""Ideas created through the gateway reach subscribers; nothing is lost when RabbitMQ restarts
or the webhooks process is killed in the middle of a burst."""

from __future__ import annotations

import asyncio
import signal
import time

from tests.support import chaos
from tests.support.api import Api, Workspace
from tests.support.processes import System
from tests.webhooks.support import Receiver, verify

BURST = 500


async def subscribe(api: Api, url: str, events: list[str]) -> dict:
    r = await api.post("/api/v1/webhooks", json={"targetUrl": url, "events": events})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def create_ideas(api: Api, n: int, prefix: str, concurrency: int = 16) -> list[str]:
    """Create `n` ideas one request each; return their ids."""
    ids: list[str] = []
    queue = iter(range(n))

    async def worker() -> None:
        for i in queue:
            r = await api.post("/api/v1/ideas", json={"title": f"{prefix} {i}"})
            assert r.status == 200, r.body
            ids.append(r.data["id"])

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ids


def delivered_ids(receiver: Receiver, path: str) -> set[str]:
    return {r.json["data"]["idea"]["id"] for r in receiver.at(path)}


async def wait_all(receiver: Receiver, path: str, want: set[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not want <= delivered_ids(receiver, path):
        missing = len(want - delivered_ids(receiver, path))
        assert time.monotonic() < deadline, f"{missing} of {len(want)} events never arrived"
        await asyncio.sleep(0.25)


async def test_api_changes_arrive_as_events(ws: Workspace, receiver: Receiver) -> None:
    """POST and PATCH of an idea deliver idea.created, idea.updated and idea.status_changed."""
    path = receiver.new_path()
    sub = await subscribe(
        ws.api, receiver.url(path), ["idea.created", "idea.updated", "idea.status_changed"]
    )
    idea = (await ws.api.post("/api/v1/ideas", json={"title": "Webhooks e2e"})).data
    r = await ws.api.patch(f"/api/v1/ideas/{idea['id']}", json={"status": "planned"})
    assert r.status == 200, r.body
    got = await receiver.wait(path, 3)
    kinds = sorted(g.headers["X-Service-Event"] for g in got)
    assert kinds == ["idea.created", "idea.status_changed", "idea.updated"]
    created = next(g for g in got if g.headers["X-Service-Event"] == "idea.created")
    assert created.json["data"]["idea"] == idea and created.json["workspaceId"] == ws.id
    changed = next(g for g in got if g.headers["X-Service-Event"] == "idea.status_changed")
    assert changed.json["data"]["previousStatus"] == "new"
    assert all(verify(sub["secret"], g) for g in got)


async def test_latency_from_api_call_to_receiver(ws: Workspace, receiver: Receiver) -> None:
    """The first attempt follows the API call at once (well under a second)."""
    path = receiver.new_path()
    await subscribe(ws.api, receiver.url(path), ["idea.created"])
    started = time.time()
    await ws.api.post("/api/v1/ideas", json={"title": "fast"})
    (got,) = await receiver.wait(path, 1, timeout=5)
    assert got.at - started < 1.0


async def test_no_event_lost_when_rabbitmq_restarts(ws: Workspace, receiver: Receiver) -> None:
    """RabbitMQ stopped and started during a burst of 500 creates: all 500 are delivered."""
    path = receiver.new_path()
    await subscribe(ws.api, receiver.url(path), ["idea.created"])
    first = await create_ideas(ws.api, 150, "before")
    await chaos.stop_broker()
    try:
        during = await create_ideas(ws.api, 200, "during")
    finally:
        await chaos.start_broker()
    after = await create_ideas(ws.api, BURST - 350, "after")
    await wait_all(receiver, path, set(first + during + after), timeout=60)


async def test_no_event_lost_when_dispatcher_is_killed(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """The webhooks process killed with SIGKILL mid-burst: all 500 are delivered after restart."""
    path = receiver.new_path()
    await subscribe(ws.api, receiver.url(path), ["idea.created"])
    burst = asyncio.create_task(create_ideas(ws.api, BURST, "kill"))
    while len(receiver.at(path)) < 50:
        await asyncio.sleep(0.02)
    system.stop_one("webhooks", 0, signal.SIGKILL)
    try:
        ids = await burst
    finally:
        system.start_one("webhooks", 0)
        await system.wait_ready()
    await wait_all(receiver, path, set(ids), timeout=60)
