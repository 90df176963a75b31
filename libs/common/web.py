"""The app factory every process uses: middlewares, health, readiness, metrics, shutdown.

`create_app(settings, name, ...)` wires the request-id/log/metrics middleware, the error
envelope, the internal-token check (services), `/healthz`, `/readyz` and `/metrics`, and one
cleanup context per long-lived resource (PostgreSQL pool, RabbitMQ broker, outbox relay,
consumers, outgoing HTTP session), torn down in reverse order on SIGTERM.
"""

from __future__ import annotations

import asyncio
import hmac
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Protocol

import aiohttp
import aiopg
import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest

from . import db
from .accesslog import access_log
from .caller import H_REQUEST_ID, H_TOKEN, Caller, caller_from_headers
from .errors import ApiError, MethodNotAllowed, NotFound, PayloadTooLarge, Unauthorized
from .listener import Runner
from .messaging import Broker, Consumer, Handler, OutboxRelay
from .render import dumps
from .settings import Settings
from .tasks import raise_if_cancelled
from .unavailable import DatabaseUnavailable, database_down
from .validation import MAX_BODY

log = structlog.get_logger("http")

SETTINGS = web.AppKey("settings", Settings)
PG_POOL = web.AppKey("pg_pool", aiopg.Pool)
BROKER = web.AppKey("broker", Broker)
HTTP = web.AppKey("http_session", aiohttp.ClientSession)
PROCESS = web.AppKey("process", str)
CALLER = web.RequestKey("caller", Caller)
REQUEST_ID = web.RequestKey("request_id", str)

OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

REQUESTS = Counter("ims_http_requests_total", "HTTP requests", ["process", "method", "route", "status"])
LATENCY = Histogram("ims_http_request_duration_seconds", "HTTP request duration",
                    ["process", "route"],
                    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=dumps(data), status=status, headers=headers,
                        content_type="application/json")


def data_response(data: Any, status: int = 200) -> web.Response:
    """The spec's success envelope: `{"data": ...}`."""
    return json_response({"data": data}, status=status)


def error_response(err: ApiError, request_id: str | None = None) -> web.Response:
    headers = dict(err.headers)
    if request_id:
        headers[H_REQUEST_ID] = request_id
    return json_response(err.body(), status=err.status, headers=headers)


def caller(request: web.Request) -> Caller:
    """The authenticated caller of a request that came through the gateway."""
    try:
        return request[CALLER]
    except KeyError:
        raise Unauthorized("Calls must come through the gateway") from None


def route_label(request: web.Request) -> str:
    info = request.match_info
    resource = info.route.resource if info.route is not None else None
    return resource.canonical if resource is not None else "unmatched"


@web.middleware
async def context_middleware(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Request id in and out, one canonical log line, and the metrics of every request."""
    request_id = request.headers.get(H_REQUEST_ID) or uuid.uuid4().hex
    if len(request_id) > 128 or not request_id.isprintable():
        request_id = uuid.uuid4().hex
    request[REQUEST_ID] = request_id
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(request_id=request_id)
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        if not response.prepared:
            response.headers[H_REQUEST_ID] = request_id
        return response
    finally:
        elapsed = time.perf_counter() - started
        if request.path not in OPEN_PATHS:
            process = request.app[PROCESS]
            label = route_label(request)
            REQUESTS.labels(process, request.method, label, str(status)).inc()
            LATENCY.labels(process, label).observe(elapsed)
            access_log().request(request.method, request.path, status, elapsed)


@web.middleware
async def error_middleware(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Every failure becomes the error envelope; the unexpected is logged once, with its id."""
    request_id = request.get(REQUEST_ID)
    try:
        return await handler(request)
    except ApiError as err:
        return error_response(err, request_id)
    except web.HTTPRequestEntityTooLarge:
        return error_response(PayloadTooLarge(), request_id)
    except web.HTTPMethodNotAllowed as exc:
        return error_response(method_not_allowed(exc), request_id)
    except web.HTTPNotFound:
        return error_response(NotFound(), request_id)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error_response(ApiError(exc.reason), request_id)
    except asyncio.CancelledError:
        raise
    except Exception as err:
        if database_down(err):  # a dependency's outage: 503, retry (libs/common/unavailable.py)
            log.warning("database_unavailable", method=request.method, path=request.path,
                        error=repr(err))
            return error_response(DatabaseUnavailable(), request_id)
        log.exception("unhandled_error", method=request.method, path=request.path)
        return error_response(ApiError(f"Internal server error (request {request_id})"), request_id)


def method_not_allowed(exc: web.HTTPMethodNotAllowed,
                       headers: dict[str, str] | None = None) -> MethodNotAllowed:
    """405 with `Allow` listing the path's methods (docs/api.md)."""
    allow = ", ".join(sorted(exc.allowed_methods))
    return MethodNotAllowed(headers={**(headers or {}), "Allow": allow})


def internal_auth_middleware(tokens: tuple[str, ...]) -> Callable[..., Awaitable[web.StreamResponse]]:
    """Services answer only calls carrying an internal token, i.e. from the gateway or a peer.
    Every token of INTERNAL_TOKEN is accepted (two while one replaces the other)."""
    expected = [token.encode() for token in tokens]

    @web.middleware
    async def check(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        if request.path in OPEN_PATHS:
            return await handler(request)
        given = request.headers.get(H_TOKEN, "").encode()
        # Compared with each, without stopping at a match: the time does not say which matched.
        if not sum(hmac.compare_digest(given, token) for token in expected):
            raise Unauthorized("Calls must come through the gateway")
        who = caller_from_headers(request.headers, request[REQUEST_ID])
        if who is not None:
            request[CALLER] = who
            structlog.contextvars.bind_contextvars(workspace_id=str(who.workspace_id))
        return await handler(request)

    return check


async def healthz(_: web.Request) -> web.Response:
    return json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    app = request.app
    checks: dict[str, bool] = {}
    if PG_POOL in app:
        checks["database"] = await db.ping(app[PG_POOL])
    if BROKER in app:
        checks["broker"] = app[BROKER].ready
    ok = all(checks.values())
    return json_response({"status": "ok" if ok else "unavailable", "checks": checks},
                         status=200 if ok else 503)


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


# ---- cleanup contexts -------------------------------------------------------------------

def pg_context(dsn: str | None = None) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        s = app[SETTINGS]
        pool = await db.create_pool(dsn or s.database_url, minsize=s.db_pool_min,
                                    maxsize=s.db_pool_max, timeouts=s.db_timeouts(app[PROCESS]),
                                    application_name=f"ims-{app[PROCESS]}")
        app[PG_POOL] = pool
        yield
        await close_pool(pool)

    return ctx


async def close_pool(pool: aiopg.Pool) -> None:
    pool.close()
    try:  # a connection still held by a stuck task must not hold up the exit
        await asyncio.wait_for(pool.wait_closed(), timeout=5.0)
    except asyncio.TimeoutError:
        log.warning("pool_close_timeout")
        pool.terminate()


def broker_context(consumers: dict[str, Handler] | None = None, schema: str | None = None,
                   prefetch: int = 32, consumer_cls: type[Consumer] = Consumer
                   ) -> Callable[[web.Application], AsyncIterator[None]]:
    """Connect to RabbitMQ in the background (retrying), then start the consumers."""

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        s = app[SETTINGS]
        broker = Broker(s.amqp_url, s.amqp_prefix, f"ims-{app[PROCESS]}")
        app[BROKER] = broker
        started: list[Consumer] = []

        async def connect() -> None:
            delay = 0.5
            while True:
                try:
                    await broker.connect()
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    raise_if_cancelled(err)
                    log.warning("broker_connect_failed", error=repr(err), retry_in=delay)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 10.0)
            for name, handler in (consumers or {}).items():
                assert schema is not None, "consumers record handled events in a schema"
                consumer = consumer_cls(app[PG_POOL], broker, name, schema, handler, prefetch)
                await consumer.start()
                started.append(consumer)

        task = asyncio.create_task(connect())
        yield
        # Bounded: with the broker down or half up, connecting and closing can wait for an
        # answer that never comes, and SIGTERM must still end the process in time.
        task.cancel()
        await asyncio.wait({task}, timeout=BROKER_CLOSE_S)
        try:
            await asyncio.wait_for(_close_broker(started, broker), BROKER_CLOSE_S)
        except (asyncio.TimeoutError, Exception) as err:
            log.warning("broker_close_failed", error=repr(err))

    return ctx


BROKER_CLOSE_S = 3.0


async def _close_broker(consumers: list[Consumer], broker: Broker) -> None:
    for consumer in consumers:
        await consumer.stop()
    await broker.close()


def relay_context(schema: str) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        s = app[SETTINGS]
        relay = OutboxRelay(app[PG_POOL], s.database_url, schema, app[BROKER], s.relay_interval_s)
        task = asyncio.create_task(relay.run())
        yield
        await stop_tasks([task])

    return ctx


async def http_context(app: web.Application) -> AsyncIterator[None]:
    """One outgoing client session per app, for calls to peers."""
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=200, keepalive_timeout=app[SETTINGS].peer_idle_s),
        json_serialize=lambda o: dumps(o).decode(),
    )
    app[HTTP] = session
    yield
    await session.close()


def create_app(settings: Settings, process: str, *, internal: bool = True,
               middlewares: Iterable[Any] = (), metrics: bool = True,
               handler_args: dict[str, Any] | None = None) -> web.Application:
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
    app.router.add_get("/readyz", readyz)
    if metrics:
        app.router.add_get("/metrics", metrics_handler)
    return app


def metrics_app() -> web.Application:
    """The internal listener of a process whose main listener is public: `/metrics` only."""
    app = web.Application(middlewares=[error_middleware])
    app.router.add_get("/metrics", metrics_handler)
    return app


async def stop_tasks(tasks: Iterable[asyncio.Task[Any]], timeout: float = 3.0) -> None:
    """Cancel background tasks and wait for them, but never past `timeout`: a task stuck in a
    library's cancellation must not keep the process from exiting (its work is recoverable)."""
    pending = [t for t in tasks if not t.done()]
    for task in pending:
        task.cancel()
    if not pending:
        return
    _, stuck = await asyncio.wait(pending, timeout=timeout)
    for task in stuck:
        log.warning("task_not_stopped", task=task.get_name(), coro=repr(task.get_coro()))


def dump_tasks() -> None:
    """Log every asyncio task with its stack (SIGUSR1): what a process that will not stop waits on."""
    for task in asyncio.all_tasks():
        frames, coro = [], task.get_coro()
        while coro is not None and len(frames) < 20:  # follow what each coroutine awaits
            frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
            if frame is not None:
                frames.append(f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}")
            coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        log.warning("task_dump", task=task.get_name(), coro=repr(task.get_coro()), stack=frames)


def _runner(app: web.Application, settings: Settings) -> Runner:
    return Runner(app, handle_signals=False, access_log=None,
                  shutdown_timeout=settings.shutdown_timeout_s,
                  keepalive_timeout=settings.http_keepalive_timeout_s,
                  head_timeout=settings.http_header_timeout_s)


async def serve(app: web.Application, host: str, port: int,
                metrics_port: int | None = None) -> None:
    """Start, serve until SIGTERM or SIGINT, then shut down within the configured timeout.

    The signals only set an event, and they are caught from before start-up: a stop asked for
    while the process is still starting is honoured as soon as it has started, never lost.
    With `metrics_port`, `/metrics` is served there, on `SERVICE_HOST`, by a listener of its own.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
    settings = app[SETTINGS]
    runners = [_runner(app, settings)]
    if metrics_port is not None:
        runners.append(_runner(metrics_app(), settings))
    try:
        for runner in runners:
            await runner.setup()
        await web.TCPSite(runners[0], host, port).start()
        if metrics_port is not None:
            await web.TCPSite(runners[1], settings.service_host, metrics_port).start()
        log.info("serving", process=app[PROCESS], host=host, port=port, metrics_port=metrics_port)
        await stop.wait()
        log.info("stopping", process=app[PROCESS])
    finally:
        budget = settings.shutdown_timeout_s + 10
        try:
            await asyncio.wait_for(_cleanup(runners), budget)
        except asyncio.TimeoutError:
            dump_tasks()  # say what held the shutdown up, then leave anyway
            log.error("shutdown_timeout", budget_s=budget)
            raise SystemExit(1) from None


async def _cleanup(runners: list[Runner]) -> None:
    for runner in runners:  # the main listener first: its requests finish while metrics answer
        await runner.cleanup()


def run(app: web.Application, host: str, port: int, metrics_port: int | None = None) -> None:
    """The process's main: uvloop when available, `serve` until told to stop."""
    log.info("starting", process=app[PROCESS], host=host, port=port)
    try:
        import uvloop

        uvloop.run(serve(app, host, port, metrics_port))
    except ImportError:
        asyncio.run(serve(app, host, port, metrics_port))
    log.info("stopped", process=app[PROCESS])
