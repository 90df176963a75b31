"""The analytics service application: reports and exports over the others' tables, read-only."""

from __future__ import annotations

from aiohttp import web

from libs.common.settings import Settings
from libs.common.web import create_app, mount_routes, pg_context

from . import views
from .contract import ROUTES


def create_analytics_app(settings: Settings) -> web.Application:
    app = create_app(settings, "analytics")
    app.cleanup_ctx.append(pg_context(settings.analytics_database_url or None, read_only=True))
    mount_routes(app, ROUTES, views)
    return app
