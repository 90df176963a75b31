"""The shared middlewares on a bare app: error envelope, 413, request id, internal token, logs."""

from __future__ import annotations

import io
import secrets
from typing import Any

import pytest
import structlog
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from libs.common.caller import H_TOKEN, H_WORKSPACE
from libs.common.errors import Conflict, ValidationFailed
from libs.common.settings import Settings
from libs.common.validation import Body, parse_body
from libs.common.web import caller, create_app, data_response

TOKEN = secrets.token_urlsafe(32)
SETTINGS = Settings.from_env({"INTERNAL_TOKEN": TOKEN, "CURSOR_SECRET": secrets.token_urlsafe(32)})


class Echo(Body):
    name: str


async def echo(request: web.Request) -> web.Response:
    body = await parse_body(request, Echo)
    return data_response({"name": body.name, "workspace": str(caller(request).workspace_id)})


async def conflict(_: web.Request) -> web.Response:
    raise Conflict("taken", field="name")


async def boom(_: web.Request) -> web.Response:
    raise RuntimeError("secret detail")


async def bad(_: web.Request) -> web.Response:
    raise ValidationFailed("nope", field="items[2].x")


def make_app(internal: bool) -> web.Application:
    app = create_app(SETTINGS, "unit", internal=internal)
    app.router.add_post("/echo", echo)
    app.router.add_get("/conflict", conflict)
    app.router.add_get("/boom", boom)
    app.router.add_get("/bad", bad)
    return app


@pytest.fixture
async def client() -> Any:
    async with TestClient(TestServer(make_app(internal=True))) as c:
        yield c


H = {H_TOKEN: TOKEN, H_WORKSPACE: "00000000-0000-0000-0000-000000000007"}


async def test_internal_token_is_required(client: TestClient) -> None:
    r = await client.post("/echo", json={"name": "a"})
    assert r.status == 401 and (await r.json())["error"]["code"] == "unauthorized"
    r = await client.post("/echo", json={"name": "a"}, headers={**H, H_TOKEN: "tok2"})
    assert r.status == 401
    r = await client.post("/echo", json={"name": "a"}, headers=H)
    assert r.status == 200
    assert await r.json() == {
        "data": {"name": "a", "workspace": "00000000-0000-0000-0000-000000000007"}
    }
    assert (await client.get("/healthz")).status == 200


async def test_every_internal_token_of_a_rotation_is_accepted() -> None:
    """INTERNAL_TOKEN "new,old": a service takes calls carrying either (from gateways not yet
    rolled and from those rolled), and refuses any other token."""
    new, old = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    rolling = Settings.from_env(
        {"INTERNAL_TOKEN": f"{new},{old}", "CURSOR_SECRET": secrets.token_urlsafe(32)}
    )
    app = create_app(rolling, "unit", internal=True)
    app.router.add_post("/echo", echo)
    async with TestClient(TestServer(app)) as c:
        for token, status in (
            (new, 200),
            (old, 200),
            (f"{new},{old}", 401),
            ("tok", 401),
            ("", 401),
        ):
            r = await c.post("/echo", json={"name": "a"}, headers={**H, H_TOKEN: token})
            assert r.status == status, token


async def test_error_envelope(client: TestClient) -> None:
    cases = {
        "/conflict": (409, {"code": "conflict", "message": "taken", "field": "name"}),
        "/bad": (400, {"code": "validation_error", "message": "nope", "field": "items[2].x"}),
        "/nowhere": (404, None),
    }
    for path, (status, error) in cases.items():
        r = await client.get(path, headers=H)
        body = await r.json()
        assert r.status == status
        if error is not None:
            assert body == {"error": error}
        else:
            assert body["error"]["code"] == "not_found"
    r = await client.delete("/echo", headers=H)
    assert r.status == 405 and (await r.json())["error"]["code"] == "method_not_allowed"


async def test_unexpected_error_hides_its_detail(client: TestClient) -> None:
    with structlog.testing.capture_logs() as logs:
        r = await client.get("/boom", headers={**H, "X-Request-Id": "rid-boom"})
    body = await r.json()
    assert r.status == 500 and body["error"]["code"] == "internal_error"
    assert "secret detail" not in body["error"]["message"]
    assert "rid-boom" in body["error"]["message"]
    errors = [e for e in logs if e["event"] == "unhandled_error"]
    assert len(errors) == 1 and errors[0]["log_level"] == "error"


async def test_body_over_one_mib_is_413(client: TestClient) -> None:
    r = await client.post(
        "/echo",
        data=io.BytesIO(b"{" + b" " * (1024 * 1024) + b"}"),
        headers={**H, "Content-Type": "application/json"},
    )
    assert r.status == 413
    assert (await r.json())["error"]["code"] == "validation_error"


async def test_bad_bodies(client: TestClient) -> None:
    r = await client.post("/echo", data=b"{", headers=H)
    assert r.status == 400 and (await r.json())["error"]["code"] == "invalid_json"
    r = await client.post("/echo", data=b"", headers=H)
    assert (await r.json())["error"] == {
        "code": "validation_error",
        "message": "Request body is required",
        "field": "body",
    }
    r = await client.post("/echo", json={"name": 1}, headers=H)
    assert (await r.json())["error"]["field"] == "name"


async def test_request_id_is_echoed_or_made(client: TestClient) -> None:
    r = await client.get("/conflict", headers={**H, "X-Request-Id": "abc-123"})
    assert r.headers["X-Request-Id"] == "abc-123"
    r = await client.get("/conflict", headers=H)
    assert len(r.headers["X-Request-Id"]) == 32
    r = await client.get("/conflict", headers={**H, "X-Request-Id": "x" * 200})
    assert r.headers["X-Request-Id"] != "x" * 200


async def test_one_log_line_per_request_with_its_id(client: TestClient) -> None:
    with structlog.testing.capture_logs() as logs:
        await client.get("/conflict", headers={**H, "X-Request-Id": "rid-log"})
    lines = [e for e in logs if e["event"] == "request"]
    assert len(lines) == 1
    assert lines[0]["status"] == 409 and lines[0]["path"] == "/conflict"
    assert lines[0]["method"] == "GET" and "duration_ms" in lines[0]


async def test_request_id_is_bound_to_log_context() -> None:
    seen: dict[str, Any] = {}

    async def peek(_: web.Request) -> web.Response:
        seen.update(structlog.contextvars.get_contextvars())
        return data_response({})

    app = create_app(SETTINGS, "unit", internal=False)
    app.router.add_get("/peek", peek)
    async with TestClient(TestServer(app)) as c:
        await c.get("/peek", headers={"X-Request-Id": "rid-ctx"})
    assert seen["request_id"] == "rid-ctx"
