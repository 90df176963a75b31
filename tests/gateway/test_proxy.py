"""The proxy when a service is down, and what reaches the service."""

from __future__ import annotations

import uuid

from .conftest import GatewayRig, rate_headers


async def test_service_down_is_503_with_rate_headers(rig: GatewayRig) -> None:
    """An unreachable service: 503 service_unavailable, rate headers kept, the key not kept."""
    ws = rig.workspace()
    key = {"Idempotency-Key": uuid.uuid4().hex}
    rig.system.stop_one("customers")
    try:
        r = await ws.api.get("/api/v1/customers")
        assert r.status == 503 and r.json["error"]["code"] == "service_unavailable"
        assert rate_headers(r.headers)["RateLimit-Limit"] == 100_000
        r = await ws.api.post("/api/v1/customers", json={"name": "x"}, headers=key)
        assert r.status == 503
    finally:
        rig.system.start_one("customers", 0)
        await rig.system.wait_ready()
    r = await ws.api.post("/api/v1/customers", json={"name": "x"}, headers=key)
    assert r.status != 503 and "Idempotent-Replayed" not in r.headers


async def test_forwarded_request_carries_the_caller(rig: GatewayRig) -> None:
    """The service hears the key's workspace, whatever X-Ims-* headers the client sent."""
    ws, other = rig.workspace(), rig.workspace()
    r = await ws.api.post(
        "/api/v1/webhooks",
        json={"name": uuid.uuid4().hex},
        headers={"X-Ims-Workspace-Id": other.id, "X-Ims-Internal-Token": "forged"},
    )
    assert r.status == 200 and r.json["data"]["workspaceId"] == ws.id
    assert rig.upstream.tokens_ok
