"""The ideas service application."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

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

from . import prepared, projection, similar, views
from .embedder import embedder_context
from .internal import setup_internal_routes
from .settings import IdeasSettings

SIMILAR_PROCESS = "ideas-similar"


def similar_context(
    index: similar.Similar, warm: bool
) -> Callable[[web.Application], AsyncIterator[None]]:
    """The similar-ideas index of this process: its refresher runs while the app does; with
    `warm`, the model loads at start rather than at the first text."""

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        app[similar.SIMILAR] = index
        tasks = {asyncio.create_task(index.run_refresher(app[PG_POOL]))}
        if warm:
            tasks.add(asyncio.create_task(index.warm()))
        yield
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=5.0)
        index.close()

    return ctx


def new_similar(settings: IdeasSettings) -> similar.Similar:
    return similar.Similar(
        settings.database_url,
        settings.similar_model,
        settings.similar_embed_workers,
        settings.similar_embed_nice,
        settings.similar_search_idle,
        memory_budget=settings.similar_index_memory_mb * 2**20,
    )


def create_ideas_app(settings: IdeasSettings) -> web.Application:
    app = create_app(settings, "ideas")
    # The automation API's duplicate rule searches here; the similar-ideas routes, in the
    # search process (create_similar_app).
    index = new_similar(settings)
    consumers = projection.CONSUMERS
    app.cleanup_ctx.append(pg_context(options=prepared.SESSION_OPTIONS))
    # The automation rule's first check loads the model (the transformer: ~200 MB a process).
    app.cleanup_ctx.append(similar_context(index, warm=False))
    if settings.similar_embedder == "child":  # else a process of its own (embedder.py)
        app.cleanup_ctx.append(embedder_context())
    app.cleanup_ctx.append(broker_context(QUEUES, consumers=consumers, schema="ideas"))
    app.cleanup_ctx.append(relay_context("ideas"))
    app.cleanup_ctx.append(http_context)
    # The ids of handled events are kept RETENTION_DAYS (docs/events.md).
    app.cleanup_ctx.append(
        retention_context(lambda a: a[PG_POOL], (Sweep("ideas.processed_events", "processed_at"),))
    )
    mount_routes(app, [r for r in ROUTES if r.service == "ideas"], views)
    setup_internal_routes(app)
    return app


def create_similar_app(settings: IdeasSettings) -> web.Application:
    """The ideas service's search process (`ims-ideas-similar`, similar_server.py): the
    similar-ideas routes alone, with the indexes they search; no consumer, relay or embedder
    (those stay with the ideas process, at the requests' priority)."""
    app = create_app(settings, SIMILAR_PROCESS)
    app.cleanup_ctx.append(pg_context(options=prepared.SESSION_OPTIONS))
    app.cleanup_ctx.append(similar_context(new_similar(settings), warm=True))
    mount_routes(app, [r for r in ROUTES if r.service == "similar"], views)
    return app
