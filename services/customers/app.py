"""The customers service application."""

from __future__ import annotations

from aiohttp import web

from libs.common.settings import Settings
from libs.common.web import (broker_context, create_app, http_context, mount_routes,
                             pg_context, relay_context)

from . import merges, views
from libs.api.customers.routes import ROUTES


def create_customers_app(settings: Settings) -> web.Application:
    app = create_app(settings, "customers")
    app.cleanup_ctx.append(pg_context())
    app.cleanup_ctx.append(broker_context(consumers=merges.CONSUMERS, schema="customers"))
    app.cleanup_ctx.append(relay_context("customers"))
    app.cleanup_ctx.append(http_context)
    mount_routes(app, ROUTES, views)
    return app
