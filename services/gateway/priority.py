"""Two priorities for forwarded requests (docs/gateway.md#priorities).

A route declared `low_priority` (the similar-ideas searches) is forwarded when this gateway
process forwards no other request and has started none for `QUIET_S`, or once it has waited
`LOW_PRIORITY_WAIT_MS`: the work it
sets off downstream (its service, PostgreSQL) then takes the CPU the other requests leave,
as its service's process does on its own (the search process runs in the idle scheduling
class). Exports do not count as others: they stream for minutes.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Histogram

# How long the gateway must have started no other request before a low-priority one goes: a
# moment free between two requests is no room for one more on a busy machine (on 2 cores,
# 1,200 reads a second through one gateway leave gaps of a millisecond or less, as many as
# there are reads), a gap of two milliseconds is.
QUIET_S = 0.002

WAITED = Histogram(
    "ims_gateway_low_priority_wait_seconds",
    "How long low-priority requests waited for the gateway to forward nothing else, by outcome"
    " (quiet: no wait or the others ended; capped: LOW_PRIORITY_WAIT_MS ran out)",
    ["outcome"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
)


class Priorities:
    """The count of normal-priority requests in flight, and the low-priority ones' turns."""

    def __init__(self, max_wait_s: float, quiet_s: float = QUIET_S) -> None:
        self.max_wait_s, self.quiet_s = max_wait_s, quiet_s
        self.in_flight = 0
        self.last_start = -math.inf  # when the last normal-priority request started
        self._idle = asyncio.Event()
        self._idle.set()

    @contextmanager
    def normal(self) -> Iterator[None]:
        """A normal-priority request in flight (its forwarding and relaying)."""
        self.in_flight += 1
        self.last_start = time.monotonic()
        self._idle.clear()
        try:
            yield
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self._idle.set()

    def quiet(self) -> bool:
        return not self.in_flight and time.monotonic() - self.last_start >= self.quiet_s

    async def low(self) -> None:
        """A low-priority request's turn: once nothing else is in flight and nothing else
        started for `quiet_s`, or after `max_wait_s`, whichever comes first."""
        if self.quiet():
            WAITED.labels("quiet").observe(0.0)
            return
        started = time.monotonic()
        outcome = "quiet"
        try:  # not wait_for: it can swallow a cancellation on 3.11
            async with asyncio.timeout(self.max_wait_s):
                while not self.quiet():
                    await self._idle.wait()
                    await asyncio.sleep(max(0.0, self.last_start + self.quiet_s - time.monotonic()))
        except TimeoutError:
            outcome = "capped"
        WAITED.labels(outcome).observe(time.monotonic() - started)
