"""The gateway: authenticates keys, limits rates, checks scopes and plans, and forwards."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import orjson
import structlog
from aiohttp import web

from libs.api.plans import GATED_PLANS
from libs.api.route import API, Route
from libs.api.table import ROUTE_TABLE
from libs.common.caller import H_REQUEST_ID
from libs.common.errors import (
    ApiError,
    InsufficientScope,
    InvalidKey,
    NotFound,
    PayloadTooLarge,
    PlanRequired,
    RateLimited,
    ServiceUnavailable,
    Unauthorized,
)
from libs.common.unavailable import DatabaseUnavailable, database_down
from libs.common.web import (
    OPEN_PATHS,
    PG_POOL,
    REQUEST_ID,
    create_app,
    json_response,
    method_not_allowed,
    pg_context,
)

from . import idempotency, ratelimit, workspace
from .auth import KeyInfo, KeyStore, bearer_token, key_digest
from .clients import ClientAddress
from .compression import MIN_SIZE as STREAM_EXPORTS_FROM
from .compression import setup_compression
from .cors import setup_cors
from .docs import setup_docs
from .openapi import openapi_handler
from .priority import Priorities
from .proxy import (
    BUFFER_LIMIT,
    Keep,
    Relayed,
    Upstreams,
    forward_headers,
    read_body,
    relay_aiohttp,
    relay_lean,
)
from .settings import SETTINGS, GatewaySettings
from .shares import FairShares, Refused, share_of
from .upstream import UpstreamPool

KEYS = web.AppKey("keys", KeyStore)
CLIENT = web.AppKey("client_address", ClientAddress)
COUNTER = web.AppKey("counter", ratelimit.SharedCounter)
UPSTREAMS = web.AppKey("upstreams", Upstreams)
PROXY_SESSION = web.AppKey("proxy_session", aiohttp.ClientSession)
POOL = web.AppKey("upstream_pool", UpstreamPool)
PRIORITIES = web.AppKey("priorities", Priorities)
SHARES = web.AppKey("fair_shares", FairShares)
KEY = web.RequestKey("key", KeyInfo)
VERDICT = web.RequestKey("verdict", ratelimit.Verdict)
# The path the service gets when it is not the client's: an idea named by its `IDEA-<n>`.
UPSTREAM_PATH = web.RequestKey("upstream_path", str)
OPENAPI_PATH = f"{API}/openapi.json"
log = structlog.get_logger("gateway")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def client_address(request: web.Request) -> str:
    return request.app[CLIENT](request)


@web.middleware
async def gateway_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Authentication first, then the rate windows; their headers ride on every answer."""
    path = request.path
    if path in OPEN_PATHS or not path.startswith("/api/"):
        return await handler(request)
    app = request.app
    if path == OPENAPI_PATH:
        return await _limited_by_address(request, handler, None)
    try:
        info = await _authenticate(request)
    except (Unauthorized, InvalidKey) as err:
        return await _limited_by_address(request, handler, err)
    request[KEY] = info
    structlog.contextvars.bind_contextvars(workspace_id=info.bucket[3:])
    verdict = await app[COUNTER].hit(info.bucket, info.rate_limit, 60)
    request[VERDICT] = verdict
    try:
        if not verdict.allowed:
            raise RateLimited(f"Rate limit of {verdict.limit} requests per minute exceeded")
        response = await handler(request)
    except ApiError as err:
        err.headers = {**verdict.headers(), **err.headers}
        raise
    except web.HTTPMethodNotAllowed as err:
        raise method_not_allowed(err, verdict.headers()) from err
    except web.HTTPNotFound as err:
        raise NotFound(headers=verdict.headers()) from err
    except web.HTTPRequestEntityTooLarge as err:
        raise PayloadTooLarge(headers=verdict.headers()) from err
    except (asyncio.CancelledError, web.HTTPException):
        raise
    except Exception as err:
        if database_down(err):  # 503 with the rate headers (libs/common/unavailable.py)
            log.warning("database_unavailable", method=request.method, path=path, error=repr(err))
            raise DatabaseUnavailable(headers={**verdict.headers(), "Retry-After": "1"}) from err
        # Logged here, once, so that even this answer carries the rate headers.
        log.exception("unhandled_error", method=request.method, path=path)
        raise ApiError(
            f"Internal server error (request {request[REQUEST_ID]})", headers=verdict.headers()
        ) from err
    if not response.prepared and "RateLimit-Limit" not in response.headers:
        response.headers.update(verdict.headers())
    return response


async def _authenticate(request: web.Request) -> KeyInfo:
    """The caller's key: its format first, then the cache, then the database. A token that
    cannot be a key is never looked up, nor is one this replica never saw as a key while the
    client's address is past its unauthenticated window: a flood of invented keys costs no
    lookups. (A key first used from such an address waits for the window's end.)"""
    keys = request.app[KEYS]
    digest = key_digest(bearer_token(request.headers.get("Authorization")))
    info = keys.cached(digest)
    if info is None:
        if not keys.known(digest):
            refused = request.app[COUNTER].known_full(
                f"ip:{client_address(request)}", request.app[SETTINGS].unauthenticated_rpm, 60
            )
            if refused is not None:
                raise RateLimited("Too many unauthenticated requests", headers=refused.headers())
        info = await keys.lookup(digest)
    return info


async def _limited_by_address(
    request: web.Request, handler: Handler, auth_error: ApiError | None
) -> web.StreamResponse:
    s = request.app[SETTINGS]
    verdict = await request.app[COUNTER].hit(
        f"ip:{client_address(request)}", s.unauthenticated_rpm, 60
    )
    if not verdict.allowed:
        raise RateLimited("Too many unauthenticated requests", headers=verdict.headers())
    if auth_error is not None:
        auth_error.headers = {**verdict.headers(), **auth_error.headers}
        raise auth_error
    response = await handler(request)
    response.headers.update(verdict.headers())
    return response


async def automation_auth(request: web.Request) -> web.Response:
    k = request[KEY]
    return json_response(
        {
            "valid": True,
            "workspace": {"id": str(k.workspace_id), "name": k.workspace_name, "plan": k.plan},
        }
    )


GET_WORKSPACE = next(r for r in ROUTE_TABLE if r.operation_id == "get_workspace")


async def update_workspace(request: web.Request) -> web.StreamResponse:
    """`PATCH /workspace`: the gateway writes its own row (services/gateway/workspace.py), then
    answers what the ideas service's `GET /workspace` answers for the updated caller."""
    app = request.app
    view, fresh = await workspace.apply_update(
        request, app[PG_POOL], app[KEYS], request[KEY], app[SETTINGS].request_body_timeout_s
    )
    view[KEY] = fresh
    with app[PRIORITIES].normal():
        return await _forward(view, GET_WORKSPACE, None)


LOCAL: dict[str, Handler] = {
    "automation_auth": automation_auth,
    "update_workspace": update_workspace,
}


def route_handler(route: Route) -> Handler:
    """Scope, plan and export window for one route, then the service (or a local answer)."""

    async def handle(request: web.Request) -> web.StreamResponse:
        app = request.app
        info = request[KEY]
        if route.scope is not None and route.scope not in info.scopes:
            raise InsufficientScope(f"This call needs the {route.scope} scope")
        if route.plan_gated and info.plan in GATED_PLANS:
            raise PlanRequired(f"Not available on the {info.plan} plan")
        ref = request.match_info.get("id", "")
        if ref[:5].upper() == "IDEA-":
            request[UPSTREAM_PATH] = await _idea_path(request, ref)
        if route.export:  # an export streams for minutes: no turn waits for it
            return await _export(request, route)
        if route.service == "gateway":
            return await LOCAL[route.operation_id](request)
        # The whole body first: a client trickling it holds no turn and no slot meanwhile.
        body = await read_body(request, app[SETTINGS].request_body_timeout_s)
        if route.low_priority:
            async with app[PRIORITIES].low():
                return await _forward(request, route, body)
        with app[PRIORITIES].normal():
            return await _forward(request, route, body)

    handle.__name__ = route.operation_id
    return handle


# The service's refusals of an export before it starts: its slots are full (429 for the
# workspace's, 503 for the process's; services/analytics/slots.py), or it could not start.
_EXPORT_REFUSED = frozenset({429, 503})


async def _export(request: web.Request, route: Route) -> web.StreamResponse:
    """An export spends one of the workspace's hourly exports, given back when the service
    refuses it before it starts (docs/gateway.md#rate-limits): an export that never ran does
    not count. The window is one conditional counter in PostgreSQL, taken and given back
    atomically, so it stays exact across replicas."""
    app, info = request.app, request[KEY]
    s = app[SETTINGS]
    taken = await ratelimit.take(
        app[PG_POOL], f"export:{info.workspace_id}", s.export_per_hour, 3600
    )
    if not taken.verdict.allowed:
        raise RateLimited(
            f"Export limit of {s.export_per_hour} per hour exceeded",
            headers=taken.verdict.headers(),
        )
    try:
        body = await read_body(request, s.request_body_timeout_s)
        response = await _forward(request, route, body)
    except ServiceUnavailable:  # the service could not be reached: nothing ran
        await _give_back(app, taken)
        raise
    if response.status in _EXPORT_REFUSED:
        await _give_back(app, taken)
    return response


async def _give_back(app: web.Application, taken: ratelimit.Taken) -> None:
    try:
        await asyncio.shield(ratelimit.give_back(app[PG_POOL], taken))
    except Exception as err:  # the client still gets its answer; the export stays counted
        log.warning("export_not_given_back", error=repr(err))


async def _forward(request: web.Request, route: Route, body: bytes | None) -> web.StreamResponse:
    app = request.app
    headers = forward_headers(request, request[KEY].internal_headers, request[REQUEST_ID])
    # On every answer, streamed ones too (whose headers leave before the middlewares see them).
    extra = {**request[VERDICT].headers(), H_REQUEST_ID: request[REQUEST_ID]}
    target = app[UPSTREAMS].next(route.service)
    write_timeout = app[SETTINGS].export_write_timeout_s
    path = request.get(UPSTREAM_PATH)

    async def send(keep: Keep | None) -> Relayed:
        if target.lean and not route.export:  # exports stream through aiohttp, whatever size
            return await relay_lean(
                app[POOL], request, target, headers, body, extra, keep, write_timeout, path
            )
        # an export streams once past 1 KiB (gzip as it goes); other answers up to the limit
        # are relayed whole
        limit = STREAM_EXPORTS_FROM if route.export else BUFFER_LIMIT
        return await relay_aiohttp(
            app[PROXY_SESSION],
            request,
            target.base,
            headers,
            body,
            extra,
            keep,
            write_timeout,
            limit,
            path,
        )

    async def relay(keep: Keep | None = None) -> Relayed:
        """Both relay paths, each within a slot of the workspace's fair share (an export
        takes none: it streams for minutes and has per-workspace slots of its own)."""
        if route.export:
            return await send(keep)
        shares, workspace = app[SHARES], request[KEY].bucket
        try:
            await shares.acquire(target.base, workspace, route.service)
        except Refused as refused:
            raise _refusal(refused, route.service) from None
        try:
            return await send(keep)
        finally:
            shares.release(target.base, workspace)

    key = request.headers.get(idempotency.HEADER)
    if request.method == "POST" and key is not None:
        idempotency.check_key(key)
        if idempotency.stores(route, body):  # a read-only POST runs again: nothing is kept
            fingerprint = idempotency.request_hash(request.method, request.path_qs, body or b"")
            return await idempotency.run_once(
                app[PG_POOL],
                request[KEY].workspace_id,
                request[KEY].key_id,
                key,
                fingerprint,
                extra,
                relay,
                app[SETTINGS].idempotency_max_stored_bytes,
                route.secret_fields,
            )
    return (await relay()).response


async def _idea_path(request: web.Request, ref: str) -> str:
    """The client's path with the idea's `IDEA-<n>` replaced by its uuid, which the ideas
    service finds in the caller's workspace (`/internal/ideas/number/<n>`); 404 when no idea of
    the workspace has that number. Services take uuids only: the path's one translation is
    here, and the answer is exactly the uuid's (docs/api.md#ideas-by-their-human-id)."""
    app = request.app
    target = app[UPSTREAMS].next("ideas")
    headers = {**request[KEY].internal_headers, H_REQUEST_ID: request[REQUEST_ID]}
    try:
        async with app[PROXY_SESSION].get(
            f"{target.base}/internal/ideas/number/{ref[5:]}", headers=headers
        ) as r:
            answer = await r.read() if r.status == 200 else b""
            status = r.status
    except (aiohttp.ClientError, TimeoutError) as err:
        raise ServiceUnavailable("The ideas service is unavailable; retry shortly") from err
    if status == 404:
        raise NotFound("Idea not found")
    if status != 200:
        raise ServiceUnavailable(f"The ideas service answered {status}; retry shortly")
    idea_id = orjson.loads(answer)["data"]["id"]
    return request.raw_path.replace(f"/ideas/{ref}", f"/ideas/{idea_id}", 1)


def _refusal(refused: Refused, service: str) -> ApiError:
    """429 when the workspace's own requests hold its share, 503 when everyone's hold the
    service's slots (docs/gateway.md#fair-shares)."""
    headers = {"Retry-After": str(refused.retry_after)}
    if refused.reason == "share":
        return RateLimited(
            f"This workspace's share of the {service} service's capacity is in use by its"
            " other requests; retry shortly",
            headers=headers,
        )
    return ServiceUnavailable(f"The {service} service is busy; retry shortly", headers=headers)


async def _state(app: web.Application) -> AsyncIterator[None]:
    s = app[SETTINGS]
    app[KEYS] = KeyStore(
        app[PG_POOL],
        s.key_cache_ttl_s,
        s.internal_token,
        s.key_cache_size,
        s.key_negative_cache_size,
    )
    app[COUNTER] = ratelimit.SharedCounter(app[PG_POOL])
    app[PRIORITIES] = Priorities(s.low_priority_wait_ms / 1000, s.low_priority_concurrency)
    app[UPSTREAMS] = Upstreams(s.service_urls)
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(
            limit=0, limit_per_host=256, keepalive_timeout=s.peer_idle_s, ttl_dns_cache=300
        ),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=120),
        auto_decompress=False,
        skip_auto_headers=("User-Agent", "Accept-Encoding"),
    )
    app[PROXY_SESSION] = session
    app[POOL] = UpstreamPool(
        connect_timeout=5.0, read_timeout=120.0, max_per_host=s.upstream_slots, idle_s=s.peer_idle_s
    )
    app[SHARES] = FairShares(
        s.upstream_slots,
        share_of(s.upstream_slots, s.fair_share, s.fair_share_min),
        s.fair_share_wait_s,
    )
    sweeper = asyncio.create_task(ratelimit.sweep_forever(app[PG_POOL]))
    yield
    sweeper.cancel()
    await asyncio.gather(sweeper, return_exceptions=True)
    app[POOL].close()
    await session.close()


def create_gateway(settings: GatewaySettings) -> web.Application:
    # The public listener: metrics on an internal listener of their own (docs/api.md),
    # and bodies as sent, so that `read_body` decides which encodings it takes.
    app = create_app(
        settings,
        "gateway",
        internal=False,
        middlewares=[gateway_middleware],
        metrics=False,
        handler_args={"auto_decompress": False},
    )
    app[CLIENT] = ClientAddress(settings.trusted_proxies)
    setup_cors(app, before=gateway_middleware)
    setup_compression(app)
    app.cleanup_ctx.append(pg_context())
    app.cleanup_ctx.append(_state)
    app.router.add_get(OPENAPI_PATH, openapi_handler)
    setup_docs(app, OPENAPI_PATH)
    for route in ROUTE_TABLE:
        handler = route_handler(route)
        paths = [route.aiohttp_path]
        if route.aiohttp_idea_ref_path is not None:  # the idea by its IDEA-<n> too
            paths.append(route.aiohttp_idea_ref_path)
        for path in paths:
            app.router.add_route(route.method, path, handler)
            if route.method == "GET":  # every GET also answers HEAD (docs/api.md)
                app.router.add_route("HEAD", path, handler)
    return app
