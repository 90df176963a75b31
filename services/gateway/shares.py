"""Fair shares of the upstream slots (docs/gateway.md#fair-shares).

Each service address has `slots` slots (the lean pool's connections to it, `UPSTREAM_SLOTS`);
a request holds one from before it is sent until its answer is relayed. A workspace holds at
most `share` of them at once; beyond it, or when every slot is taken, the request waits in its
workspace's own queue. A slot that comes free goes to the waiting workspaces in turn (round
robin across the workspaces below their share, first come first inside one), never to
whichever request came first overall: a workspace that queues hundreds of requests waits
behind its own, not in front of everyone else's.

Every wait is bounded by `wait_s`. A request that waited its bound is refused: `share` when
its workspace still held its whole share (its own requests are in the way: 429), `saturated`
when it did not (the service's slots are all taken by everyone: 503).

The fast path (a free slot, the workspace below its share) is a few dictionary operations and
no await on anything: no future, no timer.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque

from prometheus_client import Counter, Histogram

WAITED = Histogram(
    "ims_gateway_fair_share_wait_seconds",
    "How long requests waited for an upstream slot, by service and outcome (admitted: it got"
    " one; share: refused 429, its workspace's share was full; saturated: refused 503, every"
    " slot was taken; cancelled: the client left). Requests that found a slot at once are not"
    " observed",
    ["service", "outcome"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0),
)
REFUSED = Counter(
    "ims_gateway_fair_share_refusals_total",
    "Requests refused after waiting their bound for an upstream slot, by service and reason"
    " (share: 429; saturated: 503)",
    ["service", "reason"],
)


def share_of(slots: int, fraction: float, floor: int) -> int:
    """A workspace's share: `fraction` of the slots rounded up, at least `floor`, at most all."""
    return min(slots, max(floor, math.ceil(slots * fraction)))


class Refused(Exception):
    """The wait for a slot reached its bound; `reason` is `share` or `saturated`."""

    def __init__(self, reason: str, retry_after: int) -> None:
        super().__init__(reason)
        self.reason, self.retry_after = reason, retry_after


class _Address:
    """One service address: slots taken, each workspace's, and the waiting workspaces."""

    __slots__ = ("busy", "held", "queues", "ring")

    def __init__(self) -> None:
        self.busy = 0
        self.held: dict[str, int] = {}
        # A workspace's waiting requests, first come first (a dict keeps insertion order and
        # forgets one in O(1)); `ring` holds the workspaces that have some, in turn order.
        self.queues: dict[str, dict[asyncio.Future[None], None]] = {}
        self.ring: deque[str] = deque()


class FairShares:
    """Per-workspace shares of each service address's slots, with bounded waits.

    `acquire` returns once the caller holds a slot (or raises `Refused`); the caller must
    `release` it exactly once. A request cancelled while it waits holds nothing; one cancelled
    just as a slot was handed to it passes the slot on.

    Invariant, after every operation: no waiting workspace is below its share while a slot is
    free (a free slot is handed on at once). So a request that finds a free slot and its
    workspace below its share may take it: nobody eligible is waiting for it.
    """

    def __init__(self, slots: int, share: int, wait_s: float) -> None:
        self.slots, self.share, self.wait_s = slots, share, wait_s
        self.retry_after = max(1, math.ceil(wait_s))
        self._addresses: dict[str, _Address] = {}

    async def acquire(self, address: str, workspace: str, service: str = "") -> None:
        a = self._addresses.get(address)
        if a is None:
            a = self._addresses[address] = _Address()
        held = a.held.get(workspace, 0)
        if a.busy < self.slots and held < self.share:
            a.busy += 1
            a.held[workspace] = held + 1
            return
        await self._wait(a, workspace, service)

    async def _wait(self, a: _Address, workspace: str, service: str) -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        queue = a.queues.get(workspace)
        if queue is None:
            queue = a.queues[workspace] = {}
            a.ring.append(workspace)
        queue[fut] = None
        started = loop.time()
        timer = loop.call_later(self.wait_s, self._expire, a, workspace, fut)
        try:
            await fut
        except Refused as refused:
            WAITED.labels(service, refused.reason).observe(loop.time() - started)
            REFUSED.labels(service, refused.reason).inc()
            raise
        except BaseException:  # cancelled (the client left, or the server stops)
            timer.cancel()
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self._release(a, workspace)  # handed a slot in the same moment: pass it on
            else:
                fut.cancel()
                self._forget(a, workspace, fut)
            WAITED.labels(service, "cancelled").observe(loop.time() - started)
            raise
        timer.cancel()
        WAITED.labels(service, "admitted").observe(loop.time() - started)

    def _expire(self, a: _Address, workspace: str, fut: asyncio.Future[None]) -> None:
        if fut.done():
            return
        self._forget(a, workspace, fut)
        reason = "share" if a.held.get(workspace, 0) >= self.share else "saturated"
        fut.set_exception(Refused(reason, self.retry_after))

    def _forget(self, a: _Address, workspace: str, fut: asyncio.Future[None]) -> None:
        queue = a.queues.get(workspace)
        if queue is None or fut not in queue:
            return  # already gone
        del queue[fut]
        if not queue:
            del a.queues[workspace]
            a.ring.remove(workspace)

    def release(self, address: str, workspace: str) -> None:
        self._release(self._addresses[address], workspace)

    def _release(self, a: _Address, workspace: str) -> None:
        a.busy -= 1
        left = a.held[workspace] - 1
        if left:
            a.held[workspace] = left
        else:
            del a.held[workspace]
        if a.ring:
            self._hand_on(a)

    def _hand_on(self, a: _Address) -> None:
        """Give free slots to the waiting workspaces in turn, each below its share."""
        ring = a.ring
        while a.busy < self.slots and ring:
            for _ in range(len(ring)):
                workspace = ring[0]
                ring.rotate(-1)  # served or skipped, it goes to the back of the ring
                if a.held.get(workspace, 0) < self.share:
                    break
            else:
                return  # every waiting workspace holds its share
            queue = a.queues[workspace]
            fut = next(iter(queue))
            del queue[fut]
            if not queue:
                del a.queues[workspace]
                ring.pop()  # the one just rotated to the back
            if fut.done():  # cancelled, not yet forgotten by its task
                continue
            a.busy += 1
            a.held[workspace] = a.held.get(workspace, 0) + 1
            fut.set_result(None)

    def held(self, address: str, workspace: str) -> int:
        a = self._addresses.get(address)
        return a.held.get(workspace, 0) if a is not None else 0

    def busy(self, address: str) -> int:
        a = self._addresses.get(address)
        return a.busy if a is not None else 0

    def waiting(self, address: str, workspace: str | None = None) -> int:
        a = self._addresses.get(address)
        if a is None:
            return 0
        if workspace is not None:
            return len(a.queues.get(workspace, ()))
        return sum(len(q) for q in a.queues.values())
