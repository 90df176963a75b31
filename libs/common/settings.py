"""Configuration: environment variables read once into one frozen, typed object.

This module holds the core every process reads (`Settings`) and the readers of each kind of
value; each service's own variables live beside it, in `services/<s>/settings.py`, a subclass.

A bad value fails the process at start, naming the variable. Every variable has a default
that works on a laptop (docs/running.md), except the two shared secrets: a process refuses
to start when `INTERNAL_TOKEN` or `CURSOR_SECRET` is unset, shorter than 32 characters or a
placeholder (docs/api.md). `make run` and `make test` generate both.
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, ClassVar, Self, TypeVar
from urllib.parse import urlsplit

SECRET_NAMES = ("INTERNAL_TOKEN", "CURSOR_SECRET")
MIN_SECRET_LENGTH = 32
# What example and development values say of themselves (compared with case, spaces and
# punctuation folded away): CHANGE_ME, not-a-secret, <your secret here>, ...
PLACEHOLDER_WORDS = (
    "changeme",
    "placeholder",
    "notasecret",
    "replaceme",
    "yoursecret",
    "secrethere",
    "example",
    "dummy",
    "insecure",
    "xxxxxxxx",
)
# Fewer distinct characters than this is a pattern, not a random value ("aaaa...", "abab...").
MIN_DISTINCT_CHARACTERS = 5


class SettingsError(ValueError):
    """An environment variable holds a value the service cannot use."""


def env_int(env: dict[str, str], name: str, default: int, minimum: int = 0) -> int:
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


def env_float(env: dict[str, str], name: str, default: float) -> float:
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


def env_bool(env: dict[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name} must be 0 or 1, got {raw!r}")


def env_choice(env: dict[str, str], name: str, choices: tuple[str, ...]) -> str:
    """One of `choices`, spelled as given (the first by default)."""
    value = env.get(name, "").strip() or choices[0]
    if value not in choices:
        raise SettingsError(f"{name} must be {' or '.join(choices)}, got {value!r}")
    return value


def env_secrets(env: dict[str, str], name: str, required: bool) -> tuple[str, ...]:
    """A secret, or several separated by commas while one replaces another (SECURITY.md): the
    first is the one used (sent, or signing), every one is accepted. Each must be a real secret
    (`secret_problem`); the message names the variable, never the value."""
    values = tuple(v.strip() for v in env.get(name, "").split(",") if v.strip())
    for value in values or ("",):
        problem = secret_problem(name, value)
        if problem is not None and required:
            raise SettingsError(problem)
    return values


def env_urls(env: dict[str, str], name: str, default_port: int) -> tuple[str, ...]:
    raw = env.get(name, "").strip()
    if not raw:
        return (f"http://127.0.0.1:{default_port}",)
    urls = tuple(u.strip().rstrip("/") for u in raw.split(",") if u.strip())
    for url in urls:
        if urlsplit(url).scheme not in ("http", "https"):
            raise SettingsError(f"{name} must list http(s) URLs, got {url!r}")
    return urls


def secret_problem(name: str, value: str) -> str | None:
    """Why `value` cannot serve as the shared secret `name`, or None. Never quotes the value."""
    hint = "generate one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
    if not value:
        return f"{name} is not set; {hint}"
    if len(value) < MIN_SECRET_LENGTH:
        return (
            f"{name} is too short ({len(value)} characters, at least {MIN_SECRET_LENGTH} "
            f"needed); {hint}"
        )
    folded = re.sub(r"[^a-z0-9]", "", value.lower())
    if (
        any(word in folded for word in PLACEHOLDER_WORDS)
        or len(set(value)) < MIN_DISTINCT_CHARACTERS
    ):
        return f"{name} is a placeholder, not a secret; {hint}"
    return None


@dataclass(frozen=True)
class Settings:
    """What every process reads: the database, the broker, the secrets, logging, the HTTP
    server, and the addresses of the services (the gateway forwards to each, and peers call
    the ideas service). Each process's own variables live in its `services/<s>/settings.py`,
    a subclass that adds its fields in `read` and its database timeouts in `DB_TIMEOUTS`."""

    # (statement_timeout, idle_in_transaction_session_timeout) in seconds of the process's
    # database sessions, unless DB_STATEMENT_TIMEOUT_S / DB_IDLE_TX_TIMEOUT_S say otherwise:
    # what its longest legitimate statement and transaction need, with room (docs/running.md).
    DB_TIMEOUTS: ClassVar[tuple[float, float]] = (30.0, 30.0)

    database_url: str = "postgresql://postgres@127.0.0.1:5432/ideas"
    amqp_url: str = "amqp://guest:guest@127.0.0.1:5672/"
    amqp_prefix: str = "ims"
    service_host: str = "127.0.0.1"
    ideas_port: int = 8081
    customers_port: int = 8082
    webhooks_port: int = 8083
    analytics_port: int = 8084
    mcp_port: int = 8085
    similar_port: int = 8087
    ideas_urls: tuple[str, ...] = ("http://127.0.0.1:8081",)
    customers_urls: tuple[str, ...] = ("http://127.0.0.1:8082",)
    webhooks_urls: tuple[str, ...] = ("http://127.0.0.1:8083",)
    analytics_urls: tuple[str, ...] = ("http://127.0.0.1:8084",)
    mcp_urls: tuple[str, ...] = ("http://127.0.0.1:8085",)
    similar_urls: tuple[str, ...] = ("http://127.0.0.1:8087",)
    # INTERNAL_TOKEN and CURSOR_SECRET: the first value is used, all are accepted (rotation).
    internal_tokens: tuple[str, ...] = ()
    cursor_secrets: tuple[str, ...] = ()
    demo: bool = True
    log_format: str = "json"
    log_level: str = "info"
    db_pool_min: int = 1
    db_pool_max: int = 10
    # the longest a request waits for a free pooled connection, then 503 (libs/common/db.py)
    db_pool_timeout_s: float = 30.0
    shutdown_timeout_s: float = 15.0
    http_keepalive_timeout_s: float = 75.0  # an idle kept-alive connection is closed after it
    http_header_timeout_s: float = 10.0  # from a request's first byte to its complete head
    relay_interval_s: float = 0.5
    db_statement_timeout_s: float | None = None
    db_idle_tx_timeout_s: float | None = None
    retention_days: float = 30.0
    retention_interval_s: float = 3600.0
    # A stretch in which the event loop ran nothing else, at least this long, is logged
    # (`event_loop_blocked`); every stretch is counted in `ims_event_loop_lag_seconds`.
    loop_blocked_log_ms: float = 100.0

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

    @property
    def service_urls(self) -> dict[str, tuple[str, ...]]:
        """Each service's replicas, by the name the route table gives the service."""
        return {
            "ideas": self.ideas_urls,
            "customers": self.customers_urls,
            "webhooks": self.webhooks_urls,
            "analytics": self.analytics_urls,
            "mcp": self.mcp_urls,
            "similar": self.similar_urls,
        }

    def default_db_timeouts(self) -> tuple[float, float]:
        """The process's database timeouts when no variable sets them: `DB_TIMEOUTS`."""
        return self.DB_TIMEOUTS

    def db_timeouts(self) -> tuple[float, float]:
        """(statement_timeout, idle_in_transaction_session_timeout) of the process's sessions."""
        statement, idle = self.default_db_timeouts()
        return (self.db_statement_timeout_s or statement, self.db_idle_tx_timeout_s or idle)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, *, require_secrets: bool = True) -> Self:
        """The settings of `env` (default: the process environment).

        `require_secrets=False` is for tools that use neither secret (the admin CLI); every
        process that serves or signs anything requires both."""
        return cls(**cls.read(dict(os.environ if env is None else env), require_secrets))

    @classmethod
    def read(cls, e: dict[str, str], require_secrets: bool) -> dict[str, Any]:
        """The fields of this class from the variables of `e`; a subclass adds its own."""
        log_format = env_choice(e, "LOG_FORMAT", ("json", "console"))
        ideas_port = env_int(e, "IDEAS_PORT", 8081, 1)
        customers_port = env_int(e, "CUSTOMERS_PORT", 8082, 1)
        webhooks_port = env_int(e, "WEBHOOKS_PORT", 8083, 1)
        analytics_port = env_int(e, "ANALYTICS_PORT", 8084, 1)
        mcp_port = env_int(e, "MCP_PORT", 8085, 1)
        similar_port = env_int(e, "SIMILAR_PORT", 8087, 1)
        return dict(
            database_url=e.get("DATABASE_URL") or cls.database_url,
            amqp_url=e.get("AMQP_URL") or cls.amqp_url,
            amqp_prefix=e.get("AMQP_PREFIX") or cls.amqp_prefix,
            service_host=e.get("SERVICE_HOST") or cls.service_host,
            ideas_port=ideas_port,
            customers_port=customers_port,
            webhooks_port=webhooks_port,
            analytics_port=analytics_port,
            mcp_port=mcp_port,
            similar_port=similar_port,
            ideas_urls=env_urls(e, "IDEAS_URLS", ideas_port),
            customers_urls=env_urls(e, "CUSTOMERS_URLS", customers_port),
            webhooks_urls=env_urls(e, "WEBHOOKS_URLS", webhooks_port),
            analytics_urls=env_urls(e, "ANALYTICS_URLS", analytics_port),
            mcp_urls=env_urls(e, "MCP_URLS", mcp_port),
            similar_urls=env_urls(e, "SIMILAR_URLS", similar_port),
            internal_tokens=env_secrets(e, "INTERNAL_TOKEN", require_secrets),
            cursor_secrets=env_secrets(e, "CURSOR_SECRET", require_secrets),
            demo=env_bool(e, "DEMO", True),
            log_format=log_format,
            log_level=(e.get("LOG_LEVEL") or "info").lower(),
            db_pool_min=env_int(e, "DB_POOL_MIN", 1, 0),
            db_pool_max=env_int(e, "DB_POOL_MAX", 10, 1),
            db_pool_timeout_s=env_float(e, "DB_POOL_TIMEOUT_S", 30.0),
            shutdown_timeout_s=env_float(e, "SHUTDOWN_TIMEOUT_S", 15.0),
            http_keepalive_timeout_s=env_float(e, "HTTP_KEEPALIVE_TIMEOUT_S", 75.0),
            http_header_timeout_s=env_float(e, "HTTP_HEADER_TIMEOUT_S", 10.0),
            relay_interval_s=env_float(e, "RELAY_INTERVAL_S", 0.5),
            db_statement_timeout_s=env_float(e, "DB_STATEMENT_TIMEOUT_S", 0.0) or None,
            db_idle_tx_timeout_s=env_float(e, "DB_IDLE_TX_TIMEOUT_S", 0.0) or None,
            retention_days=env_float(e, "RETENTION_DAYS", 30.0),
            retention_interval_s=env_float(e, "RETENTION_INTERVAL_S", 3600.0),
            loop_blocked_log_ms=env_float(e, "LOOP_BLOCKED_LOG_MS", 100.0),
        )


S = TypeVar("S", bound=Settings)


def load_or_exit(process: str, kind: type[S]) -> S:
    """A process's settings; a bad value ends the process with a message naming the variable
    (exit status 2) instead of a traceback."""
    try:
        return kind.from_env()
    except SettingsError as err:
        print(f"ims-{process}: configuration error: {err}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
