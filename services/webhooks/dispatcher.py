"""The dispatcher: claims due deliveries, runs their attempts, records the outcomes.

Safe in any number of replicas (see `store`). NOTIFY from the consumer wakes it, so a first
attempt starts at once; a short poll catches scheduled retries and expired leases. Concurrency
is bounded overall (`webhook_concurrency`) and per target host (`webhook_per_host_concurrency`):
a host with no free share is left out of the claim, so a receiver that hangs holds only its own
share while every other host keeps going. Outcomes are written in small batches by one writer.
"""

from __future__ import annotations

import asyncio

from collections import defaultdict

import aiopg
import structlog
from prometheus_client import Counter, Histogram

from libs.common import db
from libs.common.settings import Settings
from libs.common.tasks import raise_if_cancelled

from . import store
from .sender import Answer, Sender
from .store import Claimed, Outcome

log = structlog.get_logger("dispatcher")

POLL_S = 0.25
CLAIM_BATCH = 100
FLUSH_BATCH = 500
LEASE_MARGIN_S = 10.0

ATTEMPTS = Counter("ims_webhook_attempts_total", "Webhook delivery attempts", ["outcome"])
ATTEMPT_SECONDS = Histogram("ims_webhook_attempt_duration_seconds", "Webhook attempt duration",
                            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


class Dispatcher:
    def __init__(self, pool: aiopg.Pool, settings: Settings, sender: Sender) -> None:
        self.pool, self.settings, self.sender = pool, settings, sender
        self.schedule = settings.webhook_retry_schedule
        self.lease_s = settings.webhook_timeout_s + LEASE_MARGIN_S
        self.inflight: dict[str, int] = defaultdict(int)
        self.running: dict[asyncio.Task[None], Claimed] = {}
        self.outcomes: list[Outcome] = []
        self.wake = asyncio.Event()
        self.flush_wake = asyncio.Event()

    # ---- claiming ------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            try:
                await self._listen_and_claim()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                raise_if_cancelled(err)
                log.warning("dispatcher_error", error=repr(err))
                await asyncio.sleep(1.0)

    async def _listen_and_claim(self) -> None:
        async with aiopg.connect(self.settings.database_url, timeout=10) as conn:
            async with conn.cursor() as cur:
                await cur.execute(f"LISTEN {store.NOTIFY_CHANNEL}")
            pump = asyncio.create_task(self._pump(conn))
            try:
                while True:
                    if await self.claim_once() >= CLAIM_BATCH:
                        continue  # more may be due at once
                    try:
                        await asyncio.wait_for(self.wake.wait(), timeout=POLL_S)
                    except asyncio.TimeoutError:
                        pass
                    self.wake.clear()
                    if pump.done():
                        raise ConnectionError("listen connection lost")
            finally:
                pump.cancel()
                await asyncio.wait({pump}, timeout=1.0)

    async def _pump(self, conn: aiopg.Connection) -> None:
        while True:
            await conn.notifies.get()
            self.wake.set()

    def _free(self) -> dict[str, int]:
        per_host = self.settings.webhook_per_host_concurrency
        return {h: per_host - n for h, n in self.inflight.items() if n > 0}

    async def claim_once(self) -> int:
        n = min(CLAIM_BATCH, self.settings.webhook_concurrency - len(self.running))
        if n <= 0:
            return 0
        async with db.transaction(self.pool) as cur:
            jobs = await store.claim(cur, n, self._free(),
                                     self.settings.webhook_per_host_concurrency, self.lease_s)
        for job in jobs:
            self.inflight[job.target_host] += 1
            task = asyncio.create_task(self._attempt(job))
            self.running[task] = job
        return len(jobs)

    # ---- attempts ------------------------------------------------------------------------

    async def _attempt(self, job: Claimed) -> None:
        try:
            answer = await self.sender.send(job)
            self.outcomes.append(self._judge(job, answer))
            self.flush_wake.set()
            ATTEMPTS.labels("delivered" if answer.ok else "failed").inc()
            ATTEMPT_SECONDS.observe(answer.duration_ms / 1000)
            if not answer.ok:
                log.info("attempt_failed", delivery_id=str(job.id), attempt=job.attempt_count + 1,
                         status_code=answer.status_code, error=answer.error)
        finally:
            self.inflight[job.target_host] -= 1
            if self.inflight[job.target_host] <= 0:
                del self.inflight[job.target_host]
            self.running.pop(asyncio.current_task(), None)  # type: ignore[arg-type]
            self.wake.set()  # a slot is free: claim more

    def _judge(self, job: Claimed, answer: Answer) -> Outcome:
        attempt = job.attempt_count + 1
        gone = answer.status_code == 410
        retry_in: float | None = None
        if answer.ok:
            status = "delivered"
        elif gone or attempt >= len(self.schedule):
            status = "failed"
        else:
            status, retry_in = "pending", self.schedule[attempt]
        return Outcome(job.id, job.subscription_id, job.lease, status, answer.status_code,
                       answer.error, answer.duration_ms, answer.signed_at, retry_in, gone)

    # ---- recording -----------------------------------------------------------------------

    async def flush_forever(self) -> None:
        while True:
            await self.flush_wake.wait()
            self.flush_wake.clear()
            while self.outcomes:
                try:
                    await self.flush_once()
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # the batch stays and is written on the next try
                    raise_if_cancelled(err)
                    log.warning("record_failed", error=repr(err))
                    await asyncio.sleep(0.2)

    async def flush_once(self) -> None:
        batch = self.outcomes[:FLUSH_BATCH]
        async with db.transaction(self.pool) as cur:
            written = await store.record(cur, batch)
            mine = [o for o in batch if o.delivery_id in written]
            if mine:
                await store.update_subscriptions(cur, mine)
                gone = sorted({o.subscription_id for o in mine if o.gone})
                failed = sorted({o.subscription_id for o in mine if o.status == "failed"})
                if gone or failed:
                    off = await store.deactivate(cur, gone, failed,
                                                 self.settings.webhook_disable_after_s)
                    if off:
                        log.info("subscriptions_deactivated", ids=[str(i) for i in off])
        del self.outcomes[:len(batch)]

    async def shutdown(self, grace_s: float) -> None:
        """Let running attempts finish for a moment, record them, hand back the rest."""
        if self.running:
            await asyncio.wait(list(self.running), timeout=grace_s)
        unfinished = list(self.running.values())
        for task in list(self.running):
            task.cancel()
        if self.running:
            await asyncio.wait(list(self.running), timeout=grace_s)
        try:
            while self.outcomes:
                await self.flush_once()
            if unfinished:
                async with db.transaction(self.pool) as cur:
                    await store.release(cur, list({j.lease for j in unfinished}))
        except Exception as err:  # leases expire on their own; nothing is lost
            log.warning("shutdown_record_failed", error=repr(err))


