"""A second system for gateway tests whose upstream is a recording stand-in for one service.

The gateway's own behaviour (idempotency, the per-address window) is tested against an upstream
whose every call is counted, in a database of its own so that exhausting the 127.0.0.1 window
here leaves the shared system alone. The stand-in takes the webhooks service's place: the
gateway forwards `/api/v1/webhooks*` to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
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
from tests.support.processes import System, create_database, delete_queues, drop_database, free_port


@dataclass
class Upstream:
    """What the stand-in saw: calls per body `name`, and the internal token of each call.

    `GET ...?size=N` answers N bytes (with Content-Length when `sized=1`, else chunked); with
    `hold=H` it sends the first 512 KiB, then waits for `release(H)` before the rest. A POST body
    with `pad: N` gets N more bytes in its answer.
    """

    url: str
    token: str
    calls: dict[str, int] = field(default_factory=dict)
    tokens_ok: bool = True
    holds: dict[str, asyncio.Event] = field(default_factory=dict)
    accept_encodings: list[str | None] = field(default_factory=list)

    def release(self, hold: str) -> None:
        self.holds.setdefault(hold, asyncio.Event()).set()

    async def sized(self, request: web.Request) -> web.StreamResponse:
        size, hold = int(request.query["size"]), request.query.get("hold")
        resp = web.StreamResponse(
            headers={"Content-Type": "application/octet-stream", "X-Upstream": "yes"}
        )
        if request.query.get("sized") == "1":
            resp.content_length = size
        await resp.prepare(request)
        first = min(size, 512 << 10) if hold else size
        await resp.write(b"x" * first)
        if hold:
            event = self.holds.setdefault(hold, asyncio.Event())
            await asyncio.wait_for(event.wait(), 30)
            await resp.write(b"y" * (size - first))
        await resp.write_eof()
        return resp

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.tokens_ok &= request.headers.get(H_TOKEN) == self.token
        self.accept_encodings.append(request.headers.get("Accept-Encoding"))
        if "size" in request.query:
            return await self.sized(request)
        body = orjson.loads(await request.read() or b"{}")
        name = str(body.get("name", ""))
        n = self.calls[name] = self.calls.get(name, 0) + 1
        if body.get("delay"):
            await asyncio.sleep(float(body["delay"]))
        if body.get("failFirst") and n == 1:
            return web.json_response(
                {"error": {"code": "service_unavailable", "message": "try again"}}, status=503
            )
        status = int(body.get("status", 200))
        # "pad": a count of filler characters, or the text itself
        given = body.get("pad")
        pad = {"pad": "x" * given if isinstance(given, int) else given} if given else {}
        return web.Response(
            body=orjson.dumps(
                {
                    "data": {
                        "id": str(uuid.uuid4()),
                        "name": name,
                        "call": n,
                        "workspaceId": request.headers.get(H_WORKSPACE),
                        **pad,
                    }
                }
            ),
            status=status,
            content_type="application/json",
            headers={"X-Upstream": "yes"},
        )


# Small values, so that tests of timeouts and of the key cache's bounds run in seconds.
RIG_ENV = {
    "HTTP_HEADER_TIMEOUT_S": "1",
    "HTTP_KEEPALIVE_TIMEOUT_S": "5",
    "KEY_CACHE_TTL_S": "10",
    "KEY_CACHE_SIZE": "2",
    "KEY_NEGATIVE_CACHE_SIZE": "3",
    # 127.0.0.1 stands for a reverse proxy; other loopback addresses are clients of their own.
    "TRUSTED_PROXIES": "127.0.0.1/32",
}

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
        return Workspace(
            ws["id"],
            key["key"],
            key["id"],
            Api(self.http, self.system.base_url, key["key"], None),
            plan,
        )


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
    system = System(
        url,
        prefix,
        replicas={"gateway": 2},
        env_overrides={"WEBHOOKS_URLS": upstream.url, **RIG_ENV, "CORS_ALLOWED_ORIGINS": CORS},
        internal_token=token,
    )
    system.start()
    try:
        await system.wait_ready()
        # The rig's gateways close a connection idle 5 s (RIG_ENV): a request sent on one at
        # that moment is reset (a test that restarts a service waits about that long). The
        # client lets its idle connections go well before, as a client should.
        connector = aiohttp.TCPConnector(keepalive_timeout=2)
        async with aiohttp.ClientSession(connector=connector) as http:
            yield GatewayRig(system, upstream, http)
    finally:
        system.stop()
        await runner.cleanup()
        await delete_queues(prefix)
        drop_database(url)


@contextlib.asynccontextmanager
async def from_own_address() -> AsyncIterator[aiohttp.ClientSession]:
    """A client on a loopback address of its own (127.x.y.z): its own per-address window, so
    that using it up leaves every other test's window alone."""
    addr = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
    connector = aiohttp.TCPConnector(local_addr=(addr, 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


async def clear_of_window_edge(window_s: int, margin: float = 3.0) -> None:
    """Fixed windows: wait out the last seconds of one so a burst falls in a single window."""
    left = window_s - time.time() % window_s
    if left < margin:
        await asyncio.sleep(left + 0.05)


def rate_headers(headers: Any) -> dict[str, int]:
    return {
        h: int(headers[h]) for h in ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
    }
