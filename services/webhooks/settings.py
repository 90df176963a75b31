"""The webhooks service's settings: delivery timeouts, retries, targets and concurrency."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from aiohttp import web

from libs.common import web as common_web
from libs.common.settings import Settings, SettingsError, env_bool, env_float, env_int

DEFAULT_RETRY_SCHEDULE = "0,5,300,1800,7200,18000,36000,36000"


def _schedule(env: dict[str, str]) -> tuple[float, ...]:
    raw = env.get("WEBHOOK_RETRY_SCHEDULE", "").strip() or DEFAULT_RETRY_SCHEDULE
    try:
        values = tuple(float(v) for v in raw.split(","))
    except ValueError as err:
        raise SettingsError(
            f"WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds: {raw!r}"
        ) from err
    if not values or any(v < 0 for v in values):
        raise SettingsError("WEBHOOK_RETRY_SCHEDULE needs one or more non-negative numbers")
    return values


@dataclass(frozen=True)
class WebhooksSettings(Settings):
    # DB_TIMEOUTS: the default (claims and fan-out batches), the dispatcher's pool too.
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
    webhook_per_workspace_concurrency: int = 50

    @classmethod
    def read(cls, e: dict[str, str], require_secrets: bool) -> dict[str, Any]:
        return dict(
            super().read(e, require_secrets),
            webhook_retry_schedule=_schedule(e),
            webhook_timeout_s=env_float(e, "WEBHOOK_TIMEOUT_S", 10.0),
            webhook_disable_after_s=env_int(e, "WEBHOOK_DISABLE_AFTER_S", 432000, 0),
            webhook_ca_file=e.get("WEBHOOK_CA_FILE", ""),
            webhook_allow_private_targets=env_bool(e, "WEBHOOK_ALLOW_PRIVATE_TARGETS", False),
            webhook_allow_http=env_bool(e, "WEBHOOK_ALLOW_HTTP", False),
            webhook_concurrency=env_int(e, "WEBHOOK_CONCURRENCY", 200, 1),
            webhook_per_host_concurrency=env_int(e, "WEBHOOK_PER_HOST_CONCURRENCY", 20, 1),
            webhook_per_workspace_concurrency=env_int(
                e, "WEBHOOK_PER_WORKSPACE_CONCURRENCY", 50, 1
            ),
        )


# The app's settings key, typed as this service's: `create_webhooks_app` is given WebhooksSettings.
SETTINGS = cast("web.AppKey[WebhooksSettings]", common_web.SETTINGS)
