"""`python -m services.similar.embedder` (`ims-similar-embedder`): the similar service's embedder
(docs/similar.md).

A process of its own (a Deployment of its own on Kubernetes, scaled apart from the search API;
`make run` and the test systems start one beside it), serving `/healthz`, `/readyz`
(PostgreSQL and RabbitMQ) and `/metrics` on `EMBEDDER_PORT` (8086) for its probes and
Prometheus. It consumes the `similar` queue (idea.created, idea.updated, idea.status_changed,
idea.deleted: each carries the Idea after the change) and keeps the service's copy of the
ideas (`similar.ideas`) and their embeddings (`similar.embeddings`) current: the events
delivered together are taken as one batch (up to `BATCH`), their states applied in one
transaction (an event older than the copy's state changes nothing: `store.apply_ideas`), the
changed texts embedded in one model call, the rows written in one transaction, then one
`NOTIFY similar_index` (`store.upsert_embeddings`). At start it also embeds the ideas of the
copy whose row is missing or was computed by another model (`store.catch_up`, one embedder at a
time). A redelivered or reordered event changes nothing, so it keeps no record of handled
events.

It runs `SIMILAR_EMBED_NICE` steps below the CPU priority it was started with (on the CPU
`SIMILAR_EMBED_CPU` names), its model on a thread of its own in the idle scheduling class,
with an event loop, database pool and broker connection of its own. A batch whose first event
has waited `LATE_S` and is not embedded yet is embedded again on a second model thread, at the
priority and on the CPUs the process was started with, and the first answer counts: the idle
class, which a busy machine starves, does not hold a change past the 2 seconds in which a
search must find it (docs/similar.md). It stops on SIGTERM or
SIGINT after the batch in hand.
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import structlog
from aiohttp import web
from prometheus_client import Counter

from libs.api.topology import QUEUES
from libs.common import db
from libs.common.logging import configure_logging
from libs.common.messaging import SEQ_HEADER, Broker, Consumer, Idempotent
from libs.common.settings import load_or_exit
from libs.common.tasks import raise_if_cancelled
from libs.common.web import BROKER, PG_POOL, create_app, runner
from libs.common.web.serving import freeze_startup_objects, watch_loop

from .embedding import Embedder, StaticEmbedder, idle_thread, make_embedder, place_model_process
from .settings import SimilarSettings
from .store import IdeaState, apply_ideas, catch_up, upsert_embeddings

log = structlog.get_logger("embedder")

PROCESS = "similar-embedder"
BATCH = 64  # ideas a batch
GATHER_S = 0.2  # how long the first event of a batch waits for more (one model call for all)
PREFETCH = 128  # events delivered ahead
# How long a batch's first event may wait before its texts go to the late thread as well: the
# 2 s in which a search must find a change, less the batch's gathering, its writes, the
# index's refresh and the margin a busy machine takes.
LATE_S = 0.6
PIECE = 16  # texts a model call of the embedder (a late batch moves to the late thread by pieces)

LATE = Counter(
    "ims_similar_embed_late_total",
    "Pieces of the embedder's batches that the idle-class model thread had not embedded in"
    " time and went to the late thread as well",
)
LATE_PIECES = Counter(
    "ims_similar_embed_late_pieces_total",
    "Pieces of the embedder's batches that went to the late thread alone (their batch was"
    " already late when they came up)",
)

Waiting = tuple[IdeaState, float, "asyncio.Future[None]"]


class Batches:
    """Gathers the events the consumer hands over together into batches, one at a time."""

    def __init__(
        self,
        pool: Any,
        embedder: Embedder | StaticEmbedder,
        late_thread: ThreadPoolExecutor | None = None,
    ) -> None:
        self.pool, self.embedder = pool, embedder
        # The model on a thread of its own in the idle scheduling class: it takes only the CPU
        # nothing else wants, while the event loop (reads, transactions) keeps the process's
        # priority, so a transaction never waits for CPU the model was refused.
        self.model_thread = ThreadPoolExecutor(1, "model", initializer=idle_thread)
        # The late batches' thread, started before the process lowered its priority and kept
        # to one CPU (`main`: Linux sets both thread by thread, and a thread starts with its
        # parent's), so it keeps the priority and the CPUs the process was started with.
        self.late_thread = late_thread
        self.idle_running: asyncio.Future[Any] | None = None
        self.waiting: list[Waiting] = []
        self.kick = asyncio.Event()

    async def apply(self, pool: Any, event: dict[str, Any]) -> None:
        """The consumer's handler for one event: done when its batch is written. The event's
        version is its place in the ideas outbox (`x-event-seq`); an event published before
        the relay sent it counts as 0, older than any that has one."""
        headers = getattr(event, "headers", {}) or {}
        try:
            version = int(headers.get(SEQ_HEADER, 0))
        except (TypeError, ValueError):
            version = 0
        state = IdeaState.of_event(event, version)
        if state is None:
            return
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self.waiting.append((state, loop.time(), done))
        if len(self.waiting) == 1 or len(self.waiting) >= BATCH:
            self.kick.set()  # the first of a batch starts its wait, a full batch ends it
        await done

    async def embed(self, texts: list[str], since: float | None = None) -> np.ndarray:
        """The texts' vectors, PIECE texts a model call: from the idle-class model thread; for
        a batch whose first event came at `since` (the loop's time), once that event has
        waited LATE_S, the pieces not yet started go to the late thread alone, and the piece
        the idle thread is running goes to the late thread as well (the first answer counts).
        So a late batch is embedded once, but for at most one piece: racing whole batches
        doubled the model's work whenever the embedder was behind, which kept it behind."""
        loop = asyncio.get_running_loop()
        if self.late_thread is None or since is None:
            return await loop.run_in_executor(self.model_thread, self.embedder.embed, texts)
        out = []
        for start in range(0, len(texts), PIECE):
            piece = texts[start : start + PIECE]
            if loop.time() < since + LATE_S:
                out.append(await self._piece(piece, since))
            else:
                LATE_PIECES.inc()
                out.append(await loop.run_in_executor(self.late_thread, self.embedder.embed, piece))
        return np.concatenate(out) if out else np.zeros((0, self.embedder.dim), np.float32)

    async def _piece(self, texts: list[str], since: float) -> np.ndarray:
        """A piece's vectors from the idle-class model thread; from the late thread as well
        once the batch's first event has waited LATE_S, or at once while the idle thread
        still runs a piece it was too late for: the first answer counts, the other is dropped
        (or never starts)."""
        loop = asyncio.get_running_loop()
        assert self.late_thread is not None
        busy = self.idle_running is not None and not self.idle_running.done()
        idle = None if busy else loop.run_in_executor(self.model_thread, self.embedder.embed, texts)
        if idle is not None:
            self.idle_running = idle
            left = since + LATE_S - loop.time()
            done, _ = await asyncio.wait([idle], timeout=max(left, 0.0))
            if done:
                return idle.result()
        LATE.inc()
        late = loop.run_in_executor(self.late_thread, self.embedder.embed, texts)
        racing = [f for f in (idle, late) if f is not None]
        done, _ = await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        first = done.pop()
        return first.result()

    async def run(self) -> None:
        """A batch goes when it is full or its first event has waited GATHER_S."""
        loop = asyncio.get_running_loop()
        while True:
            raise_if_cancelled()  # a cancellation an aiopg query swallowed
            self.kick.clear()
            if not self.waiting:
                await self.kick.wait()
                continue
            left = self.waiting[0][1] + GATHER_S - loop.time()
            if left > 0 and len(self.waiting) < BATCH:
                try:  # not wait_for: it can swallow a cancellation on 3.11
                    async with asyncio.timeout(left):
                        await self.kick.wait()
                except TimeoutError:
                    pass
                continue
            batch, self.waiting = self.waiting[:BATCH], self.waiting[BATCH:]
            await self.write(batch)

    async def write(self, batch: list[Waiting]) -> None:
        started = time.perf_counter()
        states = [state for state, *_ in batch]
        try:
            copied = await apply_ideas(self.pool, states)
            embed = functools.partial(self.embed, since=batch[0][1])
            written = await upsert_embeddings(
                self.pool,
                embed,
                [s.key for s in states],
                self.embedder.model_id,
                self.embedder.join,
            )
        except asyncio.CancelledError:
            raise
        except Exception as err:  # each event is nacked and comes back
            for *_, done in batch:
                if not done.done():
                    done.set_exception(err)
            return
        for *_, done in batch:
            if not done.done():
                done.set_result(None)
        log.info(
            "embeddings_written",
            events=len(batch),
            copied=copied,
            written=written,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )


async def catch_up_once(pool: Any, batches: Batches) -> None:
    """At start, the ideas whose row is missing or of another model (`store.catch_up`)."""
    try:
        done = await catch_up(pool, batches.embed, batches.embedder.model_id, batches.embedder.join)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # the next start tries again; events keep flowing meanwhile
        log.warning("embeddings_catch_up_failed", error=repr(err))
        return
    if done is not None:
        log.info("embeddings_catch_up_done", ideas=done)


async def probes(settings: SimilarSettings, pool: Any, broker: Broker) -> web.AppRunner:
    """A process of its own: `/healthz`, `/readyz` (PostgreSQL answers, the broker is
    connected) and `/metrics` on `EMBEDDER_PORT`, the internal endpoints every process has,
    on a listener with every listener's limits."""
    app = create_app(settings, PROCESS)
    app[PG_POOL], app[BROKER] = pool, broker
    listener = runner(app, settings)
    await listener.setup()
    await web.TCPSite(listener, settings.service_host, settings.embedder_port).start()
    log.info("serving", process=PROCESS, port=settings.embedder_port)
    return listener


async def serve(settings: SimilarSettings, late_thread: ThreadPoolExecutor | None = None) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    embedder = make_embedder(settings.similar_model)
    pool = await db.create_pool(
        settings.database_url,
        minsize=1,
        maxsize=3,  # the batches' reads and writes, and the catch-up's scan
        timeouts=settings.db_timeouts(),
        application_name=f"ims-{PROCESS}",
    )
    broker = Broker(settings.amqp_url, settings.amqp_prefix, f"ims-{PROCESS}", QUEUES)
    batches = Batches(pool, embedder, late_thread)
    tasks = [asyncio.create_task(batches.run())]
    consumer, listener = None, None
    try:
        listener = await probes(settings, pool, broker)  # they answer while the model loads
        await loop.run_in_executor(None, embedder.load)
        delay = 0.5
        while not stop.is_set():
            try:
                await broker.connect()
                break
            except Exception as err:
                log.warning("broker_connect_failed", error=repr(err), retry_in=delay)
                await asyncio.wait([asyncio.create_task(stop.wait())], timeout=delay)
                delay = min(delay * 2, 10.0)
        if not stop.is_set():
            consumer = Consumer(
                pool, broker, "similar", "similar", Idempotent(batches.apply), PREFETCH
            )
            await consumer.start()
            tasks.append(asyncio.create_task(catch_up_once(pool, batches)))
            # As every process does once it serves: what it allocated to start (the model's
            # tables among it) out of the cyclic collector's scans, and its loop's lag watched
            # (docs/performance.md).
            frozen = freeze_startup_objects()
            tasks.append(asyncio.create_task(watch_loop(settings.loop_blocked_log_ms / 1000)))
            log.info(
                "embedder_started",
                nice=os.getpriority(os.PRIO_PROCESS, 0),
                cpu=settings.similar_embed_cpu,
                gc_frozen=frozen,
            )
        await stop.wait()
    finally:
        if consumer is not None:
            await consumer.stop()  # unacked events return to the queue
        if listener is not None:
            await listener.cleanup()
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=2.0)
        batches.model_thread.shutdown(wait=False, cancel_futures=True)
        if late_thread is not None:
            late_thread.shutdown(wait=False, cancel_futures=True)
        await broker.close()
        pool.close()
        await pool.wait_closed()
        log.info("embedder_stopped")


def main() -> None:
    settings = load_or_exit(PROCESS, SimilarSettings)
    configure_logging(settings.log_format, settings.log_level, PROCESS)
    # Started before the process lowers its priority and keeps to one CPU, which Linux sets
    # thread by thread: this thread keeps the ones the process was started with.
    late_thread = ThreadPoolExecutor(1, "model-late")
    late_thread.submit(int).result()
    place_model_process(settings.similar_embed_nice, settings.similar_embed_cpu)
    asyncio.run(serve(settings, late_thread))


if __name__ == "__main__":
    main()
