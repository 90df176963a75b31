"""Configuration: environment variables read once into one frozen, typed object.

A bad value fails the process at start, naming the variable. Every variable has a default
that works on a laptop (docs/running.md), except the two shared secrets: a process refuses
to start when `INTERNAL_TOKEN` or `CURSOR_SECRET` is unset, shorter than 32 characters or a
placeholder (docs/api.md). `make run` and `make test` generate both.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import sys
from dataclasses import dataclass, field
from urllib.parse import urlsplit

DEFAULT_RETRY_SCHEDULE = "0,5,300,1800,7200,18000,36000,36000"
SECRET_NAMES = ("INTERNAL_TOKEN", "CURSOR_SECRET")
MIN_SECRET_LENGTH = 32
# What example and development values say of themselves (compared with case, spaces and
# punctuation folded away): CHANGE_ME, not-a-secret, <your secret here>, ...
PLACEHOLDER_WORDS = ("changeme", "placeholder", "notasecret", "replaceme", "yoursecret",
                     "secrethere", "example", "dummy", "insecure", "xxxxxxxx")
# Fewer distinct characters than this is a pattern, not a random value ("aaaa...", "abab...").
MIN_DISTINCT_CHARACTERS = 5
# Each process's database sessions: (statement_timeout, idle_in_transaction_session_timeout) in
# seconds, unless DB_STATEMENT_TIMEOUT_S / DB_IDLE_TX_TIMEOUT_S say otherwise. What the longest
# legitimate statement and transaction of the process need, with room (docs/running.md).
DB_TIMEOUTS: dict[str, tuple[float, float]] = {
    "gateway": (5.0, 10.0),     # key look-ups, rate counters, idempotency rows: milliseconds
    "ideas": (30.0, 30.0),      # batches of 100 and merges: well under a second
    "customers": (30.0, 30.0),
    "webhooks": (30.0, 30.0),   # claims and fan-out batches
    "analytics": (60.0, 0.0),   # reports over 1M ideas: ~0.2 s; idle: see db_timeouts
}
DEFAULT_DB_TIMEOUTS = (30.0, 30.0)


class SettingsError(ValueError):
    """An environment variable holds a value the service cannot use."""


def _int(env: dict[str, str], name: str, default: int, minimum: int = 0) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as err:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from err
    if value < minimum:
        raise SettingsError(f"{name} must be >= {minimum}, got {value}")
    return value


def _float(env: dict[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as err:
        raise SettingsError(f"{name} must be a number, got {raw!r}") from err
    if not math.isfinite(value) or value <= 0:
        raise SettingsError(f"{name} must be a finite number > 0, got {raw!r}")
    return value


def _fraction(env: dict[str, str], name: str, default: float) -> float:
    value = _float(env, name, default)
    if value > 1:
        raise SettingsError(f"{name} must be a number from 0 to 1, got {value!r}")
    return value


def _bool(env: dict[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name} must be 0 or 1, got {raw!r}")


def _secrets(env: dict[str, str], name: str, required: bool) -> tuple[str, ...]:
    """A secret, or several separated by commas while one replaces another (SECURITY.md): the
    first is the one used (sent, or signing), every one is accepted. Each must be a real secret
    (`secret_problem`); the message names the variable, never the value."""
    values = tuple(v.strip() for v in env.get(name, "").split(",") if v.strip())
    for value in values or ("",):
        problem = secret_problem(name, value)
        if problem is not None and required:
            raise SettingsError(problem)
    return values


def _urls(env: dict[str, str], name: str, default_port: int) -> tuple[str, ...]:
    raw = env.get(name, "").strip()
    if not raw:
        return (f"http://127.0.0.1:{default_port}",)
    urls = tuple(u.strip().rstrip("/") for u in raw.split(",") if u.strip())
    for url in urls:
        if urlsplit(url).scheme not in ("http", "https"):
            raise SettingsError(f"{name} must list http(s) URLs, got {url!r}")
    return urls


def _schedule(env: dict[str, str]) -> tuple[float, ...]:
    raw = env.get("WEBHOOK_RETRY_SCHEDULE", "").strip() or DEFAULT_RETRY_SCHEDULE
    try:
        values = tuple(float(v) for v in raw.split(","))
    except ValueError as err:
        raise SettingsError(f"WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds: {raw!r}") from err
    if not values or any(v < 0 for v in values):
        raise SettingsError("WEBHOOK_RETRY_SCHEDULE needs one or more non-negative numbers")
    return values


def _networks(env: dict[str, str], name: str) -> tuple[str, ...]:
    raw = env.get(name, "").strip()
    nets = tuple(n.strip() for n in raw.split(",") if n.strip())
    for net in nets:
        try:
            ipaddress.ip_network(net, strict=False)
        except ValueError as err:
            raise SettingsError(f"{name} must list addresses or CIDR ranges, got {net!r}") from err
    return nets


def secret_problem(name: str, value: str) -> str | None:
    """Why `value` cannot serve as the shared secret `name`, or None. Never quotes the value."""
    hint = "generate one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
    if not value:
        return f"{name} is not set; {hint}"
    if len(value) < MIN_SECRET_LENGTH:
        return (f"{name} is too short ({len(value)} characters, at least {MIN_SECRET_LENGTH} "
                f"needed); {hint}")
    folded = re.sub(r"[^a-z0-9]", "", value.lower())
    if any(word in folded for word in PLACEHOLDER_WORDS) or \
            len(set(value)) < MIN_DISTINCT_CHARACTERS:
        return f"{name} is a placeholder, not a secret; {hint}"
    return None


_ORIGIN = re.compile(r"https?://[a-z0-9.\-]+(:[0-9]{1,5})?|https?://\[[0-9a-f:.]+\](:[0-9]{1,5})?")


def _origins(env: dict[str, str]) -> tuple[str, ...]:
    """CORS_ALLOWED_ORIGINS: empty (CORS off), `*`, or comma-separated origins as browsers
    send them (`https://app.example.com`, `http://localhost:3000`: no path, no slash)."""
    raw = env.get("CORS_ALLOWED_ORIGINS", "").strip()
    origins = tuple(o.strip().lower() for o in raw.split(",") if o.strip())
    if origins == ("*",):
        return origins
    for origin in origins:
        if not _ORIGIN.fullmatch(origin):
            raise SettingsError("CORS_ALLOWED_ORIGINS must be * or comma-separated origins like"
                                f" https://app.example.com, got {origin!r}")
    return origins


def _role(raw: str) -> str:
    # It becomes a connection option: a plain identifier only (empty disables it).
    if raw and not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", raw):
        raise SettingsError(f"ANALYTICS_DB_ROLE must be a plain role name, got {raw!r}")
    return raw


@dataclass(frozen=True)
class Settings:
    database_url: str = "postgresql://postgres@127.0.0.1:5432/ideas"
    analytics_database_url: str = ""
    analytics_db_role: str = "ims_analytics"
    amqp_url: str = "amqp://guest:guest@127.0.0.1:5672/"
    amqp_prefix: str = "ims"
    gateway_host: str = "127.0.0.1"
    gateway_port: int = 8080
    service_host: str = "127.0.0.1"
    ideas_port: int = 8081
    customers_port: int = 8082
    webhooks_port: int = 8083
    analytics_port: int = 8084
    mcp_port: int = 8085
    gateway_metrics_port: int = 8089  # the gateway's internal listener: /metrics only
    ideas_urls: tuple[str, ...] = ("http://127.0.0.1:8081",)
    customers_urls: tuple[str, ...] = ("http://127.0.0.1:8082",)
    webhooks_urls: tuple[str, ...] = ("http://127.0.0.1:8083",)
    analytics_urls: tuple[str, ...] = ("http://127.0.0.1:8084",)
    mcp_urls: tuple[str, ...] = ("http://127.0.0.1:8085",)
    # INTERNAL_TOKEN and CURSOR_SECRET: the first value is used, all are accepted (rotation).
    internal_tokens: tuple[str, ...] = ()
    cursor_secrets: tuple[str, ...] = ()
    demo: bool = True
    log_format: str = "json"
    log_level: str = "info"
    db_pool_min: int = 1
    db_pool_max: int = 10
    shutdown_timeout_s: float = 15.0
    key_cache_ttl_s: float = 2.0
    key_cache_size: int = 10_000           # active keys kept (LRU)
    key_negative_cache_size: int = 10_000  # unknown keys kept (LRU), apart from the active ones
    http_keepalive_timeout_s: float = 75.0  # an idle kept-alive connection is closed after it
    http_header_timeout_s: float = 10.0     # from a request's first byte to its complete head
    unauthenticated_rpm: int = 60
    trusted_proxies: tuple[str, ...] = ()  # whose X-Forwarded-For names the client (gateway)
    export_per_hour: int = 10
    webhook_retry_schedule: tuple[float, ...] = field(
        default=tuple(float(v) for v in DEFAULT_RETRY_SCHEDULE.split(","))
    )
    webhook_timeout_s: float = 10.0
    webhook_disable_after_s: int = 432000
    webhook_ca_file: str = ""
    webhook_allow_private_targets: bool = False
    webhook_allow_http: bool = False
    webhook_concurrency: int = 200
    webhook_per_host_concurrency: int = 20
    relay_interval_s: float = 0.5
    db_statement_timeout_s: float | None = None
    db_idle_tx_timeout_s: float | None = None
    export_concurrency: int = 2
    export_concurrency_per_workspace: int = 1
    export_deadline_s: float = 120.0
    export_write_timeout_s: float = 20.0
    webhook_per_workspace_concurrency: int = 50
    retention_days: float = 30.0
    retention_interval_s: float = 3600.0
    cors_allowed_origins: tuple[str, ...] = ()
    # Similar ideas (docs/similar.md): the automation API's meaning rule's threshold, and the
    # threads that embed texts off the event loop.
    duplicate_similarity: float = 0.5
    similar_embed_threads: int = 1

    @property
    def internal_token(self) -> str:
        """The token this process sends; it accepts every one of `internal_tokens`."""
        return self.internal_tokens[0] if self.internal_tokens else ""

    @property
    def cursor_secret(self) -> str:
        """The secret new cursors are signed with; every one of `cursor_secrets` verifies."""
        return self.cursor_secrets[0] if self.cursor_secrets else ""

    @property
    def peer_idle_s(self) -> float:
        """How long a client of our own services reuses an idle connection: well inside their
        keep-alive timeout (the same HTTP_KEEPALIVE_TIMEOUT_S), so that a service never closes
        one just as it is reused; at most 30 s."""
        return min(30.0, self.http_keepalive_timeout_s / 2)

    def db_timeouts(self, process: str) -> tuple[float, float]:
        """(statement_timeout, idle_in_transaction_session_timeout) of `process`'s sessions.

        An export's transaction idles while its client reads; the export deadline ends it
        first, so analytics's idle limit defaults to that deadline plus 30 s (a backstop)."""
        statement, idle = DB_TIMEOUTS.get(process, DEFAULT_DB_TIMEOUTS)
        if process == "analytics":
            idle = self.export_deadline_s + 30.0
        return (self.db_statement_timeout_s or statement, self.db_idle_tx_timeout_s or idle)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, *,
                 require_secrets: bool = True) -> Settings:
        """The settings of `env` (default: the process environment).

        `require_secrets=False` is for tools that use neither secret (the admin CLI); every
        process that serves or signs anything requires both."""
        e = dict(os.environ if env is None else env)
        log_format = e.get("LOG_FORMAT", "json").strip() or "json"
        if log_format not in ("json", "console"):
            raise SettingsError(f"LOG_FORMAT must be json or console, got {log_format!r}")
        pool_max, exports = _int(e, "DB_POOL_MAX", 10, 1), _int(e, "EXPORT_CONCURRENCY", 2, 1)
        if exports >= pool_max:  # exports would hold every connection and starve the reports
            raise SettingsError(f"EXPORT_CONCURRENCY ({exports}) must be below DB_POOL_MAX "
                                f"({pool_max})")
        ideas_port = _int(e, "IDEAS_PORT", 8081, 1)
        customers_port = _int(e, "CUSTOMERS_PORT", 8082, 1)
        webhooks_port = _int(e, "WEBHOOKS_PORT", 8083, 1)
        analytics_port = _int(e, "ANALYTICS_PORT", 8084, 1)
        mcp_port = _int(e, "MCP_PORT", 8085, 1)
        return cls(
            database_url=e.get("DATABASE_URL") or cls.database_url,
            analytics_database_url=e.get("ANALYTICS_DATABASE_URL", ""),
            analytics_db_role=_role(e.get("ANALYTICS_DB_ROLE", "ims_analytics").strip()),
            amqp_url=e.get("AMQP_URL") or cls.amqp_url,
            amqp_prefix=e.get("AMQP_PREFIX") or cls.amqp_prefix,
            gateway_host=e.get("GATEWAY_HOST") or cls.gateway_host,
            gateway_port=_int(e, "GATEWAY_PORT", 8080, 0),
            service_host=e.get("SERVICE_HOST") or cls.service_host,
            ideas_port=ideas_port,
            customers_port=customers_port,
            webhooks_port=webhooks_port,
            analytics_port=analytics_port,
            mcp_port=mcp_port,
            gateway_metrics_port=_int(e, "GATEWAY_METRICS_PORT", 8089, 0),
            ideas_urls=_urls(e, "IDEAS_URLS", ideas_port),
            customers_urls=_urls(e, "CUSTOMERS_URLS", customers_port),
            webhooks_urls=_urls(e, "WEBHOOKS_URLS", webhooks_port),
            analytics_urls=_urls(e, "ANALYTICS_URLS", analytics_port),
            mcp_urls=_urls(e, "MCP_URLS", mcp_port),
            internal_tokens=_secrets(e, "INTERNAL_TOKEN", require_secrets),
            cursor_secrets=_secrets(e, "CURSOR_SECRET", require_secrets),
            demo=_bool(e, "DEMO", True),
            log_format=log_format,
            log_level=(e.get("LOG_LEVEL") or "info").lower(),
            db_pool_min=_int(e, "DB_POOL_MIN", 1, 0),
            db_pool_max=pool_max,
            shutdown_timeout_s=_float(e, "SHUTDOWN_TIMEOUT_S", 15.0),
            key_cache_ttl_s=_float(e, "KEY_CACHE_TTL_S", 2.0),
            key_cache_size=_int(e, "KEY_CACHE_SIZE", 10_000, 1),
            key_negative_cache_size=_int(e, "KEY_NEGATIVE_CACHE_SIZE", 10_000, 1),
            http_keepalive_timeout_s=_float(e, "HTTP_KEEPALIVE_TIMEOUT_S", 75.0),
            http_header_timeout_s=_float(e, "HTTP_HEADER_TIMEOUT_S", 10.0),
            unauthenticated_rpm=_int(e, "UNAUTHENTICATED_RPM", 60, 1),
            trusted_proxies=_networks(e, "TRUSTED_PROXIES"),
            export_per_hour=_int(e, "EXPORT_PER_HOUR", 10, 1),
            webhook_retry_schedule=_schedule(e),
            webhook_timeout_s=_float(e, "WEBHOOK_TIMEOUT_S", 10.0),
            webhook_disable_after_s=_int(e, "WEBHOOK_DISABLE_AFTER_S", 432000, 0),
            webhook_ca_file=e.get("WEBHOOK_CA_FILE", ""),
            webhook_allow_private_targets=_bool(e, "WEBHOOK_ALLOW_PRIVATE_TARGETS", False),
            webhook_allow_http=_bool(e, "WEBHOOK_ALLOW_HTTP", False),
            webhook_concurrency=_int(e, "WEBHOOK_CONCURRENCY", 200, 1),
            webhook_per_host_concurrency=_int(e, "WEBHOOK_PER_HOST_CONCURRENCY", 20, 1),
            relay_interval_s=_float(e, "RELAY_INTERVAL_S", 0.5),
            db_statement_timeout_s=_float(e, "DB_STATEMENT_TIMEOUT_S", 0.0) or None,
            db_idle_tx_timeout_s=_float(e, "DB_IDLE_TX_TIMEOUT_S", 0.0) or None,
            export_concurrency=exports,
            export_concurrency_per_workspace=_int(e, "EXPORT_CONCURRENCY_PER_WORKSPACE", 1, 1),
            export_deadline_s=_float(e, "EXPORT_DEADLINE_S", 120.0),
            export_write_timeout_s=_float(e, "EXPORT_WRITE_TIMEOUT_S", 20.0),
            webhook_per_workspace_concurrency=_int(e, "WEBHOOK_PER_WORKSPACE_CONCURRENCY", 50, 1),
            retention_days=_float(e, "RETENTION_DAYS", 30.0),
            retention_interval_s=_float(e, "RETENTION_INTERVAL_S", 3600.0),
            cors_allowed_origins=_origins(e),
            duplicate_similarity=_fraction(e, "DUPLICATE_SIMILARITY", 0.5),
            similar_embed_threads=_int(e, "SIMILAR_EMBED_THREADS", 1, 1),
        )


def load_or_exit(process: str) -> Settings:
    """A process's settings; a bad value ends the process with a message naming the variable
    (exit status 2) instead of a traceback."""
    try:
        return Settings.from_env()
    except SettingsError as err:
        print(f"ims-{process}: configuration error: {err}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
