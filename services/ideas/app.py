"""The ideas service application."""

from __future__ import annotations

from aiohttp import web

from libs.common.retention import Sweep, retention_context
from libs.common.web import (PG_POOL, broker_context, create_app, http_context, mount_routes,
                             pg_context, relay_context)

from . import views
from libs.api.ideas.routes import ROUTES
from libs.api.topology import QUEUES
from .internal import setup_internal_routes
from .settings import IdeasSettings


def _consumers() -> dict:  # type: ignore[type-arg]
    """The customers projection (services/ideas/projection.py) when it is part of the build."""
    try:
        from . import projection  # type: ignore[attr-defined]
    except ImportError:
        return {}
    return dict(getattr(projection, "CONSUMERS", {}))


def create_ideas_app(settings: IdeasSettings) -> web.Application:
    app = create_app(settings, "ideas")
    app.cleanup_ctx.append(pg_context())
    app.cleanup_ctx.append(broker_context(QUEUES, consumers=_consumers() or None, schema="ideas"))
    app.cleanup_ctx.append(relay_context("ideas"))
    app.cleanup_ctx.append(http_context)
    # The ids of handled events are kept RETENTION_DAYS (docs/events.md).
    app.cleanup_ctx.append(retention_context(
        lambda a: a[PG_POOL], (Sweep("ideas.processed_events", "processed_at"),)))
    mount_routes(app, ROUTES, views)
    setup_internal_routes(app)
    return app
