"""The ideas service application."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from aiohttp import web

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

from . import projection, similar, views
from libs.api.ideas.routes import ROUTES
from libs.api.topology import QUEUES
from .embedder import embedder_context
from .internal import setup_internal_routes
from .settings import IdeasSettings


def similar_context(index: similar.Similar) -> Callable[[web.Application], AsyncIterator[None]]:
    """The similar-ideas index of this process: its refresher runs while the app does."""

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        app[similar.SIMILAR] = index
        tasks = {
            asyncio.create_task(index.run_refresher(app[PG_POOL])),
            asyncio.create_task(index.warm()),
        }
        yield
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=5.0)
        index.close()

    return ctx


def create_ideas_app(settings: IdeasSettings) -> web.Application:
    app = create_app(settings, "ideas")
    index = similar.Similar(
        settings.database_url,
        settings.similar_model,
        settings.similar_embed_workers,
        settings.similar_embed_nice,
        settings.similar_search_idle,
        memory_budget=settings.similar_index_memory_mb * 2**20,
    )
    consumers = projection.CONSUMERS
    app.cleanup_ctx.append(pg_context())
    app.cleanup_ctx.append(similar_context(index))
    if settings.similar_embedder == "child":  # else a process of its own (embedder.py)
        app.cleanup_ctx.append(embedder_context())
    app.cleanup_ctx.append(broker_context(QUEUES, consumers=consumers, schema="ideas"))
    app.cleanup_ctx.append(relay_context("ideas"))
    app.cleanup_ctx.append(http_context)
    # The ids of handled events are kept RETENTION_DAYS (docs/events.md).
    app.cleanup_ctx.append(
        retention_context(lambda a: a[PG_POOL], (Sweep("ideas.processed_events", "processed_at"),))
    )
    mount_routes(app, ROUTES, views)
    setup_internal_routes(app)
    return app
