"""The gateway's settings: its listeners, key caches, rate windows, CORS, export relaying,
upstream slots and their fair shares, request bodies' time limit."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from aiohttp import web

from libs.common import web as common_web
from libs.common.settings import Settings, SettingsError, env_float, env_int


def _networks(env: dict[str, str], name: str) -> tuple[str, ...]:
    raw = env.get(name, "").strip()
    nets = tuple(n.strip() for n in raw.split(",") if n.strip())
    for net in nets:
        try:
            ipaddress.ip_network(net, strict=False)
        except ValueError as err:
            raise SettingsError(f"{name} must list addresses or CIDR ranges, got {net!r}") from err
    return nets


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
            raise SettingsError(
                "CORS_ALLOWED_ORIGINS must be * or comma-separated origins like"
                f" https://app.example.com, got {origin!r}"
            )
    return origins


def _fraction(env: dict[str, str], name: str, default: float) -> float:
    value = env_float(env, name, default)
    if value > 1:
        raise SettingsError(f"{name} must be a fraction in (0, 1], got {value!r}")
    return value


@dataclass(frozen=True)
class GatewaySettings(Settings):
    DB_TIMEOUTS: ClassVar[tuple[float, float]] = (5.0, 10.0)  # key look-ups, rate counters,
    # idempotency rows: milliseconds

    gateway_host: str = "127.0.0.1"
    gateway_port: int = 8080
    gateway_metrics_port: int = 8089  # the gateway's internal listener: /metrics only
    key_cache_ttl_s: float = 2.0
    key_cache_size: int = 10_000  # active keys kept (LRU)
    key_negative_cache_size: int = 10_000  # unknown keys kept (LRU), apart from the active ones
    unauthenticated_rpm: int = 60
    trusted_proxies: tuple[str, ...] = ()  # whose X-Forwarded-For names the client
    export_per_hour: int = 10
    export_write_timeout_s: float = 20.0
    cors_allowed_origins: tuple[str, ...] = ()
    low_priority_wait_ms: float = 100.0  # docs/gateway.md#priorities
    # docs/gateway.md#fair-shares: slots per service address, a workspace's share of them
    # (a fraction, at least a floor), and the bound on a wait for one
    upstream_slots: int = 100
    fair_share: float = 0.25
    fair_share_min: int = 4
    fair_share_wait_s: float = 2.0
    request_body_timeout_s: float = 15.0  # to read a request's whole body
    # the largest answer stored for an Idempotency-Key replay (docs/gateway.md, Idempotency-Key)
    idempotency_max_stored_bytes: int = 2 << 20

    @classmethod
    def read(cls, e: dict[str, str], require_secrets: bool) -> dict[str, Any]:
        return dict(
            super().read(e, require_secrets),
            gateway_host=e.get("GATEWAY_HOST") or cls.gateway_host,
            gateway_port=env_int(e, "GATEWAY_PORT", 8080, 0),
            gateway_metrics_port=env_int(e, "GATEWAY_METRICS_PORT", 8089, 0),
            key_cache_ttl_s=env_float(e, "KEY_CACHE_TTL_S", 2.0),
            key_cache_size=env_int(e, "KEY_CACHE_SIZE", 10_000, 1),
            key_negative_cache_size=env_int(e, "KEY_NEGATIVE_CACHE_SIZE", 10_000, 1),
            unauthenticated_rpm=env_int(e, "UNAUTHENTICATED_RPM", 60, 1),
            trusted_proxies=_networks(e, "TRUSTED_PROXIES"),
            export_per_hour=env_int(e, "EXPORT_PER_HOUR", 10, 1),
            export_write_timeout_s=env_float(e, "EXPORT_WRITE_TIMEOUT_S", 20.0),
            cors_allowed_origins=_origins(e),
            low_priority_wait_ms=env_float(e, "LOW_PRIORITY_WAIT_MS", 100.0),
            upstream_slots=env_int(e, "UPSTREAM_SLOTS", 100, 1),
            fair_share=_fraction(e, "FAIR_SHARE", 0.25),
            fair_share_min=env_int(e, "FAIR_SHARE_MIN", 4, 1),
            fair_share_wait_s=env_float(e, "FAIR_SHARE_WAIT_S", 2.0),
            request_body_timeout_s=env_float(e, "REQUEST_BODY_TIMEOUT_S", 15.0),
            idempotency_max_stored_bytes=env_int(e, "IDEMPOTENCY_MAX_STORED_BYTES", 2 << 20, 0),
        )


# The app's settings key, typed as this service's: `create_gateway_app` is given GatewaySettings.
SETTINGS = cast("web.AppKey[GatewaySettings]", common_web.SETTINGS)
