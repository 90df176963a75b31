"""The analytics service's settings: its read-only database connection and export bounds."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from aiohttp import web

from libs.common import web as common_web
from libs.common.settings import Settings, SettingsError, env_float, env_int


def _role(raw: str) -> str:
    # It becomes a connection option: a plain identifier only (empty disables it).
    if raw and not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", raw):
        raise SettingsError(f"ANALYTICS_DB_ROLE must be a plain role name, got {raw!r}")
    return raw


@dataclass(frozen=True)
class AnalyticsSettings(Settings):
    DB_TIMEOUTS: ClassVar[tuple[float, float]] = (60.0, 0.0)  # reports over 1M ideas: ~0.2 s;
    # idle: see default_db_timeouts

    analytics_database_url: str = ""
    analytics_db_role: str = "ims_analytics"
    export_concurrency: int = 2
    export_concurrency_per_workspace: int = 1
    export_deadline_s: float = 120.0
    export_write_timeout_s: float = 20.0

    def default_db_timeouts(self) -> tuple[float, float]:
        """An export's transaction idles while its client reads; the export deadline ends it
        first, so the idle limit defaults to that deadline plus 30 s (a backstop)."""
        return (self.DB_TIMEOUTS[0], self.export_deadline_s + 30.0)

    @classmethod
    def read(cls, e: dict[str, str], require_secrets: bool) -> dict[str, Any]:
        fields = super().read(e, require_secrets)
        pool_max, exports = fields["db_pool_max"], env_int(e, "EXPORT_CONCURRENCY", 2, 1)
        if exports >= pool_max:  # exports would hold every connection and starve the reports
            raise SettingsError(
                f"EXPORT_CONCURRENCY ({exports}) must be below DB_POOL_MAX ({pool_max})"
            )
        return dict(
            fields,
            analytics_database_url=e.get("ANALYTICS_DATABASE_URL", ""),
            analytics_db_role=_role(e.get("ANALYTICS_DB_ROLE", "ims_analytics").strip()),
            export_concurrency=exports,
            export_concurrency_per_workspace=env_int(e, "EXPORT_CONCURRENCY_PER_WORKSPACE", 1, 1),
            export_deadline_s=env_float(e, "EXPORT_DEADLINE_S", 120.0),
            export_write_timeout_s=env_float(e, "EXPORT_WRITE_TIMEOUT_S", 20.0),
        )


# The app's settings key, typed as this service's: `create_analytics_app` is given AnalyticsSettings.
SETTINGS = cast("web.AppKey[AnalyticsSettings]", common_web.SETTINGS)
