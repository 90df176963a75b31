"""The app factory: a bare application with the shared middlewares, `/healthz`, `/readyz` and
`/metrics`, and the mounting of a service's part of the route table on its views."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .. import db
from ..settings import Settings
from ..validation import MAX_BODY
from .keys import BROKER, PG_POOL, PROCESS, SETTINGS
from .middlewares import context_middleware, error_middleware, internal_auth_middleware
from .responses import json_response


async def healthz(_: web.Request) -> web.Response:
    return json_response({"status": "ok"})


class DatabaseReadiness:
    """The database's readiness, asked at most once every `FOR_S` seconds.

    `/readyz` is open (the gateway's is on its public listener): each call used to take a
    pooled connection for a `SELECT 1`, as many as anyone cared to send. Now an answer is kept
    for `FOR_S` seconds, and calls that come while a check runs wait for that one: a flood of
    /readyz costs the database one round trip a second, whatever its rate. A probe sees an
    outage, and its end, at most a second late."""

    FOR_S = 1.0

    def __init__(self) -> None:
        self._at = float("-inf")
        self._ok = False
        self._running: asyncio.Future[bool] | None = None

    async def ok(self, pool: Any) -> bool:
        loop = asyncio.get_running_loop()
        if loop.time() - self._at < self.FOR_S:
            return self._ok
        if self._running is None:
            self._running = asyncio.ensure_future(self._check(pool))
        return await asyncio.shield(self._running)

    async def _check(self, pool: Any) -> bool:
        try:
            self._ok = await db.ping(pool)
            self._at = asyncio.get_running_loop().time()
            return self._ok
        finally:
            self._running = None


READINESS = web.AppKey("database_readiness", DatabaseReadiness)


async def readyz(request: web.Request) -> web.Response:
    app = request.app
    checks: dict[str, bool] = {}
    if PG_POOL in app:
        checks["database"] = await app[READINESS].ok(app[PG_POOL])
    if BROKER in app:
        checks["broker"] = app[BROKER].ready
    ok = all(checks.values())
    return json_response(
        {"status": "ok" if ok else "unavailable", "checks": checks}, status=200 if ok else 503
    )


async def metrics_handler(_: web.Request) -> web.Response:
    resp = web.Response(body=generate_latest())
    resp.content_type = CONTENT_TYPE_LATEST.split(";")[0]
    return resp


class MountableRoute(Protocol):
    """What mounting needs of a route declaration (`libs.api.route.Route` is one)."""

    @property
    def method(self) -> str: ...
    @property
    def aiohttp_path(self) -> str: ...
    @property
    def operation_id(self) -> str: ...


def mount_routes(app: web.Application, routes: Iterable[MountableRoute], views: Any) -> None:
    """Mount each route of the table on its view, named by `operation_id`.

    A route without a view stops the start-up: a renamed view must not quietly answer 501.
    """
    missing = [r.operation_id for r in routes if not callable(getattr(views, r.operation_id, None))]
    if missing:
        raise RuntimeError(f"routes without a handler in {views.__name__}: {', '.join(missing)}")
    for route in routes:
        app.router.add_route(route.method, route.aiohttp_path, getattr(views, route.operation_id))


def create_app(
    settings: Settings,
    process: str,
    *,
    internal: bool = True,
    middlewares: Iterable[Any] = (),
    metrics: bool = True,
    handler_args: dict[str, Any] | None = None,
) -> web.Application:
    """A bare application with the shared middlewares and the open endpoints.

    `metrics=False` leaves `/metrics` out: a public listener serves its metrics on an internal
    listener of its own instead (`run(..., metrics_port=...)`). `handler_args` go to aiohttp's
    connection handler (the gateway turns off its automatic decompression of bodies).
    """
    mws: list[Any] = [context_middleware, error_middleware]
    if internal:
        mws.append(internal_auth_middleware(settings.internal_tokens))
    mws.extend(middlewares)
    app = web.Application(middlewares=mws, client_max_size=MAX_BODY, handler_args=handler_args)
    app[SETTINGS] = settings
    app[PROCESS] = process
    app.router.add_get("/healthz", healthz)
    app[READINESS] = DatabaseReadiness()
    app.router.add_get("/readyz", readyz)
    if metrics:
        app.router.add_get("/metrics", metrics_handler)
    return app


def metrics_app() -> web.Application:
    """The internal listener of a process whose main listener is public: `/metrics` only."""
    app = web.Application(middlewares=[error_middleware])
    app.router.add_get("/metrics", metrics_handler)
    return app
