"""Idempotency-Key end to end with a real POST: creating ideas through both gateways."""

from __future__ import annotations

import asyncio
import uuid

from tests.support.processes import System


async def idea_count(api) -> int:  # type: ignore[no-untyped-def]
    r = await api.get("/api/v1/ideas", params={"limit": 100})
    assert r.status == 200
    return len(r.data)


async def test_repeated_create_replays_and_creates_nothing(system: System, ws) -> None:
    """Same key and body: the first answer again, `Idempotent-Replayed: true`, one idea."""
    key = {"Idempotency-Key": f"create-{uuid.uuid4()}"}
    body = {"title": "Offline mode"}
    first = await ws.api.post("/api/v1/ideas", json=body, headers=key)
    assert first.status == 200
    for base in system.gateway_urls():
        again = await ws.api.post("/api/v1/ideas", json=body, headers=key, base_url=base)
        assert again.status == 200 and again.headers["Idempotent-Replayed"] == "true"
        assert again.json == first.json
    assert await idea_count(ws.api) == 1
    other = await ws.api.post("/api/v1/ideas", json={"title": "Other"}, headers=key)
    assert other.status == 409 and other.error["code"] == "conflict"
    assert await idea_count(ws.api) == 1


async def test_a_stored_validation_error_is_replayed(system: System, ws) -> None:
    key = {"Idempotency-Key": uuid.uuid4().hex}
    first = await ws.api.post("/api/v1/ideas", json={"title": ""}, headers=key)
    again = await ws.api.post("/api/v1/ideas", json={"title": ""}, headers=key)
    assert first.status == again.status == 400 and again.json == first.json
    assert again.headers["Idempotent-Replayed"] == "true"


async def test_concurrent_creates_on_two_gateways_make_one_idea(system: System, ws) -> None:
    """The same key sent at once to both replicas, several times over: one idea each time."""
    for i in range(3):
        key = {"Idempotency-Key": uuid.uuid4().hex}
        body = {"title": f"Concurrent {i}"}
        results = await asyncio.gather(
            *(
                ws.api.post("/api/v1/ideas", json=body, headers=key, base_url=url)
                for url in system.gateway_urls() * 2
            )
        )
        assert {r.status for r in results} <= {200, 409}
        fresh = [r for r in results if r.status == 200 and "Idempotent-Replayed" not in r.headers]
        assert len(fresh) == 1
    assert await idea_count(ws.api) == 3
