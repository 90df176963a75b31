"""Cleanup contexts: one per long-lived resource of a process (PostgreSQL pools, the RabbitMQ
broker and its consumers, the outbox relay, the outgoing HTTP session and the peer client),
torn down in reverse order on SIGTERM; and `stop_tasks` for background tasks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

import aiohttp
import aiopg
import structlog
from aiohttp import web

from .. import db
from ..messaging import Broker, Consumer, Handler, OutboxRelay
from ..peers import Peers
from ..render import dumps
from ..settings import Settings
from ..tasks import raise_if_cancelled
from .keys import BROKER, HTTP, PEERS, PG_POOL, PROCESS, SETTINGS

log = structlog.get_logger("http")


def pg_context(
    dsn: Callable[[Any], str] | None = None,
    *,
    key: web.AppKey[aiopg.Pool] = PG_POOL,
    role: str = "",
    size: tuple[int, int] | None = None,
    options: Callable[[Any], Sequence[str]] | Sequence[str] = (),
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A PostgreSQL pool under `key`, with the process's database timeouts.

    By default the process's main pool: `DATABASE_URL`, `DB_POOL_MIN`..`DB_POOL_MAX`
    connections, named `ims-<process>`. `dsn` and `options` (each a value or a function of
    the settings) give another database or session options, `size` another (min, max), and
    `role` a suffix of the application name (`ims-<process>-<role>`)."""

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        s: Settings = app[SETTINGS]
        minsize, maxsize = size or (s.db_pool_min, s.db_pool_max)
        pool = await db.create_pool(
            dsn(s) if dsn is not None else s.database_url,
            minsize=minsize,
            maxsize=maxsize,
            timeouts=s.db_timeouts(),
            extra_options=options(s) if callable(options) else options,
            application_name=f"ims-{app[PROCESS]}" + (f"-{role}" if role else ""),
            acquire_timeout=s.db_pool_timeout_s,
        )
        app[key] = pool
        yield
        await close_pool(pool)

    return ctx


async def close_pool(pool: aiopg.Pool) -> None:
    pool.close()
    try:  # a connection still held by a stuck task must not hold up the exit
        await asyncio.wait_for(pool.wait_closed(), timeout=5.0)
    except TimeoutError:
        log.warning("pool_close_timeout")
        pool.terminate()


def broker_context(
    queues: Mapping[str, Sequence[str]],
    consumers: Mapping[str, Handler] | None = None,
    schema: str | None = None,
    prefetch: int = 32,
    consumer_cls: type[Consumer] = Consumer,
) -> Callable[[web.Application], AsyncIterator[None]]:
    """Connect to RabbitMQ in the background (retrying), declare `queues` (every consumer
    queue of the topology, libs/api/topology.py), then start the consumers."""

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        s = app[SETTINGS]
        broker = Broker(s.amqp_url, s.amqp_prefix, f"ims-{app[PROCESS]}", queues)
        app[BROKER] = broker
        started: list[Consumer] = []

        async def connect() -> None:
            delay = 0.5
            while True:
                try:
                    await broker.connect()
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    raise_if_cancelled(err)
                    log.warning("broker_connect_failed", error=repr(err), retry_in=delay)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 10.0)
            for name, handler in (consumers or {}).items():
                assert schema is not None, "consumers record handled events in a schema"
                consumer = consumer_cls(app[PG_POOL], broker, name, schema, handler, prefetch)
                await consumer.start()
                started.append(consumer)

        task = asyncio.create_task(connect())
        yield
        # Bounded: with the broker down or half up, connecting and closing can wait for an
        # answer that never comes, and SIGTERM must still end the process in time.
        task.cancel()
        await asyncio.wait({task}, timeout=BROKER_CLOSE_S)
        try:
            await asyncio.wait_for(_close_broker(started, broker), BROKER_CLOSE_S)
        except (TimeoutError, Exception) as err:
            log.warning("broker_close_failed", error=repr(err))

    return ctx


BROKER_CLOSE_S = 3.0


async def _close_broker(consumers: list[Consumer], broker: Broker) -> None:
    for consumer in consumers:
        await consumer.stop()
    await broker.close()


def relay_context(schema: str) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        s = app[SETTINGS]
        relay = OutboxRelay(app[PG_POOL], s.database_url, schema, app[BROKER], s.relay_interval_s)
        task = asyncio.create_task(relay.run())
        yield
        await stop_tasks([task])

    return ctx


async def http_context(app: web.Application) -> AsyncIterator[None]:
    """One outgoing client session per app, and the peer client over it (libs/common/peers.py)."""
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=200, keepalive_timeout=app[SETTINGS].peer_idle_s),
        json_serialize=lambda o: dumps(o).decode(),
    )
    app[HTTP] = session
    app[PEERS] = Peers(session, app[SETTINGS])
    yield
    await session.close()


async def stop_tasks(tasks: Iterable[asyncio.Task[Any]], timeout: float = 3.0) -> None:
    """Cancel background tasks and wait for them, but never past `timeout`: a task stuck in a
    library's cancellation must not keep the process from exiting (its work is recoverable)."""
    pending = [t for t in tasks if not t.done()]
    for task in pending:
        task.cancel()
    if not pending:
        return
    _, stuck = await asyncio.wait(pending, timeout=timeout)
    for task in stuck:
        log.warning("task_not_stopped", task=task.get_name(), coro=repr(task.get_coro()))
