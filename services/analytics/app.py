"""The analytics service application: reports and exports over the others' tables, read-only.

Its connections are read-only twice over: every transaction defaults to read only, and each
session runs as the role `ANALYTICS_DB_ROLE` (default `ims_analytics`, created by the analytics
migration with SELECT on the ideas and customers schemas and nothing else). In production
`ANALYTICS_DATABASE_URL` points at a replica.
"""

from __future__ import annotations

from aiohttp import web

from libs.api.analytics.routes import ROUTES
from libs.common.web import create_app, http_context, mount_routes, pg_context

from . import views
from .settings import AnalyticsSettings
from .slots import ExportSlots


def readonly_options(s: AnalyticsSettings) -> list[str]:
    # jit off: compiling a report's plan costs more than it saves at these sizes; work_mem
    # lets the signals report hash its (platform, idea) pairs in memory instead of spilling.
    options = ["-c default_transaction_read_only=on", "-c jit=off", "-c work_mem=64MB"]
    if s.analytics_db_role:
        # Set at connection start, so no statement of the process ever runs as the login user.
        options.append(f"-c role={s.analytics_db_role}")
    return options


def readonly_dsn(s: AnalyticsSettings) -> str:
    return s.analytics_database_url or s.database_url


def create_analytics_app(settings: AnalyticsSettings) -> web.Application:
    app = create_app(settings, "analytics")
    app[views.EXPORT_SLOTS] = ExportSlots(
        settings.export_concurrency, settings.export_concurrency_per_workspace
    )
    app.cleanup_ctx.append(pg_context(readonly_dsn, options=readonly_options))
    app.cleanup_ctx.append(http_context)  # to let the ideas service create default stages
    mount_routes(app, ROUTES, views)
    return app
