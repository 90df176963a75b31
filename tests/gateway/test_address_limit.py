"""The per-address window of unauthenticated calls (60 per minute), in the rig's own database."""

from __future__ import annotations

import random

import aiohttp

from tests.support.api import Api, make_key

from .conftest import GatewayRig, clear_of_window_edge, from_own_address, rate_headers


async def test_unauthenticated_calls_are_limited_per_address(rig: GatewayRig) -> None:
    """openapi.json and refused keys share one window per client address, over both replicas."""
    async with from_own_address() as session:
        await _limited_per_address(rig, session)


async def _limited_per_address(rig: GatewayRig, session: aiohttp.ClientSession) -> None:
    ws = rig.workspace()
    ws.api = Api(session, rig.system.base_url, ws.key, None)
    anon = ws.api.with_key(None)
    bad = ws.api.with_key("ims_live_" + "b" * 40)
    urls = rig.system.gateway_urls()
    await clear_of_window_edge(60)
    for url in urls:  # the key is in use: both replicas know it
        assert (await ws.api.get("/api/v1/automation/auth", base_url=url)).status == 200
    seen = []
    for i in range(60):
        client = anon if i % 2 else bad
        path = "/api/v1/openapi.json" if i % 2 else "/api/v1/automation/auth"
        r = await client.get(path, base_url=urls[i % 2])
        assert r.status == (200 if i % 2 else 401), i
        seen.append(rate_headers(r.headers)["RateLimit-Remaining"])
    assert seen == list(range(59, -1, -1))
    for client, path in (
        (anon, "/api/v1/openapi.json"),
        (bad, "/api/v1/automation/auth"),
        (anon, "/api/v1/ideas"),
    ):
        r = await client.get(path)
        assert r.status == 429 and r.json["error"]["code"] == "rate_limited"
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        assert rate_headers(r.headers)["RateLimit-Limit"] == 60
    # A key in use is counted in its workspace's window, not the address's.
    for url in urls:
        assert (await ws.api.get("/api/v1/automation/auth", base_url=url)).status == 200
    # A key this replica never saw waits for the address's window to end: while an address is
    # past its window, tokens it sends are not looked up (docs/gateway.md).
    unseen = ws.api.with_key(make_key(rig.system.database_url, ws.id)["key"])
    r = await unseen.get("/api/v1/automation/auth", base_url=urls[0])
    assert r.status == 429 and rate_headers(r.headers)["RateLimit-Limit"] == 60
    # Health checks are never limited.
    async with rig.http.get(urls[0] + "/healthz") as h:
        assert h.status == 200


async def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_window(
    rig: GatewayRig,
) -> None:
    """From a trusted proxy (127.0.0.1 in the rig) the client is the right-most X-Forwarded-For
    entry: each client its own window, and nothing a client writes to the left counts. Another
    peer's X-Forwarded-For is ignored."""
    base = rig.system.gateway_urls()[0]
    anon = Api(rig.http, base, "ims_live_" + "c" * 40, None)
    a, b = (f"203.0.113.{n}" for n in random.sample(range(1, 255), 2))
    await clear_of_window_edge(60, margin=10)
    for _ in range(60):
        r = await anon.get("/api/v1/automation/auth", headers={"X-Forwarded-For": a})
        assert r.status == 401
    for forwarded in (a, f"{b}, {a}", f"{b},{a}"):
        r = await anon.get("/api/v1/automation/auth", headers={"X-Forwarded-For": forwarded})
        assert r.status == 429, forwarded
    r = await anon.get("/api/v1/automation/auth", headers={"X-Forwarded-For": f"{a}, {b}"})
    assert r.status == 401 and rate_headers(r.headers)["RateLimit-Remaining"] == 59
    async with from_own_address() as session:  # not a trusted proxy: its own address counts
        direct = Api(session, base, "ims_live_" + "c" * 40, None)
        r = await direct.get("/api/v1/automation/auth", headers={"X-Forwarded-For": a})
        assert r.status == 401 and rate_headers(r.headers)["RateLimit-Remaining"] == 59


async def test_ipv6_clients_are_counted_by_their_64(rig: GatewayRig) -> None:
    """Every address of one IPv6 /64 shares a window (a host given a /64 could otherwise send
    each request from a new address); another /64 has its own, and an IPv4 address written as
    IPv6 is that IPv4 address."""
    base = rig.system.gateway_urls()[0]
    anon = Api(rig.http, base, "ims_live_" + "d" * 40, None)
    net = f"2001:db8:{random.randint(1, 0xFFFF):x}:{random.randint(1, 0xFFFF):x}"
    await clear_of_window_edge(60, margin=10)
    for i in range(60):
        client = f"{net}:{random.randint(1, 0xFFFF):x}::{i + 1:x}"
        r = await anon.get("/api/v1/automation/auth", headers={"X-Forwarded-For": client})
        assert r.status == 401, i
    r = await anon.get("/api/v1/automation/auth", headers={"X-Forwarded-For": f"{net}::ffff"})
    assert r.status == 429 and rate_headers(r.headers)["RateLimit-Limit"] == 60
    other = f"2001:db8:{random.randint(1, 0xFFFF):x}:0:ffff::1"
    r = await anon.get("/api/v1/automation/auth", headers={"X-Forwarded-For": other})
    assert r.status == 401 and rate_headers(r.headers)["RateLimit-Remaining"] == 59
    v4 = f"198.51.100.{random.randint(1, 254)}"
    for forwarded, remaining in ((v4, 59), (f"::ffff:{v4}", 58)):
        r = await anon.get("/api/v1/automation/auth", headers={"X-Forwarded-For": forwarded})
        assert r.status == 401 and rate_headers(r.headers)["RateLimit-Remaining"] == remaining
