"""CORS (docs/gateway.md): off by default; when CORS_ALLOWED_ORIGINS is set, preflights are
answered before authentication and every answer to an allowed origin exposes the API's headers.
The rig's gateways allow https://app.example.com and http://localhost:3000."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

import aiohttp
import pytest

from libs.common.settings import SettingsError
from services.gateway.settings import GatewaySettings as Settings
from tests.support.api import Api
from tests.support.processes import System

from .conftest import GatewayRig

APP = "https://app.example.com"
EXPOSED = {
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "retry-after",
    "x-request-id",
    "idempotent-replayed",
    "content-disposition",
}

SECRETS = {"INTERNAL_TOKEN": secrets.token_urlsafe(32), "CURSOR_SECRET": secrets.token_urlsafe(32)}


def listed(headers: Any, name: str) -> set[str]:
    return {v.strip().lower() for v in headers.get(name, "").split(",") if v.strip()}


async def preflight(
    http: aiohttp.ClientSession, base: str, path: str, origin: str, method: str = "POST"
) -> aiohttp.ClientResponse:
    async with http.options(
        base + path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization, content-type, idempotency-key",
        },
    ) as r:
        await r.read()
        return r


async def test_preflight_is_answered_before_authentication(rig: GatewayRig) -> None:
    """No key, no rate window: 204 with the methods, headers and cache time; any path."""
    for _ in range(70):  # more than the 60 unauthenticated requests a minute an address gets
        r = await preflight(rig.http, rig.system.base_url, "/api/v1/ideas", APP)
        assert r.status == 204, r.status
    assert r.headers["Access-Control-Allow-Origin"] == APP
    assert {"post", "patch", "delete", "get"} <= listed(r.headers, "Access-Control-Allow-Methods")
    assert {"authorization", "content-type", "idempotency-key"} <= listed(
        r.headers, "Access-Control-Allow-Headers"
    )
    assert int(r.headers["Access-Control-Max-Age"]) > 0
    assert "origin" in listed(r.headers, "Vary") and "RateLimit-Limit" not in r.headers
    r = await preflight(
        rig.http,
        rig.system.base_url,
        f"/api/v1/ideas/{uuid.uuid4()}",
        "http://localhost:3000",
        "PATCH",
    )
    assert r.status == 204 and r.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"


async def test_preflight_from_another_origin_gets_no_grant(rig: GatewayRig) -> None:
    r = await preflight(rig.http, rig.system.base_url, "/api/v1/ideas", "https://evil.example")
    assert r.status == 204
    assert "Access-Control-Allow-Origin" not in r.headers
    assert "Access-Control-Allow-Methods" not in r.headers


async def test_answers_to_an_allowed_origin_expose_the_api_headers(rig: GatewayRig) -> None:
    """Success, error, idempotent replay and a streamed export all carry the grant."""
    ws = rig.workspace()
    origin = {"Origin": APP}
    r = await ws.api.get("/api/v1/ideas", headers=origin)
    assert r.status == 200 and r.headers["Access-Control-Allow-Origin"] == APP
    assert EXPOSED <= listed(r.headers, "Access-Control-Expose-Headers")
    assert "origin" in listed(r.headers, "Vary") and "RateLimit-Limit" in r.headers
    # (429 once test_address_limit has used up this address's window for the minute)
    r = await ws.api.with_key(None).get("/api/v1/ideas", headers=origin)
    assert r.status in (401, 429) and r.headers["Access-Control-Allow-Origin"] == APP
    key = {**origin, "Idempotency-Key": uuid.uuid4().hex}
    body = {"name": uuid.uuid4().hex}
    await ws.api.post("/api/v1/webhooks", json=body, headers=key)
    r = await ws.api.post("/api/v1/webhooks", json=body, headers=key)
    assert r.headers["Idempotent-Replayed"] == "true"
    assert r.headers["Access-Control-Allow-Origin"] == APP
    r = await ws.api.get("/api/v1/export/ideas", params={"format": "csv"}, headers=origin)
    assert r.status == 200 and r.headers["Access-Control-Allow-Origin"] == APP
    assert "content-disposition" in listed(r.headers, "Access-Control-Expose-Headers")


async def test_other_origins_get_no_grant(rig: GatewayRig) -> None:
    ws = rig.workspace()
    r = await ws.api.get("/api/v1/ideas", headers={"Origin": "https://evil.example"})
    assert r.status == 200 and "Access-Control-Allow-Origin" not in r.headers
    assert "Access-Control-Expose-Headers" not in r.headers


async def test_cors_is_off_by_default(
    system: System, api: Api, http: aiohttp.ClientSession
) -> None:
    """Without CORS_ALLOWED_ORIGINS a preflight is an ordinary request (it has no key) and no
    answer carries a grant."""
    r = await preflight(http, system.base_url, "/api/v1/ideas", APP)
    assert r.status == 401 and "Access-Control-Allow-Origin" not in r.headers
    r2 = await api.get("/api/v1/ideas", headers={"Origin": APP})
    assert r2.status == 200 and "Access-Control-Allow-Origin" not in r2.headers


def test_allowed_origins_are_checked_at_start() -> None:
    """A value that is not `*` or a list of origins stops the process, naming the variable."""
    ok = Settings.from_env(
        {**SECRETS, "CORS_ALLOWED_ORIGINS": " https://App.example.com ,http://[::1]:8080"}
    )
    assert ok.cors_allowed_origins == ("https://app.example.com", "http://[::1]:8080")
    assert Settings.from_env(SECRETS).cors_allowed_origins == ()
    for bad in (
        "https://app.example.com/",
        "app.example.com",
        "*, https://a.example",
        "ftp://a.example",
    ):
        with pytest.raises(SettingsError, match="CORS_ALLOWED_ORIGINS"):
            Settings.from_env({**SECRETS, "CORS_ALLOWED_ORIGINS": bad})
