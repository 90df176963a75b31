"""The analytics service's settings: its read-only database connection and export bounds."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Self, cast

from aiohttp import web
from pydantic import BeforeValidator, model_validator

from libs.common import web as common_web
from libs.common.settings import Count, Seconds, Settings, var


def _role(value: Any) -> Any:
    # It becomes a connection option: a plain identifier only (empty disables it).
    if isinstance(value, str) and value and not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", value):
        raise ValueError(f"must be a plain role name, got {value!r}")
    return value


Role = Annotated[str, BeforeValidator(_role)]


class AnalyticsSettings(Settings):
    DB_TIMEOUTS: ClassVar[tuple[float, float]] = (60.0, 0.0)  # reports over 1M ideas: ~0.2 s;
    # idle: see default_db_timeouts

    analytics_database_url: str = var(
        "", "a read replica for analytics and exports", shown="`DATABASE_URL`", kind="URL"
    )
    analytics_db_role: Role = var(
        "ims_analytics", "read-only role analytics runs as (empty: none)", blank=True
    )
    export_concurrency: Count = var(
        2,
        "exports at once per analytics process, below `DB_POOL_MAX`; beyond: 503 with "
        "`Retry-After`",
    )
    export_concurrency_per_workspace: Count = var(
        1, "exports at once per analytics process and workspace; beyond: 429 with `Retry-After`"
    )
    export_deadline_s: Seconds = var(
        120.0,
        "an export is cut off past this overall time "
        "([docs/analytics.md](docs/analytics.md#exports))",
    )
    export_write_timeout_s: Seconds = var(
        20.0,
        "an export is cut off when its client takes longer than this to accept 64 KiB "
        "([docs/analytics.md](docs/analytics.md#exports))",
    )

    @model_validator(mode="after")
    def _exports_leave_connections(self) -> Self:
        # exports would hold every connection and starve the reports
        if self.export_concurrency >= self.db_pool_max:
            raise ValueError(
                f"EXPORT_CONCURRENCY ({self.export_concurrency}) must be below DB_POOL_MAX"
                f" ({self.db_pool_max})"
            )
        return self

    def default_db_timeouts(self) -> tuple[float, float]:
        """An export's transaction idles while its client reads; the export deadline ends it
        first, so the idle limit defaults to that deadline plus 30 s (a backstop)."""
        return (self.DB_TIMEOUTS[0], self.export_deadline_s + 30.0)


# The app's settings key, typed as this service's: `create_analytics_app` is given AnalyticsSettings.
SETTINGS = cast("web.AppKey[AnalyticsSettings]", common_web.SETTINGS)
