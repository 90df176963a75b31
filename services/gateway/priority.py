"""Two priorities for forwarded requests (docs/gateway.md#priorities).

A route declared `low_priority` (the similar-ideas searches) is forwarded when this gateway
process forwards nothing else and is not loaded: no other request in flight (and fewer than
`LOW_PRIORITY_CONCURRENCY` low-priority ones), none started for `QUIET_S`, and fewer
than `BUSY_LOAD` in flight on average over about the last `LOAD_WINDOW_S`; or once it has
waited `LOW_PRIORITY_WAIT_MS`. The work it sets off
downstream (its service, PostgreSQL) then takes the CPU the other requests leave, as its
service's process does on its own (the search process runs in the idle scheduling class).
Exports do not count as others: they stream for minutes.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from prometheus_client import Histogram

# How long the gateway must have started no other request before a low-priority one goes: a
# moment free between two requests is no room for one more on a busy machine (on 2 cores,
# 1,200 reads a second through one gateway leave gaps of a millisecond or less, as many as
# there are reads), a gap of two milliseconds is.
QUIET_S = 0.002
# The load: the number of other requests in flight, averaged over time (an exponential
# average with this time constant). A gateway whose clients keep BUSY_LOAD or more requests
# in flight on average is at its capacity, or its services are: its rare quiet moments are
# then its clients' round trips, not room to spare, and a similar query that takes one
# takes the others' capacity (measured: docs/similar.md#benchmark). Below capacity, requests
# come and go and the load stays about rate x latency: 600 reads a second of 2 ms, 1.2.
LOAD_WINDOW_S = 0.1
BUSY_LOAD = 2.0
RECHECK_S = 0.005  # how often a waiting request looks again while the gateway is loaded

WAITED = Histogram(
    "ims_gateway_low_priority_wait_seconds",
    "How long low-priority requests waited for the gateway to forward nothing else, by outcome"
    " (quiet: no wait or the others ended; capped: LOW_PRIORITY_WAIT_MS ran out)",
    ["outcome"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
)


class Priorities:
    """The normal-priority requests in flight (now and on average), and the low-priority
    ones' turns."""

    def __init__(
        self,
        max_wait_s: float,
        low_limit: int,
        quiet_s: float = QUIET_S,
        busy_load: float = BUSY_LOAD,
    ) -> None:
        self.max_wait_s, self.quiet_s, self.busy_load = max_wait_s, quiet_s, busy_load
        self.low_limit = low_limit
        self.in_flight = 0
        self.low_in_flight = 0
        self.last_start = -math.inf  # when the last normal-priority request started
        self._average, self._since = 0.0, time.monotonic()
        self._idle = asyncio.Event()  # no normal-priority request in flight
        self._idle.set()
        self._low_room = asyncio.Event()  # fewer than low_limit low-priority ones in flight
        self._low_room.set()

    def load(self) -> float:
        """The mean number of normal-priority requests in flight over about the last
        `LOAD_WINDOW_S` (the count is constant between two changes, so the average follows
        it exactly: x + (average - x) * e^(-dt / window))."""
        now = time.monotonic()
        decay = math.exp(-(now - self._since) / LOAD_WINDOW_S)
        self._average = self.in_flight + (self._average - self.in_flight) * decay
        self._since = now
        return self._average

    @contextmanager
    def normal(self) -> Iterator[None]:
        """A normal-priority request in flight (its forwarding and relaying)."""
        self.load()  # the average up to now, at the count before this request
        self.in_flight += 1
        self.last_start = time.monotonic()
        self._idle.clear()
        try:
            yield
        finally:
            self.load()
            self.in_flight -= 1
            if not self.in_flight:
                self._idle.set()

    def quiet(self) -> bool:
        return (
            not self.in_flight
            and self.low_in_flight < self.low_limit
            and time.monotonic() - self.last_start >= self.quiet_s
        )

    def free(self) -> bool:
        """Quiet, and not loaded."""
        return self.quiet() and self.load() < self.busy_load

    @asynccontextmanager
    async def low(self) -> AsyncIterator[None]:
        """A low-priority request in flight, once it has had its turn (`turn`)."""
        await self.turn()
        self.low_in_flight += 1
        if self.low_in_flight >= self.low_limit:
            self._low_room.clear()
        try:
            yield
        finally:
            self.low_in_flight -= 1
            if self.low_in_flight < self.low_limit:
                self._low_room.set()

    async def turn(self) -> None:
        """A low-priority request's turn: once the gateway is free (`free`), or after
        `max_wait_s`, whichever comes first. Free includes fewer than `low_limit` low-priority
        requests in flight: when the gateway falls quiet, the requests that waited go that many
        at a time, not all at once, so that their work downstream does not land on the others'
        as a burst, while searches sent together share their model's call downstream. The
        check and the count that follows it (`low`) run in one step of the event loop."""
        if self.free():
            WAITED.labels("quiet").observe(0.0)
            return
        started = time.monotonic()
        outcome = "quiet"
        try:  # not wait_for: it can swallow a cancellation on 3.11
            async with asyncio.timeout(self.max_wait_s):
                while True:
                    if self.in_flight:
                        await self._idle.wait()
                    elif self.low_in_flight >= self.low_limit:
                        await self._low_room.wait()
                    elif (delay := self.last_start + self.quiet_s - time.monotonic()) > 0:
                        await asyncio.sleep(delay)
                    elif self.load() < self.busy_load:
                        break  # nothing in flight, quiet and not loaded
                    else:
                        await asyncio.sleep(RECHECK_S)
        except TimeoutError:
            outcome = "capped"
        WAITED.labels(outcome).observe(time.monotonic() - started)
