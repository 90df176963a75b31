"""The `webhooks` consumer: every message waiting is handled in one transaction.

Messages are taken as they arrive and handed to one drainer, which writes the ids of all the
events waiting (`processed_events`, so a redelivered one is skipped) and their delivery rows in
one transaction (`Fanout.batch`), starts the first attempts handed over once it commits, then
acks. A burst of events thus costs a few statements rather than a few per event. If a batch
fails, its events are retried one at a time by the base consumer (`consume_one`), so that one bad event cannot
hold back the others (it alone is dead-lettered after its tries).
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from aio_pika.abc import AbstractIncomingMessage

from libs.common import db
from libs.common.messaging import Consumer, parse_event
from libs.common.tasks import raise_if_cancelled

from .fanout import Fanout, Handoff

log = structlog.get_logger("webhooks.consumer")

BATCH = 200
PREFETCH = 256


class BatchConsumer(Consumer):
    handler: Fanout

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._waiting: list[tuple[AbstractIncomingMessage, dict[str, Any]]] = []
        self._kick = asyncio.Event()
        self._drainer: asyncio.Task[None] | None = None
        self._stopping = False

    async def start(self) -> None:
        self._drainer = asyncio.create_task(self._drain_forever())
        await super().start()

    async def stop(self) -> None:
        # An unfinished batch rolls back and its messages return. The loop also ends on the
        # flag: a cancellation can be lost inside an aiopg query (wait_for's race on 3.11).
        self._stopping = True
        self._kick.set()
        if self._drainer is not None:
            self._drainer.cancel()
            await asyncio.wait([self._drainer], timeout=2.0)
        await super().stop()

    async def receive(self, message: AbstractIncomingMessage) -> None:
        """Each message joins the batch waiting for the drainer."""
        event = await parse_event(message)
        if event is None:
            return
        self._waiting.append((message, event))
        self._kick.set()

    async def _drain_forever(self) -> None:
        while not self._stopping:
            await self._kick.wait()
            self._kick.clear()
            while self._waiting and not self._stopping:
                batch = self._waiting[:BATCH]
                del self._waiting[: len(batch)]
                try:
                    await self._apply(batch)
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # e.g. the channel closed: the broker redelivers
                    raise_if_cancelled(err)
                    log.warning("event_batch_unsettled", events=len(batch), error=repr(err))

    async def _apply(self, batch: list[tuple[AbstractIncomingMessage, dict[str, Any]]]) -> None:
        started = asyncio.get_running_loop().time()
        try:
            await self._in_one_transaction([e for _, e in batch])
        except asyncio.CancelledError:
            raise
        except Exception as err:
            raise_if_cancelled(err)
            log.warning("event_batch_failed", events=len(batch), error=repr(err))
            for message, _ in batch:  # one at a time: see the module's docstring
                await self.consume_one(message)
            return
        for message, _ in batch:
            try:
                await message.ack()
            except Exception as err:  # channel gone: redelivered, then skipped as processed
                log.warning("ack_failed", event_id=str(message.message_id), error=repr(err))
        log.info(
            "events_consumed",
            events=len(batch),
            duration_ms=round((asyncio.get_running_loop().time() - started) * 1000, 2),
        )

    async def _in_one_transaction(self, events: list[dict[str, Any]]) -> None:
        handoff = Handoff(None)
        try:
            async with db.transaction(self.pool) as cur:
                await cur.execute(
                    f"INSERT INTO {self.schema}.processed_events (consumer, event_id)"
                    " SELECT %s, unnest(%s::uuid[]) ON CONFLICT DO NOTHING RETURNING event_id",
                    (self.consumer, list({e["id"] for e in events})),
                )
                fresh = {str(r[0]) for r in await cur.fetchall()}
                todo = list({e["id"]: e for e in events if e["id"] in fresh}.values())
                if todo:
                    handoff = await self.handler.batch(cur, todo)
        except BaseException:
            handoff.cancel()  # not committed: the rows and their leases are not there
            raise
        handoff.go()
