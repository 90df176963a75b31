"""The middlewares every process runs: request id, log line and metrics; the error envelope;
the internal-token check of services, and the caller it establishes."""

from __future__ import annotations

import asyncio
import hmac
import time
import uuid
from collections.abc import Awaitable, Callable

import structlog
from aiohttp import web
from prometheus_client import Counter, Histogram

from ..accesslog import access_log
from ..caller import H_REQUEST_ID, H_TOKEN, Caller, caller_from_headers
from ..errors import ApiError, MethodNotAllowed, NotFound, PayloadTooLarge, Unauthorized
from ..unavailable import DatabaseUnavailable, database_down
from .keys import CALLER, OPEN_PATHS, PROCESS, REQUEST_ID
from .responses import error_response

log = structlog.get_logger("http")

REQUESTS = Counter(
    "ims_http_requests_total", "HTTP requests", ["process", "method", "route", "status"]
)
LATENCY = Histogram(
    "ims_http_request_duration_seconds",
    "HTTP request duration",
    ["process", "route"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


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
async def context_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
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
async def error_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
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
            log.warning(
                "database_unavailable", method=request.method, path=request.path, error=repr(err)
            )
            return error_response(DatabaseUnavailable(), request_id)
        log.exception("unhandled_error", method=request.method, path=request.path)
        return error_response(ApiError(f"Internal server error (request {request_id})"), request_id)


def method_not_allowed(
    exc: web.HTTPMethodNotAllowed, headers: dict[str, str] | None = None
) -> MethodNotAllowed:
    """405 with `Allow` listing the path's methods (docs/api.md)."""
    allow = ", ".join(sorted(exc.allowed_methods))
    return MethodNotAllowed(headers={**(headers or {}), "Allow": allow})


def internal_auth_middleware(
    tokens: tuple[str, ...],
) -> Callable[..., Awaitable[web.StreamResponse]]:
    """Services answer only calls carrying an internal token, i.e. from the gateway or a peer.
    Every token of INTERNAL_TOKEN is accepted (two while one replaces the other)."""
    expected = [token.encode() for token in tokens]

    @web.middleware
    async def check(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
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
