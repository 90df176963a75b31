"""The web side every process shares, one module a concern: `keys` (what an app and its
requests hold), `responses` (the envelopes), `middlewares`, `app` (the factory, health,
readiness, metrics, route mounting), `contexts` (pools, broker, relay, peers, background tasks)
and `serving` (listeners and graceful shutdown).

`create_app(settings, name, ...)` wires the request-id/log/metrics middleware, the error
envelope, the internal-token check (services), `/healthz`, `/readyz` and `/metrics`; each
process adds one cleanup context per long-lived resource, torn down in reverse order on
SIGTERM. The names below are the package's interface.
"""

from .app import MountableRoute, create_app, healthz, metrics_app, mount_routes, readyz
from .contexts import (
    BROKER_CLOSE_S,
    broker_context,
    close_pool,
    http_context,
    pg_context,
    relay_context,
    stop_tasks,
)
from .keys import BROKER, CALLER, HTTP, OPEN_PATHS, PEERS, PG_POOL, PROCESS, REQUEST_ID, SETTINGS
from .middlewares import (
    caller,
    context_middleware,
    error_middleware,
    internal_auth_middleware,
    method_not_allowed,
    route_label,
)
from .responses import data_response, error_response, json_response
from .serving import dump_tasks, run, runner, serve

__all__ = [
    "BROKER",
    "BROKER_CLOSE_S",
    "CALLER",
    "HTTP",
    "OPEN_PATHS",
    "PEERS",
    "PG_POOL",
    "PROCESS",
    "REQUEST_ID",
    "SETTINGS",
    "MountableRoute",
    "broker_context",
    "caller",
    "close_pool",
    "context_middleware",
    "create_app",
    "data_response",
    "dump_tasks",
    "error_middleware",
    "error_response",
    "healthz",
    "http_context",
    "internal_auth_middleware",
    "json_response",
    "method_not_allowed",
    "metrics_app",
    "mount_routes",
    "pg_context",
    "readyz",
    "relay_context",
    "route_label",
    "run",
    "runner",
    "serve",
    "stop_tasks",
]
