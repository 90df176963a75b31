"""The gateway's settings: its listeners, key caches, rate windows, CORS, export relaying,
upstream slots and their fair shares, request bodies' time limit."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, ClassVar, cast

from aiohttp import web
from pydantic import BeforeValidator
from pydantic_settings import NoDecode

from libs.common import web as common_web
from libs.common.settings import (
    AnyPort,
    Count,
    Fraction,
    Seconds,
    Settings,
    Size,
    var,
)


def _networks(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    nets = tuple(n.strip() for n in value.split(",") if n.strip())
    for net in nets:
        try:
            ipaddress.ip_network(net, strict=False)
        except ValueError as err:
            raise ValueError(f"must list addresses or CIDR ranges, got {net!r}") from err
    return nets


_ORIGIN = re.compile(r"https?://[a-z0-9.\-]+(:[0-9]{1,5})?|https?://\[[0-9a-f:.]+\](:[0-9]{1,5})?")


def _origins(value: Any) -> Any:
    """Empty (CORS off), `*`, or comma-separated origins as browsers send them
    (`https://app.example.com`, `http://localhost:3000`: no path, no slash)."""
    if not isinstance(value, str):
        return value
    origins = tuple(o.strip().lower() for o in value.split(",") if o.strip())
    if origins == ("*",):
        return origins
    for origin in origins:
        if not _ORIGIN.fullmatch(origin):
            raise ValueError(
                f"must be * or comma-separated origins like https://app.example.com, got {origin!r}"
            )
    return origins


Networks = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_networks)]
Origins = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_origins)]


class GatewaySettings(Settings):
    DB_TIMEOUTS: ClassVar[tuple[float, float]] = (5.0, 10.0)  # key look-ups, rate counters,
    # idempotency rows: milliseconds

    gateway_host: str = var("127.0.0.1", "the gateway's public listener's address")
    gateway_port: AnyPort = var(8080, "the gateway's public listener's port")
    gateway_metrics_port: AnyPort = var(
        8089, "the gateway's internal listener for `/metrics` (on `SERVICE_HOST`)"
    )
    key_cache_ttl_s: Seconds = var(
        2.0,
        "how long the gateway trusts a cached key lookup, and so the workspace settings it "
        "carries: another gateway replica sees a `PATCH /workspace` within this time "
        "(docs/gateway.md)",
    )
    key_cache_size: Count = var(10_000, "active keys the gateway caches (LRU)")
    key_negative_cache_size: Count = var(
        10_000, "unknown keys the gateway caches (LRU), apart from the active ones"
    )
    unauthenticated_rpm: Count = var(
        60, "requests a minute the gateway answers per client address without a valid key"
    )
    trusted_proxies: Networks = var(
        (),
        "addresses or CIDR ranges of reverse proxies in front of the gateway, whose "
        "`X-Forwarded-For` names the client",
    )
    export_per_hour: Count = var(10, "exports a workspace may start an hour, all kinds together")
    export_write_timeout_s: Seconds = var(
        20.0,
        "an export is cut off when its client takes longer than this to accept 64 KiB "
        "([docs/analytics.md](docs/analytics.md#exports))",
    )
    cors_allowed_origins: Origins = var(
        (),
        "`*` or comma-separated origins (`https://app.example.com,http://localhost:3000`) that "
        "browsers may call the API from; the gateway then answers preflights before "
        "authentication and exposes the RateLimit, X-Request-Id and Idempotent-Replayed "
        "headers ([docs/gateway.md](docs/gateway.md#cors))",
        shown="empty: CORS off",
    )
    low_priority_wait_ms: Seconds = var(
        100.0,
        "how long the gateway holds a similar-ideas request while it forwards others "
        "([docs/gateway.md](docs/gateway.md#priorities))",
    )
    low_priority_concurrency: Count = var(
        4,
        "similar-ideas requests each gateway process forwards at once at most when it forwards "
        "nothing else ([docs/gateway.md](docs/gateway.md#priorities))",
    )
    # docs/gateway.md#fair-shares: slots per service address, a workspace's share of them
    # (a fraction, at least a floor), and the bound on a wait for one
    upstream_slots: Count = var(
        100,
        "requests each gateway process has in flight at most per service address "
        "([docs/gateway.md](docs/gateway.md#fair-shares))",
    )
    fair_share: Fraction = var(
        0.25,
        "a workspace's share of those slots: this fraction, rounded up, at least "
        "`FAIR_SHARE_MIN` ([docs/gateway.md](docs/gateway.md#fair-shares))",
    )
    fair_share_min: Count = var(4, "a workspace's share of the slots, at least")
    fair_share_wait_s: Seconds = var(
        2.0,
        "how long a request waits for a slot before 429 (its workspace's share is in use) or "
        "503 (every slot is)",
    )
    request_body_timeout_s: Seconds = var(
        15.0,
        "the gateway answers 400 on `body` and closes the connection when a request's body "
        "takes longer to arrive ([docs/gateway.md](docs/gateway.md#request-bodies))",
    )
    idempotency_max_stored_bytes: Size = var(
        2 << 20,
        "the largest answer the gateway stores for an `Idempotency-Key` replay; a larger one "
        "is relayed, not stored, and its key freed "
        "([docs/gateway.md](docs/gateway.md#idempotency-key-docsgatewaymd))",
        shown="`2097152` (2 MiB)",
    )


# The app's settings key, typed as this service's: `create_gateway_app` is given GatewaySettings.
SETTINGS = cast("web.AppKey[GatewaySettings]", common_web.SETTINGS)
