"""The per-address window of unauthenticated calls (60 per minute), in the rig's own database."""

from __future__ import annotations

from .conftest import GatewayRig, clear_of_window_edge, rate_headers


async def test_unauthenticated_calls_are_limited_per_address(rig: GatewayRig) -> None:
    """openapi.json and refused keys share one window per client address, over both replicas."""
    ws = rig.workspace()
    anon = ws.api.with_key(None)
    bad = ws.api.with_key("ims_live_" + "b" * 40)
    urls = rig.system.gateway_urls()
    await clear_of_window_edge(60)
    seen = []
    for i in range(60):
        client = anon if i % 2 else bad
        path = "/api/v1/openapi.json" if i % 2 else "/api/v1/automation/auth"
        r = await client.get(path, base_url=urls[i % 2])
        assert r.status == (200 if i % 2 else 401), i
        seen.append(rate_headers(r.headers)["RateLimit-Remaining"])
    assert seen == list(range(59, -1, -1))
    for client, path in ((anon, "/api/v1/openapi.json"), (bad, "/api/v1/automation/auth"),
                         (anon, "/api/v1/ideas")):
        r = await client.get(path)
        assert r.status == 429 and r.json["error"]["code"] == "rate_limited"
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        assert rate_headers(r.headers)["RateLimit-Limit"] == 60
    # A valid key is counted in its workspace's window, not the address's.
    assert (await ws.api.get("/api/v1/automation/auth")).status == 200
    # Health checks are never limited.
    async with rig.http.get(urls[0] + "/healthz") as h:
        assert h.status == 200
