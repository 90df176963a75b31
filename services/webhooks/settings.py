"""The webhooks service's settings: delivery timeouts, retries, targets and concurrency."""

from __future__ import annotations

from typing import Annotated, Any, cast

from aiohttp import web
from pydantic import BeforeValidator
from pydantic_settings import NoDecode

from libs.common import web as common_web
from libs.common.settings import Count, Flag, Seconds, Settings, Size, var

DEFAULT_RETRY_SCHEDULE = "0,5,300,1800,7200,18000,36000,36000"


def _schedule(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        values = tuple(float(v) for v in value.split(","))
    except ValueError as err:
        raise ValueError(f"must be comma-separated seconds, got {value!r}") from err
    if not values or any(v < 0 for v in values):
        raise ValueError("needs one or more non-negative numbers")
    return values


Schedule = Annotated[tuple[float, ...], NoDecode, BeforeValidator(_schedule)]


class WebhooksSettings(Settings):
    # DB_TIMEOUTS: the default (claims and fan-out batches), the dispatcher's pool too.
    webhook_retry_schedule: Schedule = var(
        DEFAULT_RETRY_SCHEDULE,
        "seconds before each attempt",
        validate_default=True,
    )
    webhook_timeout_s: Seconds = var(10.0, "receiver answer timeout")
    webhook_disable_after_s: Size = var(
        432000, "failing this long deactivates a subscription (seconds)"
    )
    webhook_ca_file: str = var("", "extra CA bundle for HTTPS deliveries")
    webhook_allow_private_targets: Flag = var(
        False, "`1` allows loopback/private targets (tests only)"
    )
    webhook_allow_http: Flag = var(False, "`1` allows `http://` subscription targets (tests only)")
    webhook_concurrency: Count = var(
        200,
        "attempts and test pings at once per webhooks process, in all; a ping beyond: 429 with "
        "`Retry-After`",
    )
    webhook_per_host_concurrency: Count = var(
        20, "attempts and test pings at once per webhooks process and target host (however spelled)"
    )
    webhook_per_workspace_concurrency: Count = var(
        50, "attempts and test pings at once per webhooks process and workspace"
    )


# The app's settings key, typed as this service's: `create_webhooks_app` is given WebhooksSettings.
SETTINGS = cast("web.AppKey[WebhooksSettings]", common_web.SETTINGS)
