"""The customers service application."""

from __future__ import annotations

from aiohttp import web

from libs.common.web import (broker_context, create_app, http_context, mount_routes,
                             pg_context, relay_context)

from . import views
from libs.api.customers.routes import ROUTES
from libs.api.topology import QUEUES
from .settings import CustomersSettings


def create_customers_app(settings: CustomersSettings) -> web.Application:
    app = create_app(settings, "customers")
    app.cleanup_ctx.append(pg_context())
    app.cleanup_ctx.append(broker_context(QUEUES, schema="customers"))
    app.cleanup_ctx.append(relay_context("customers"))
    app.cleanup_ctx.append(http_context)
    mount_routes(app, ROUTES, views)
    return app
