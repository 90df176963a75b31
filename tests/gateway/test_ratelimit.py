"""Rate limits through both gateway replicas of the shared system: exact, with their headers."""

from __future__ import annotations

import asyncio
import io
import uuid

from tests.support.api import Api
from tests.support.processes import System

from .conftest import clear_of_window_edge, rate_headers


async def test_limit_is_exact_across_two_gateways(system: System, new_workspace) -> None:
    """50 concurrent calls split over two replicas with a limit of 20: exactly 20 pass."""
    ws = await new_workspace(rate_limit=20)
    urls = system.gateway_urls()
    assert len(urls) == 2
    await clear_of_window_edge(60)
    results = await asyncio.gather(
        *(ws.api.get("/api/v1/automation/auth", base_url=urls[i % 2]) for i in range(50))
    )
    ok = [r for r in results if r.status == 200]
    limited = [r for r in results if r.status == 429]
    assert len(ok) == 20 and len(limited) == 30
    for r in limited:
        assert r.error["code"] == "rate_limited"
        h = rate_headers(r.headers)
        assert h["RateLimit-Limit"] == 20 and h["RateLimit-Remaining"] == 0
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        assert int(r.headers["Retry-After"]) == h["RateLimit-Reset"]
    remaining = sorted(rate_headers(r.headers)["RateLimit-Remaining"] for r in ok)
    assert remaining == list(range(20)), "each admitted call saw its own count"
    assert all("Retry-After" not in r.headers for r in ok)


async def test_the_window_is_per_workspace(system: System, new_workspace) -> None:
    """Every key of a workspace counts in one window; another workspace is untouched."""
    ws = await new_workspace(rate_limit=3)
    other = await new_workspace(rate_limit=3)
    second = ws.api.with_key((await ws.new_key(system.database_url))["key"])
    await clear_of_window_edge(60)
    statuses = [
        (await c.get("/api/v1/automation/auth")).status for c in (ws.api, second, ws.api, second)
    ]
    assert statuses == [200, 200, 200, 429]
    assert (await other.api.get("/api/v1/automation/auth")).status == 200


async def test_headers_on_every_authenticated_answer(system: System, new_workspace) -> None:
    """Success, 404, 405, 403 scope, 403 plan, 413 and service answers all carry the headers."""
    ws = await new_workspace(rate_limit=1000)
    narrow = ws.api.with_key(
        (await ws.new_key(system.database_url, scopes="workspace:read"))["key"]
    )
    starter = await new_workspace(plan="starter", rate_limit=1000)
    calls = [
        (ws.api.get("/api/v1/automation/auth"), 200),
        (ws.api.get("/api/v1/nowhere"), 404),
        (ws.api.get(f"/api/v1/ideas/{uuid.uuid4()}x"), 404),
        (ws.api.put("/api/v1/ideas", json={}), 405),
        (narrow.get("/api/v1/customers"), 403),
        (starter.api.get("/api/v1/analytics/summary"), 403),
        (
            ws.api.post(
                "/api/v1/ideas",
                body=io.BytesIO(b"x" * (1024 * 1024 + 10)),  # type: ignore[arg-type]
                headers={"Content-Type": "application/json"},
            ),
            413,
        ),
    ]
    for call, status in calls:
        r = await call
        assert r.status == status, (status, r.body[:200])
        h = rate_headers(r.headers)
        assert h["RateLimit-Limit"] == 1000 and 0 < h["RateLimit-Remaining"] < 1000
        assert 1 <= h["RateLimit-Reset"] <= 60
    # An answer from the service itself (whatever it is today) carries them too.
    r = await ws.api.get("/api/v1/roadmap/stages", check=False)
    assert r.status != 401 and "RateLimit-Remaining" in r.headers


async def test_plan_required_for_analytics_and_export_on_starter(
    system: System, new_workspace
) -> None:
    """A starter workspace gets 403 plan_required on every plan-gated route of the table."""
    from libs.api.table import ROUTE_TABLE

    starter = await new_workspace(plan="starter")
    pro = await new_workspace(plan="pro")
    gated = [r for r in ROUTE_TABLE if r.plan_gated]
    assert {r.path.split("/")[3] for r in gated} == {"analytics", "export"}
    for route in gated:
        r = await starter.api.request(route.method, route.path)
        assert r.status == 403 and r.error["code"] == "plan_required", route.path
        r = await pro.api.request(route.method, route.path, check=False)
        assert r.status != 403, route.path


async def test_scope_comes_before_plan(system: System, new_workspace) -> None:
    """A key without the scope on a starter workspace hears about the scope first."""
    starter = await new_workspace(plan="starter")
    narrow = starter.api.with_key(
        (await starter.new_key(system.database_url, scopes="ideas:read"))["key"]
    )
    r = await narrow.get("/api/v1/analytics/summary")
    assert r.status == 403 and r.error["code"] == "insufficient_scope"


async def test_export_window_ten_per_hour(system: System, new_workspace) -> None:
    """All four export kinds share one window of 10 per hour; the 11th call is 429."""
    ws = await new_workspace(plan="pro", rate_limit=1000)
    kinds = ("ideas", "customers", "decisions", "signals")
    await clear_of_window_edge(3600)
    for i in range(10):
        r = await ws.api.get(f"/api/v1/export/{kinds[i % 4]}", check=False)
        assert r.status != 429, i
    r = await ws.api.get("/api/v1/export/signals")
    assert r.status == 429 and r.error["code"] == "rate_limited"
    assert 1 <= int(r.headers["Retry-After"]) <= 3600
    assert r.headers["RateLimit-Limit"] == "10" and r.headers["RateLimit-Remaining"] == "0"
    # The per-minute window is untouched by the export window's refusal.
    assert (await ws.api.get("/api/v1/automation/auth")).status == 200


async def test_unauthenticated_answers_carry_the_address_window(api: Api) -> None:
    """A refused key's 401 carries the per-address window (60 per minute) in the headers."""
    r = await api.with_key("ims_live_" + "0" * 40).get("/api/v1/automation/auth")
    assert r.status == 401 and r.error["code"] == "invalid_key"
    assert rate_headers(r.headers)["RateLimit-Limit"] == 60
