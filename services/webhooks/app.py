"""The webhooks service application: the API, the event consumer and the dispatcher."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aiohttp import web

from libs.common.settings import Settings
from libs.common.web import (HTTP, PG_POOL, SETTINGS, broker_context, create_app, http_context,
                             mount_routes, pg_context, relay_context)

from . import views
from .contract import ROUTES
from .consumer import PREFETCH, BatchConsumer
from .dispatcher import Dispatcher
from .fanout import Fanout
from .sender import Sender, delivery_session

DISPATCHER = web.AppKey("dispatcher", Dispatcher)
FANOUT = web.AppKey("fanout", Fanout)


async def dispatcher_context(app: web.Application) -> AsyncIterator[None]:
    """The dispatcher's tasks and its own delivery session, stopped before the pool closes."""
    s = app[SETTINGS]
    session = delivery_session(s)
    dispatcher = Dispatcher(app[PG_POOL], s, Sender(session, s),
                            on_subscriptions_changed=app[FANOUT].cache.invalidate)
    app[DISPATCHER] = dispatcher
    tasks = [asyncio.create_task(dispatcher.run()), asyncio.create_task(dispatcher.flush_forever())]
    yield
    dispatcher.closing = True  # the consumer, still running, hands over nothing more
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await dispatcher.shutdown(grace_s=min(2.0, s.shutdown_timeout_s / 3))
    await session.close()


def create_webhooks_app(settings: Settings) -> web.Application:
    app = create_app(settings, "webhooks")
    app.cleanup_ctx.append(pg_context())
    app.cleanup_ctx.append(http_context)  # before the consumer, which may call the ideas service
    # The consumer hands first attempts to this replica's dispatcher once it runs.
    fanout = Fanout(settings, lambda: app[HTTP], lambda: app.get(DISPATCHER))
    app[FANOUT] = fanout
    app.cleanup_ctx.append(broker_context(consumers={"webhooks": fanout}, schema="webhooks",
                                          prefetch=PREFETCH, consumer_cls=BatchConsumer))
    app.cleanup_ctx.append(relay_context("webhooks"))
    app.cleanup_ctx.append(dispatcher_context)
    mount_routes(app, ROUTES, views)
    return app
