"""The ideas service application."""

from __future__ import annotations

from aiohttp import web

from libs.api.ideas.routes import ROUTES
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

from . import prepared, projection, views
from .internal import setup_internal_routes
from .settings import IdeasSettings


def create_ideas_app(settings: IdeasSettings) -> web.Application:
    app = create_app(settings, "ideas")
    consumers = projection.CONSUMERS
    app.cleanup_ctx.append(pg_context(options=prepared.SESSION_OPTIONS))
    app.cleanup_ctx.append(broker_context(QUEUES, consumers=consumers, schema="ideas"))
    app.cleanup_ctx.append(relay_context("ideas"))
    # The peers: the automation rule's duplicates by meaning are the similar service's.
    app.cleanup_ctx.append(http_context)
    # The ids of handled events are kept RETENTION_DAYS (docs/events.md).
    app.cleanup_ctx.append(
        retention_context(lambda a: a[PG_POOL], (Sweep("ideas.processed_events", "processed_at"),))
    )
    mount_routes(app, [r for r in ROUTES if r.service == "ideas"], views)
    setup_internal_routes(app)
    return app
