"""The webhooks service application: the API, the event consumer and the dispatcher."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiopg
from aiohttp import web

from libs.api.topology import QUEUES
from libs.api.webhooks.routes import ROUTES
from libs.common.retention import Sweep, retention_context
from libs.common.web import (
    PG_POOL,
    broker_context,
    create_app,
    mount_routes,
    pg_context,
    relay_context,
)

from . import views
from .consumer import PREFETCH, BatchConsumer
from .dispatcher import Dispatcher
from .erasure import setup_internal_routes
from .fanout import Fanout
from .sender import Sender, delivery_session
from .settings import SETTINGS, WebhooksSettings
from .views import PINGER

DISPATCHER = web.AppKey("dispatcher", Dispatcher)
DISPATCH_POOL = web.AppKey("dispatch_pool", aiopg.Pool)
FANOUT = web.AppKey("fanout", Fanout)
# What RETENTION_DAYS prunes here (docs/webhooks.md, Retention). A pending delivery stays
# whatever its age; its attempts go with it when it goes.
RETENTION = (
    Sweep("webhooks.deliveries", "created_at", "status <> 'pending'"),
    Sweep("webhooks.attempts", "created_at"),
    Sweep("webhooks.processed_events", "processed_at"),
)


# The dispatcher's own small pool, whose commits do not wait for the WAL flush: a lease or an
# outcome lost with a PostgreSQL crash only means that attempt is made again (at least once),
# while the delivery rows themselves (written by the consumer before the ack) stay durable.
dispatch_pool_context = pg_context(
    key=DISPATCH_POOL, role="dispatch", size=(1, 3), options=("-c synchronous_commit=off",)
)


async def dispatcher_context(app: web.Application) -> AsyncIterator[None]:
    """The dispatcher's tasks and its own delivery session, over its own pool."""
    s = app[SETTINGS]
    session = delivery_session(s)
    dispatcher = Dispatcher(
        app[DISPATCH_POOL],
        s,
        Sender(session, s),
        on_subscriptions_changed=app[FANOUT].cache.invalidate,
    )
    app[DISPATCHER] = dispatcher
    app[PINGER] = dispatcher
    tasks = [asyncio.create_task(dispatcher.run()), asyncio.create_task(dispatcher.flush_forever())]
    yield
    await dispatcher.stop_tasks(tasks)  # the consumer, still running, hands over nothing more
    await dispatcher.shutdown(grace_s=min(2.0, s.shutdown_timeout_s / 3))
    await session.close()


def create_webhooks_app(settings: WebhooksSettings) -> web.Application:
    app = create_app(settings, "webhooks")
    app.cleanup_ctx.append(pg_context())
    # The consumer hands first attempts to this replica's dispatcher once it runs.
    fanout = Fanout(settings, lambda: app.get(DISPATCHER))
    app[FANOUT] = fanout
    app.cleanup_ctx.append(
        broker_context(
            QUEUES,
            consumers={"webhooks": fanout},
            schema="webhooks",
            prefetch=PREFETCH,
            consumer_cls=BatchConsumer,
        )
    )
    app.cleanup_ctx.append(relay_context("webhooks"))
    app.cleanup_ctx.append(dispatch_pool_context)
    app.cleanup_ctx.append(dispatcher_context)
    app.cleanup_ctx.append(retention_context(lambda a: a[PG_POOL], RETENTION))
    mount_routes(app, ROUTES, views)
    setup_internal_routes(app)
    return app
