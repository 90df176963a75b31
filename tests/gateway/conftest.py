"""A second system for gateway tests whose upstream is a recording stand-in for one service.

The gateway's own behaviour (idempotency, the per-address window) is tested against an upstream
whose every call is counted, in a database of its own so that exhausting the 127.0.0.1 window
here leaves the shared system alone. The stand-in takes the webhooks service's place: the
gateway forwards `/api/v1/webhooks*` to it.
"""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from libs.common.caller import H_TOKEN, H_WORKSPACE
from tests.support.api import Api, Workspace, make_key, make_workspace
from tests.support.processes import (System, create_database, delete_queues, drop_database,
                                     free_port)


@dataclass
class Upstream:
    """What the stand-in saw: calls per body `name`, and the internal token of each call."""

    url: str
    token: str
    calls: dict[str, int] = field(default_factory=dict)
    tokens_ok: bool = True
    accept_encodings: list[str | None] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.tokens_ok &= request.headers.get(H_TOKEN) == self.token
        self.accept_encodings.append(request.headers.get("Accept-Encoding"))
        body = orjson.loads(await request.read() or b"{}")
        name = str(body.get("name", ""))
        n = self.calls[name] = self.calls.get(name, 0) + 1
        if body.get("delay"):
            await asyncio.sleep(float(body["delay"]))
        if body.get("failFirst") and n == 1:
            return web.json_response({"error": {"code": "service_unavailable",
                                                "message": "try again"}}, status=503)
        status = int(body.get("status", 200))
        return web.Response(body=orjson.dumps({"data": {
            "id": str(uuid.uuid4()), "name": name, "call": n,
            "workspaceId": request.headers.get(H_WORKSPACE), "pad": body.get("pad")}}),
            status=status, content_type="application/json", headers={"X-Upstream": "yes"})


# The rig's gateways allow these origins (CORS is off in the shared system).
CORS = "https://app.example.com,http://localhost:3000"


@dataclass
class GatewayRig:
    system: System
    upstream: Upstream
    http: aiohttp.ClientSession

    def workspace(self, plan: str = "enterprise", rate_limit: int | None = 100_000) -> Workspace:
        ws = make_workspace(self.system.database_url, plan=plan, rate_limit=rate_limit)
        key = make_key(self.system.database_url, ws["id"])
        return Workspace(ws["id"], key["key"], key["id"],
                         Api(self.http, self.system.base_url, key["key"], None), plan)


@pytest.fixture(scope="package")
async def rig() -> AsyncIterator[GatewayRig]:
    url = create_database()
    prefix = f"imsgw{secrets.token_hex(4)}"
    port = free_port()
    token = secrets.token_urlsafe(24)
    upstream = Upstream(f"http://127.0.0.1:{port}", token)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", upstream.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    system = System(url, prefix, replicas={"gateway": 2},
                    env_overrides={"WEBHOOKS_URLS": upstream.url, "CORS_ALLOWED_ORIGINS": CORS},
                    internal_token=token)
    system.start()
    try:
        await system.wait_ready()
        async with aiohttp.ClientSession() as http:
            yield GatewayRig(system, upstream, http)
    finally:
        system.stop()
        await runner.cleanup()
        await delete_queues(prefix)
        drop_database(url)


async def clear_of_window_edge(window_s: int, margin: float = 3.0) -> None:
    """Fixed windows: wait out the last seconds of one so a burst falls in a single window."""
    left = window_s - time.time() % window_s
    if left < margin:
        await asyncio.sleep(left + 0.05)


def rate_headers(headers: Any) -> dict[str, int]:
    return {h: int(headers[h]) for h in ("RateLimit-Limit", "RateLimit-Remaining",
                                         "RateLimit-Reset")}
