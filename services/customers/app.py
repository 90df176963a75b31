"""The customers service application."""

from __future__ import annotations

from aiohttp import web

from libs.api.customers.routes import ROUTES
from libs.api.topology import QUEUES
from libs.common.retention import Sweep, retention_context
from libs.common.web import (
    PG_POOL,
    broker_context,
    create_app,
    http_context,
    mount_routes,
    pg_context,
    relay_context,
)

from . import signal_links, views
from .settings import CustomersSettings
from .user_views import setup_internal_routes


def create_customers_app(settings: CustomersSettings) -> web.Application:
    app = create_app(settings, "customers")
    app.cleanup_ctx.append(pg_context())
    app.cleanup_ctx.append(
        broker_context(QUEUES, consumers=signal_links.CONSUMERS, schema="customers")
    )
    app.cleanup_ctx.append(relay_context("customers"))
    app.cleanup_ctx.append(http_context)
    # The ids of handled merge events are kept RETENTION_DAYS (docs/events.md).
    app.cleanup_ctx.append(
        retention_context(
            lambda a: a[PG_POOL], (Sweep("customers.processed_events", "processed_at"),)
        )
    )
    mount_routes(app, ROUTES, views)
    setup_internal_routes(app)
    return app
