"""Authentication, scopes, routing errors and the internal token, through real processes."""

from __future__ import annotations

import asyncio
import re
import uuid

import aiohttp

from tests.support.api import Api, make_key
from tests.support.processes import System


async def test_missing_header_is_unauthorized(api: Api) -> None:
    """No Authorization header answers 401 unauthorized."""
    r = await api.with_key(None).get("/api/v1/ideas")
    assert r.status == 401 and r.error["code"] == "unauthorized"


async def test_malformed_header_is_unauthorized(api: Api) -> None:
    """A header that is not `Bearer <token>`, or an empty token, answers 401 unauthorized."""
    for value in ("Basic abc", "Bearer", "Bearer   ", "token"):
        r = await api.get("/api/v1/ideas", headers={"Authorization": value})
        assert r.status == 401 and r.error["code"] == "unauthorized", value


async def test_unknown_key_is_invalid(api: Api) -> None:
    """A well-formed token that is no key answers 401 invalid_key."""
    r = await api.with_key("ims_live_" + "x" * 40).get("/api/v1/ideas")
    assert r.status == 401 and r.error["code"] == "invalid_key"


async def test_auth_comes_before_routing(api: Api) -> None:
    """An unknown path without a key is 401, not 404."""
    r = await api.with_key(None).get("/api/v1/nowhere")
    assert r.status == 401


async def test_revoked_key_stops_within_five_seconds(system: System, ws) -> None:
    """A revoked key is refused within 5 s."""
    import psycopg2

    from services.ctl import admin

    key = make_key(system.database_url, ws.id)
    client = ws.api.with_key(key["key"])
    assert (await client.get("/api/v1/automation/auth")).status == 200
    conn = psycopg2.connect(system.database_url)
    admin.revoke_key(conn, key["id"])
    conn.close()
    deadline = asyncio.get_running_loop().time() + 5
    while True:
        r = await client.get("/api/v1/automation/auth")
        if r.status == 401:
            assert r.error["code"] == "invalid_key"
            break
        assert asyncio.get_running_loop().time() < deadline, "revoked key still accepted"
        await asyncio.sleep(0.2)


async def test_staging_key_works(system: System, ws) -> None:
    """Staging keys (ims_test_) authenticate like production keys."""
    key = make_key(system.database_url, ws.id, kind="staging")
    assert key["key"].startswith("ims_test_")
    r = await ws.api.with_key(key["key"]).get("/api/v1/automation/auth")
    assert r.status == 200 and r.json["workspace"]["id"] == ws.id


async def test_scope_from_route_table(system: System, ws) -> None:
    """A key without the route's scope gets 403 insufficient_scope; with it, it passes."""
    from libs.api.table import ROUTE_TABLE

    key = make_key(system.database_url, ws.id, scopes="workspace:read")
    client = ws.api.with_key(key["key"])
    checked = 0
    for route in ROUTE_TABLE:
        if route.scope in (None, "workspace:read") or route.method != "GET":
            continue
        path = re.sub(r"\{\w+\}", lambda _: str(uuid.uuid4()), route.path)
        r = await client.request(route.method, path)
        assert r.status == 403 and r.error["code"] == "insufficient_scope", route.path
        checked += 1
    assert checked >= 15


async def test_unknown_path_and_method(api: Api) -> None:
    """Unknown path: 404 not_found; known path, wrong method: 405 method_not_allowed."""
    r = await api.get("/api/v1/nowhere")
    assert r.status == 404 and r.error["code"] == "not_found"
    r = await api.put("/api/v1/ideas", json={})
    assert r.status == 405 and r.error["code"] == "method_not_allowed"


async def test_non_uuid_id_is_not_found(api: Api) -> None:
    """A path id that is not a UUID answers 404 not_found."""
    r = await api.get("/api/v1/ideas/not-a-uuid")
    assert r.status == 404 and r.error["code"] == "not_found"


async def test_service_refuses_calls_without_internal_token(
    system: System, http: aiohttp.ClientSession, ws
) -> None:
    """Each service answers 401 to a direct call that did not come through the gateway."""
    for svc in ("ideas", "customers", "webhooks", "analytics"):
        headers = {"X-Ims-Workspace-Id": ws.id, "X-Ims-Internal-Token": "guess"}
        async with http.get(system.service_url(svc) + "/api/v1/ideas", headers=headers) as r:
            assert r.status == 401, svc
        async with http.get(system.service_url(svc) + "/healthz") as r:
            assert r.status == 200


async def test_client_cannot_spoof_caller_headers(api: Api, new_workspace) -> None:
    """X-Ims-* headers from a client are dropped: the workspace is the key's."""
    other = await new_workspace()
    r = await api.get("/api/v1/automation/auth", headers={"X-Ims-Workspace-Id": other.id})
    assert r.status == 200 and r.json["workspace"]["id"] != other.id


async def test_openapi_document(api: Api) -> None:
    """The document is served without a key, OpenAPI 3.1, version 1.1.0."""
    r = await api.with_key(None).get("/api/v1/openapi.json")
    assert r.status == 200
    doc = r.json
    assert doc["openapi"].startswith("3.1") and doc["info"]["version"] == "1.1.0"
    assert "/api/v1/ideas/{id}" in doc["paths"]


async def test_health_and_readiness_unauthenticated(
    system: System, http: aiohttp.ClientSession
) -> None:
    """/healthz and /readyz answer without a key on every process."""
    for svc, ports in system.ports.items():
        for port in ports:
            for path in ("/healthz", "/readyz"):
                async with http.get(f"http://127.0.0.1:{port}{path}") as r:
                    assert r.status == 200, (svc, path)
