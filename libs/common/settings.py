"""Configuration: environment variables read once into one frozen, typed object.

A bad value fails the process at start, naming the variable. Every variable has a default
that works on a laptop (CONTRACT section 1).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

DEFAULT_RETRY_SCHEDULE = "0,5,300,1800,7200,18000,36000,36000"
_DEV_TOKEN = "ims-dev-internal-token-change-me"
_DEV_CURSOR_SECRET = "ims-dev-cursor-secret-change-me"


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
    if value <= 0:
        raise SettingsError(f"{name} must be > 0, got {value}")
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
    ideas_urls: tuple[str, ...] = ("http://127.0.0.1:8081",)
    customers_urls: tuple[str, ...] = ("http://127.0.0.1:8082",)
    webhooks_urls: tuple[str, ...] = ("http://127.0.0.1:8083",)
    analytics_urls: tuple[str, ...] = ("http://127.0.0.1:8084",)
    internal_token: str = _DEV_TOKEN
    cursor_secret: str = _DEV_CURSOR_SECRET
    demo: bool = True
    log_format: str = "json"
    log_level: str = "info"
    db_pool_min: int = 1
    db_pool_max: int = 10
    shutdown_timeout_s: float = 15.0
    key_cache_ttl_s: float = 2.0
    unauthenticated_rpm: int = 60
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
    cors_allowed_origins: tuple[str, ...] = ()

    @property
    def insecure_defaults(self) -> bool:
        """True when a shared secret still has its development default."""
        return self.internal_token == _DEV_TOKEN or self.cursor_secret == _DEV_CURSOR_SECRET

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        e = dict(os.environ if env is None else env)
        log_format = e.get("LOG_FORMAT", "json").strip() or "json"
        if log_format not in ("json", "console"):
            raise SettingsError(f"LOG_FORMAT must be json or console, got {log_format!r}")
        ideas_port = _int(e, "IDEAS_PORT", 8081, 1)
        customers_port = _int(e, "CUSTOMERS_PORT", 8082, 1)
        webhooks_port = _int(e, "WEBHOOKS_PORT", 8083, 1)
        analytics_port = _int(e, "ANALYTICS_PORT", 8084, 1)
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
            ideas_urls=_urls(e, "IDEAS_URLS", ideas_port),
            customers_urls=_urls(e, "CUSTOMERS_URLS", customers_port),
            webhooks_urls=_urls(e, "WEBHOOKS_URLS", webhooks_port),
            analytics_urls=_urls(e, "ANALYTICS_URLS", analytics_port),
            internal_token=e.get("INTERNAL_TOKEN") or _DEV_TOKEN,
            cursor_secret=e.get("CURSOR_SECRET") or _DEV_CURSOR_SECRET,
            demo=_bool(e, "DEMO", True),
            log_format=log_format,
            log_level=(e.get("LOG_LEVEL") or "info").lower(),
            db_pool_min=_int(e, "DB_POOL_MIN", 1, 0),
            db_pool_max=_int(e, "DB_POOL_MAX", 10, 1),
            shutdown_timeout_s=_float(e, "SHUTDOWN_TIMEOUT_S", 15.0),
            key_cache_ttl_s=_float(e, "KEY_CACHE_TTL_S", 2.0),
            unauthenticated_rpm=_int(e, "UNAUTHENTICATED_RPM", 60, 1),
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
            cors_allowed_origins=_origins(e),
        )
