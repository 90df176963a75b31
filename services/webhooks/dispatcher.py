"""The dispatcher: claims due deliveries, runs their attempts, records the outcomes.

Safe in any number of replicas (see `store`). First attempts mostly arrive from the consumer
already leased (`fanout`); the rest, retries and expired leases are claimed: NOTIFY wakes the
claim loop, a short poll is the fallback. Concurrency is bounded overall
(`webhook_concurrency`), per workspace (`webhook_per_workspace_concurrency`) and per target
host (`webhook_per_host_concurrency`): a host or workspace with no free share is left out of
the claim, and the claim takes workspaces in turn, so a receiver that hangs holds only its own
share, and one workspace's hanging receivers only that workspace's, while every other host and
workspace keeps going. Test pings hold slots in the same three bounds while they wait on
their receivers, and are refused at once (`PingRefused`, a 429) when one has none free.
Outcomes are written in batches by one writer, one statement per
batch. Retries wait as the schedule says plus a little jitter, or as long as a 429/503's
`Retry-After` asks when that is later (at most `RETRY_AFTER_CAP_S`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

import aiopg
import structlog
from prometheus_client import Counter, Histogram

from libs.common import db
from libs.common.tasks import raise_if_cancelled

from . import store
from .hosts import Hosts
from .sender import Answer, Sender
from .settings import WebhooksSettings
from .store import LEASE_MARGIN_S, Claimed, Outcome
from .subscriptions import CHANGED_CHANNEL

log = structlog.get_logger("dispatcher")

POLL_S = 0.25
GATHER_S = 0.002  # after a slot frees, wait this long for others before claiming
FLUSH_GATHER_S = 0.02  # outcomes wait this long for others: one statement for all
CLAIM_BATCH = 100
FLUSH_BATCH = 500
JITTER = 0.1  # a retry waits up to this fraction longer than the schedule says
RETRY_AFTER_CAP_S = 3600.0

ATTEMPTS = Counter("ims_webhook_attempts_total", "Webhook delivery attempts", ["outcome"])
ATTEMPT_SECONDS = Histogram(
    "ims_webhook_attempt_duration_seconds",
    "Webhook attempt duration",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

PINGS_REFUSED = Counter(
    "ims_webhook_pings_refused_total",
    "Test pings answered 429: no free slot in the share named",
    ["share"],
)


class PingRefused(Exception):
    """No free slot for a test ping: `share` is "workspace", "host" or "service"."""

    def __init__(self, share: str) -> None:
        super().__init__(share)
        self.share = share


def retry_delay(
    planned_s: float, asked_s: float | None, rand: Callable[[], float] = random.random
) -> float:
    """Seconds before the next attempt: the schedule's wait plus up to JITTER of it, so that
    deliveries that failed together are not retried in lockstep; or what a Retry-After asked,
    when later than that (at most RETRY_AFTER_CAP_S, so a receiver cannot park a delivery)."""
    if asked_s is not None and asked_s > planned_s:
        return min(asked_s, RETRY_AFTER_CAP_S)
    return planned_s + planned_s * JITTER * rand()


class Dispatcher:
    def __init__(
        self,
        pool: aiopg.Pool,
        settings: WebhooksSettings,
        sender: Sender,
        on_subscriptions_changed: Callable[[str | None], None] = lambda _: None,
    ) -> None:
        self.pool, self.settings, self.sender = pool, settings, sender
        self.on_subscriptions_changed = on_subscriptions_changed
        self.schedule = settings.webhook_retry_schedule
        self.lease_s = settings.webhook_timeout_s + LEASE_MARGIN_S
        self.hosts = Hosts(
            settings.webhook_per_host_concurrency,
            self.lease_s,
            settings.webhook_timeout_s,
            settings.webhook_per_workspace_concurrency,
        )
        self.running: dict[asyncio.Task[None], Claimed] = {}
        self.reserved = 0  # handed over by the consumer, not started yet
        self.pinging = 0  # test pings under way (docs/webhooks.md, test pings and the shares)
        self.closing = False
        self.more_due = True  # due rows may be waiting, for any host
        self.short_hosts: set[str] = set()  # hosts whose due rows may wait for a slot here
        self.short_workspaces: set[str] = set()  # likewise, workspaces
        self.outcomes: list[Outcome] = []
        # monotonic time of the last change heard per workspace ("" for all): an attempt
        # claimed before it re-reads its subscription, so a rotation or an edit applies to it
        self.changed_at: dict[str, float] = {}
        self.wake = asyncio.Event()
        self.slot_freed = False
        self.flush_wake = asyncio.Event()

    # ---- first attempts handed over by the consumer ------------------------------------------

    def reserve(self, host: str, workspace: str) -> bool:
        """Take a slot for an attempt the consumer is about to write leased."""
        s = self.settings
        if (
            self.closing
            or self.busy() >= s.webhook_concurrency
            or not self.hosts.has_slot(host)
            or self.hosts.workspace_full(workspace)
        ):
            return False
        self.hosts.take(host)
        self.hosts.hold(workspace)
        self.reserved += 1
        return True

    def busy(self) -> int:
        """Attempts and pings running or about to, of all workspaces."""
        return len(self.running) + self.reserved + self.pinging

    def unreserve(self, job: Claimed) -> None:
        self.reserved -= 1
        self.hosts.give_back(job.target_host)
        self.hosts.let_go(job.workspace_id)

    def start(self, job: Claimed) -> None:
        """Run a reserved attempt (its row is committed under `job.lease`)."""
        self.reserved -= 1
        task = asyncio.create_task(self._attempt(job))
        self.running[task] = job

    def worth_a_notify(self, host: str) -> bool:
        """Whether an unleased row for `host` should wake the dispatchers: not when the host
        has no free slot here and answers slowly (hanging), as other replicas would only find
        it busy too; this replica claims it when one of the host's slots frees."""
        if self.closing or self.hosts.has_slot(host) or self.hosts.fast(host):
            return True
        self.short_hosts.add(host)
        return False

    def _run(self, job: Claimed) -> None:
        self.hosts.take(job.target_host)
        task = asyncio.create_task(self._attempt(job))
        self.running[task] = job

    # ---- test pings ----------------------------------------------------------------------

    async def ping(self, job: Claimed) -> Answer:
        """Send a test ping within the shares of deliveries: it holds a slot overall, one of
        its host's and one of its workspace's while it waits on the receiver, as an attempt
        does. PingRefused, at once, when one of them has none free."""
        refusal = self._ping_refusal(job.target_host, job.workspace_id)
        if refusal is not None:
            PINGS_REFUSED.labels(refusal).inc()
            raise PingRefused(refusal)
        self.pinging += 1
        self.hosts.take(job.target_host)
        self.hosts.hold(job.workspace_id)
        try:
            return await self.sender.send(job)
        finally:
            self.pinging -= 1
            self._slot_freed(job.target_host, job.workspace_id)

    def _ping_refusal(self, host: str, workspace: str) -> str | None:
        if self.hosts.workspace_full(workspace):
            return "workspace"
        if not self.hosts.has_slot(host):
            return "host"
        if self.busy() + self.hosts.n_waiting >= self.settings.webhook_concurrency:
            return "service"
        return None

    # ---- claiming ------------------------------------------------------------------------

    async def run(self) -> None:
        while not self.closing:
            try:
                await self._listen_and_claim()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                raise_if_cancelled(err)
                log.warning("dispatcher_error", error=repr(err))
                await asyncio.sleep(1.0)

    async def _listen_and_claim(self) -> None:
        async with db.listen_connection(self.settings.database_url) as conn:
            async with conn.cursor() as cur:
                await cur.execute(f"LISTEN {store.NOTIFY_CHANNEL}; LISTEN {CHANGED_CHANNEL}")
            self.subscriptions_changed(None)  # changes while not listening went unheard
            pump = asyncio.create_task(self._pump(conn))
            try:
                while not self.closing:
                    if await self.claim_once() >= CLAIM_BATCH:
                        continue  # more may be due at once
                    try:  # not wait_for: it can swallow a cancellation on 3.11
                        async with asyncio.timeout(POLL_S):
                            await self.wake.wait()
                    except TimeoutError:
                        self.more_due = True
                    self.wake.clear()
                    if self.slot_freed:  # let a few more finish: one claim for all of them
                        await asyncio.sleep(GATHER_S)
                    if pump.done():
                        raise ConnectionError("listen connection lost")
            finally:
                pump.cancel()
                await asyncio.wait({pump}, timeout=1.0)

    async def _pump(self, conn: aiopg.Connection) -> None:
        while True:
            note = await conn.notifies.get()
            if note.channel == CHANGED_CHANNEL:
                self.subscriptions_changed(note.payload)
            else:
                # Rows for a host with no free slot here wait for one of its slots to free;
                # claiming now would only find the host busy.
                if note.payload and not self.hosts.has_slot(note.payload):
                    self.short_hosts.add(note.payload)
                else:
                    self.more_due = True
                    self.wake.set()

    async def claim_once(self) -> int:
        n = min(
            CLAIM_BATCH,
            self.settings.webhook_concurrency - self.busy() - self.hosts.n_waiting,
        )
        if n <= 0 or self.closing or not (self.more_due or self.slot_freed):
            return 0
        self.slot_freed = False
        free = self.hosts.wanted()
        free_ws = self.hosts.workspaces_wanted()
        s = self.settings
        async with db.cursor(self.pool) as cur:  # one statement: its own transaction
            jobs = await store.claim(
                cur,
                n,
                free,
                s.webhook_per_host_concurrency,
                free_ws,
                s.webhook_per_workspace_concurrency,
                self.lease_s,
            )
        self.more_due = len(jobs) >= n
        self.short_hosts = self._cut_short(free, jobs)
        self.short_workspaces = {w for w, f in free_ws.items() if f <= 0}
        for job in jobs:
            self.hosts.hold(job.workspace_id)
            if self.hosts.workspace_full(job.workspace_id):
                self.short_workspaces.add(job.workspace_id)
            if self.hosts.has_slot(job.target_host):
                self._run(job)
            else:  # a fast host's next attempts: they start as its slots free
                self.hosts.park(job)
        return len(jobs)

    def _cut_short(self, free: dict[str, int], jobs: list[Claimed]) -> set[str]:
        """The hosts whose due rows may still wait: the claim took all their share."""
        taken: dict[str, int] = defaultdict(int)
        for job in jobs:
            taken[job.target_host] += 1
        share = self.settings.webhook_per_host_concurrency
        return {h for h, f in free.items() if f <= taken[h]} | {
            h for h, k in taken.items() if h not in free and k >= share
        }

    def subscriptions_changed(self, workspace_id: str | None) -> None:
        self.changed_at[workspace_id or ""] = time.monotonic()
        if len(self.changed_at) > 10_000:
            self.changed_at = {"": time.monotonic()}
        self.on_subscriptions_changed(workspace_id)

    async def _fresh(self, job: Claimed) -> Claimed | None:
        """The job with its subscription's URL and secrets as they are now, when they may
        have changed since it was claimed; None when the subscription is gone or paused."""
        changed = max(self.changed_at.get(job.workspace_id, 0.0), self.changed_at.get("", 0.0))
        if changed < job.claimed_at:
            return job
        async with db.cursor(self.pool) as cur:
            now = await store.current(cur, job.subscription_id)
        return None if now is None else replace(job, target_url=now[0], secrets=now[1])

    # ---- attempts ------------------------------------------------------------------------

    async def _attempt(self, job: Claimed) -> None:
        try:
            try:
                fresh = await self._fresh(job)
                if fresh is None:
                    return  # deleted or paused meanwhile: nothing to send, nothing to record
                answer = await self.sender.send(fresh)
            except Exception as err:  # send() answers whatever happens; this is the backstop
                raise_if_cancelled(err)
                log.warning("attempt_error", delivery_id=str(job.id), error=repr(err))
                now = time.time()
                answer = Answer(
                    ok=False,
                    status_code=None,
                    error=f"attempt failed: {type(err).__name__}",
                    duration_ms=0,
                    signed_at=int(now),
                    started_at=now,
                )
            self.hosts.observe(job.target_host, answer.duration_ms / 1000)
            self.outcomes.append(self._judge(job, answer))
            self.flush_wake.set()
            ATTEMPTS.labels("delivered" if answer.ok else "failed").inc()
            ATTEMPT_SECONDS.observe(answer.duration_ms / 1000)
            if not answer.ok:
                log.info(
                    "attempt_failed",
                    delivery_id=str(job.id),
                    attempt=job.attempt_count + 1,
                    status_code=answer.status_code,
                    error=answer.error,
                )
        finally:
            task = asyncio.current_task()
            if task is not None:  # always, inside a task; the check is for the type
                self.running.pop(task, None)
            self._slot_freed(job.target_host, job.workspace_id)

    def _slot_freed(self, host: str, workspace: str) -> None:
        """An attempt or a ping ended: its slots go to a waiting attempt of the host, or to
        the next claim when rows may wait for them."""
        self.hosts.give_back(host)
        self.hosts.let_go(workspace)
        after = None if self.closing else self.hosts.next_waiting(host)
        if after is not None:
            self._run(after)
        if self.more_due or host in self.short_hosts or workspace in self.short_workspaces:
            self.slot_freed = True  # a slot rows may wait for is free: claim more
            self.wake.set()

    def _judge(self, job: Claimed, answer: Answer) -> Outcome:
        attempt = job.attempt_count + 1 - job.schedule_base  # place in this round's schedule
        gone = answer.status_code == 410
        retry_in: float | None = None
        if answer.ok:
            status = "delivered"
        elif gone or attempt >= len(self.schedule):
            status = "failed"
        else:
            status, retry_in = "pending", self.retry_in(attempt, answer.retry_after_s)
        return Outcome(
            delivery_id=job.id,
            subscription_id=job.subscription_id,
            lease=job.lease,
            status=status,
            status_code=answer.status_code,
            error=answer.error,
            duration_ms=answer.duration_ms,
            signed_at=answer.signed_at,
            retry_in_s=retry_in,
            gone=gone,
            attempted_at=answer.started_at,
        )

    def retry_in(self, attempt: int, asked_s: float | None) -> float:
        return retry_delay(self.schedule[attempt], asked_s)

    # ---- recording -----------------------------------------------------------------------

    async def flush_forever(self) -> None:
        while not self.closing:
            await self.flush_wake.wait()
            await asyncio.sleep(FLUSH_GATHER_S)
            self.flush_wake.clear()
            while self.outcomes and not self.closing:  # shutdown() writes the rest
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
        if not any(o.status == "failed" for o in batch):  # the usual case: one statement
            async with db.cursor(self.pool) as cur:
                await store.record(cur, batch)
        else:  # a delivery ended failed: its subscription may be deactivated with it
            async with db.transaction(self.pool) as cur:
                written = await store.record(cur, batch)
                mine = [o for o in batch if o.delivery_id in written]
                gone = sorted({o.subscription_id for o in mine if o.gone})
                failed = sorted({o.subscription_id for o in mine if o.status == "failed"})
                if gone or failed:
                    off = await store.deactivate(
                        cur, gone, failed, self.settings.webhook_disable_after_s
                    )
                    if off:
                        log.info("subscriptions_deactivated", ids=[str(i) for i in off])
                        self.subscriptions_changed(None)
        del self.outcomes[: len(batch)]

    async def stop_tasks(self, tasks: list[asyncio.Task[None]]) -> None:
        """End the claim loop and the writer. Their loops also end on `closing`, because a
        cancellation can be lost inside an aiopg query (wait_for's race on Python 3.11)."""
        self.closing = True  # nothing more is reserved or claimed
        self.wake.set()
        self.flush_wake.set()
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=2.0)

    async def shutdown(self, grace_s: float) -> None:
        """Let running attempts finish for a moment, record them, hand back the rest."""
        self.closing = True
        deadline = asyncio.get_running_loop().time() + grace_s
        while self.reserved and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)  # reserved attempts start (or not) as their batch ends
        if self.running:
            await asyncio.wait(
                list(self.running), timeout=max(0.0, deadline - asyncio.get_running_loop().time())
            )
        unfinished = list(self.running.values()) + self.hosts.all_waiting()
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
