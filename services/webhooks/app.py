"""The webhooks service application: the API, the event consumer and the dispatcher."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aiohttp import web

from libs.common.settings import Settings
from libs.common.web import (HTTP, PG_POOL, SETTINGS, broker_context, create_app, http_context,
                             mount_routes, pg_context, relay_context, stop_tasks)

from . import views
from .contract import ROUTES
from .dispatcher import Dispatcher
from .events import make_handler
from .sender import Sender, delivery_session

DISPATCHER = web.AppKey("dispatcher", Dispatcher)


async def dispatcher_context(app: web.Application) -> AsyncIterator[None]:
    """The dispatcher's tasks and its own delivery session, stopped before the pool closes."""
    s = app[SETTINGS]
    session = delivery_session(s)
    dispatcher = Dispatcher(app[PG_POOL], s, Sender(session, s))
    app[DISPATCHER] = dispatcher
    tasks = [asyncio.create_task(dispatcher.run()), asyncio.create_task(dispatcher.flush_forever())]
    yield
    await stop_tasks(tasks)
    await dispatcher.shutdown(grace_s=min(2.0, s.shutdown_timeout_s / 3))
    await session.close()


def create_webhooks_app(settings: Settings) -> web.Application:
    app = create_app(settings, "webhooks")
    app.cleanup_ctx.append(pg_context())
    app.cleanup_ctx.append(http_context)  # before the consumer, which may call the ideas service
    handler = make_handler(settings.webhook_retry_schedule[0], lambda: app[HTTP], settings)
    app.cleanup_ctx.append(broker_context(consumers={"webhooks": handler}, schema="webhooks"))
    app.cleanup_ctx.append(relay_context("webhooks"))
    app.cleanup_ctx.append(dispatcher_context)
    mount_routes(app, ROUTES, views)
    return app
