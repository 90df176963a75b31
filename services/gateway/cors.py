"""CORS for browser clients: off unless CORS_ALLOWED_ORIGINS is set (docs/gateway.md).

When on, for a request whose `Origin` is allowed (listed, or `*` configured):
- a preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered here, before
  authentication and the rate windows (it carries no key and does nothing): 204 with the
  methods, the request headers the API reads, and how long a browser may cache the answer;
- every other answer, errors and streamed exports included, gets `Access-Control-Allow-Origin`
  and `Access-Control-Expose-Headers` naming the headers a script may read (the RateLimit
  headers, Retry-After, X-Request-Id, Idempotent-Replayed, Content-Disposition).
Answers to an allowed origin vary by it (`Vary: Origin`). A preflight from any other origin is
answered 204 without those headers, so the browser refuses the call; other requests from it
are served as if CORS were off. Keys travel in the Authorization header, never in cookies, so
credentials are not allowed.

Written here rather than taken from aiohttp-cors: that package answers preflights from route
handlers, after this gateway's authentication middleware, and sets no `Vary: Origin`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from .compression import add_vary
from .settings import SETTINGS

METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE"
ALLOW_HEADERS = (
    "Authorization, Content-Type, Content-Encoding, Accept, Idempotency-Key, X-Request-Id"
)
EXPOSE_HEADERS = (
    "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After,"
    " X-Request-Id, Idempotent-Replayed, Content-Disposition"
)
MAX_AGE_S = 600

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _allowed(request: web.Request) -> str | None:
    """The value of Access-Control-Allow-Origin for this request, or None."""
    origin = request.headers.get("Origin")
    allowed = request.app[SETTINGS].cors_allowed_origins
    if origin is None or not allowed:
        return None
    if allowed == ("*",):
        return "*"
    return origin if origin.lower() in allowed else None


@web.middleware
async def preflight_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if (
        request.method != "OPTIONS"
        or "Access-Control-Request-Method" not in request.headers
        or "Origin" not in request.headers
    ):
        return await handler(request)
    response = web.Response(status=204)
    allow = _allowed(request)
    if allow is not None:
        response.headers.update(
            {
                "Access-Control-Allow-Origin": allow,
                "Access-Control-Allow-Methods": METHODS,
                "Access-Control-Allow-Headers": ALLOW_HEADERS,
                "Access-Control-Max-Age": str(MAX_AGE_S),
            }
        )
    add_vary(response.headers, "Origin")
    return response


async def _on_prepare(request: web.Request, response: web.StreamResponse) -> None:
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        return  # a preflight, answered above
    allow = _allowed(request)
    if allow is None:
        return
    response.headers["Access-Control-Allow-Origin"] = allow
    response.headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
    if allow != "*":
        add_vary(response.headers, "Origin")


def setup_cors(app: web.Application, before: Callable[..., Awaitable[web.StreamResponse]]) -> None:
    """When CORS_ALLOWED_ORIGINS is set: answer preflights in a middleware placed just before
    `before` (authentication), and mark every answer as it is sent."""
    if not app[SETTINGS].cors_allowed_origins:
        return
    app.middlewares.insert(app.middlewares.index(before), preflight_middleware)
    # Headers go on in on_response_prepare: a streamed export sends its headers before a
    # middleware would see the answer.
    app.on_response_prepare.append(_on_prepare)
