"""The similar service's search API (`ims-similar`, docs/similar.md): the similar-ideas routes of
the route table and the internal route of the automation rule's duplicates, with the in-memory
indexes they search. It consumes no queue and relays no outbox: the embedder
(`ims-similar-embedder`, embedder.py) writes what the indexes load."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from aiohttp import web

from libs.api.similar.routes import ROUTES
from libs.common.web import PG_POOL, create_app, http_context, mount_routes, pg_context

from . import index, views
from .internal import setup_internal_routes
from .settings import SimilarSettings

PROCESS = "similar"


def similar_context(similar: index.Similar) -> Callable[[web.Application], AsyncIterator[None]]:
    """The process's indexes: the refresher runs while the app does, and the model loads at
    start rather than at the first text."""

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        similar.pool = app[PG_POOL]
        app[index.SIMILAR] = similar
        tasks = {
            asyncio.create_task(similar.run_refresher(app[PG_POOL])),
            asyncio.create_task(similar.warm()),
        }
        yield
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=5.0)
        similar.close()

    return ctx


def new_similar(settings: SimilarSettings) -> index.Similar:
    return index.Similar(
        settings.database_url,
        settings.similar_model,
        settings.similar_embed_workers,
        settings.similar_embed_nice,
        settings.similar_search_idle,
        memory_budget=settings.similar_index_memory_mb * 2**20,
    )


def create_similar_app(settings: SimilarSettings) -> web.Application:
    app = create_app(settings, PROCESS)
    app.cleanup_ctx.append(pg_context())
    app.cleanup_ctx.append(similar_context(new_similar(settings)))
    app.cleanup_ctx.append(http_context)  # the ideas service's lookups (libs/common/peers.py)
    mount_routes(app, [r for r in ROUTES if r.service == "similar"], views)
    setup_internal_routes(app)
    return app
