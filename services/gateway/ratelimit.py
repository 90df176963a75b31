"""Fixed-window rate limits counted in PostgreSQL, so every gateway replica sees one number.

An atomic upsert (`count = count + n ... RETURNING count`) gives every request its own ordinal
in the window, so the count is exact under any concurrency: the (N+1)th request of a window is
refused, whichever replica gets it. The table is unlogged (migration 0002): no disk flush while
the hot row is locked.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from datetime import datetime, timezone

import aiopg
import structlog

from libs.common import db
from libs.common.tasks import raise_if_cancelled

log = structlog.get_logger("ratelimit")


@dataclass(frozen=True)
class Verdict:
    limit: int
    remaining: int
    reset: int          # seconds until the window ends
    allowed: bool

    def headers(self) -> dict[str, str]:
        h = {"RateLimit-Limit": str(self.limit), "RateLimit-Remaining": str(self.remaining),
             "RateLimit-Reset": str(self.reset)}
        if not self.allowed:
            h["Retry-After"] = str(self.reset)
        return h


_PREPARE = """
    PREPARE ims_rate_hit (text, timestamptz, integer) AS
    INSERT INTO gateway.rate_counters (bucket, window_start, count) VALUES ($1, $2, $3)
    ON CONFLICT (bucket, window_start)
    DO UPDATE SET count = gateway.rate_counters.count + EXCLUDED.count
    RETURNING count"""


class SharedCounter:
    """Per-window counters in PostgreSQL, with concurrent hits on one bucket coalesced.

    Hits on a bucket that arrive together (in one turn of the event loop, or while
    `IN_FLIGHT` statements on that bucket are already out) are added in one statement
    (`count = count + n RETURNING count`), and each gets its own number `count - n + 1 ..
    count`. Every hit still gets a distinct ordinal from the database's atomic counter, so the
    (limit+1)th hit of a window is refused whichever replica took it: exactly as exact as one
    statement per hit, with far fewer round trips. A few statements per bucket may be out at
    once, so one slow round trip does not hold up every request behind it.
    """

    IN_FLIGHT = 4

    def __init__(self, pool: aiopg.Pool) -> None:
        self.pool = pool
        self._pending: dict[tuple[str, float], list[asyncio.Future[int]]] = {}
        self._in_flight: dict[tuple[str, float], int] = {}
        self._scheduled: set[tuple[str, float]] = set()
        self._tasks: set[asyncio.Task[None]] = set()  # held, so no flush is collected midway
        # Buckets whose window is known to be used up (window start, limit): a client
        # hammering past its limit costs the database nothing more until the window ends.
        self._full: dict[str, tuple[float, int]] = {}

    async def add(self, bucket: str, window_start: float) -> int:
        """Count one hit; return its ordinal in the window (1 for the first)."""
        key = (bucket, window_start)
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(key, []).append(fut)
        self._schedule(key)
        return await fut

    def _schedule(self, key: tuple[str, float]) -> None:
        if key in self._scheduled or self._in_flight.get(key, 0) >= self.IN_FLIGHT:
            return  # a flush will take this hit along
        self._scheduled.add(key)
        task = asyncio.get_running_loop().create_task(self._flush(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _flush(self, key: tuple[str, float]) -> None:
        # Runs a turn after it was scheduled: every hit of that turn goes in this batch.
        self._scheduled.discard(key)
        batch = self._pending.pop(key, None)
        if not batch:
            return
        self._in_flight[key] = self._in_flight.get(key, 0) + 1
        try:
            total = await self._upsert(key, len(batch))
        except Exception as err:  # each waiter hears of it (and answers 500)
            for f in batch:
                if not f.done():
                    f.set_exception(err)
        else:
            first = total - len(batch) + 1
            for i, f in enumerate(batch):
                if not f.done():  # a waiter whose client left is still counted
                    f.set_result(first + i)
        finally:
            left = self._in_flight[key] - 1
            if left:
                self._in_flight[key] = left
            else:
                del self._in_flight[key]
            if self._pending.get(key):
                self._schedule(key)

    async def _upsert(self, key: tuple[str, float], n: int) -> int:
        bucket, start = key
        async with self.pool.acquire() as conn:
            async with conn.cursor() as cur:
                # Prepared once per pooled connection: the statement runs on every request,
                # and parsing and planning it each time cost PostgreSQL more than running it.
                if not getattr(conn, "_ims_rate_prepared", False):
                    await cur.execute(_PREPARE)
                    conn._ims_rate_prepared = True  # type: ignore[attr-defined]  # our mark
                await cur.execute("EXECUTE ims_rate_hit (%s, %s, %s)",
                                  (bucket, datetime.fromtimestamp(start, timezone.utc), n))
                row = await cur.fetchone()
        return int(row[0])

    def known_full(self, bucket: str, limit: int, window_s: int) -> Verdict | None:
        """The refusal, when this replica already knows `bucket`'s window is used up; else None.
        Counts nothing and costs no round trip."""
        start = math.floor(time.time() / window_s) * window_s
        if self._full.get(bucket) != (start, limit):
            return None
        reset = max(1, math.ceil(start + window_s - time.time()))
        return Verdict(limit=limit, remaining=0, reset=reset, allowed=False)

    async def hit(self, bucket: str, limit: int, window_s: int) -> Verdict:
        """Count one request in `bucket`'s current window and judge it."""
        now = time.time()
        start = math.floor(now / window_s) * window_s
        if self._full.get(bucket) == (start, limit):
            count = limit + 1  # refused without a round trip: the count only grows
        else:
            count = await self.add(bucket, start)
            if count >= limit:
                if len(self._full) > 100_000:
                    self._full.clear()
                self._full[bucket] = (start, limit)
        reset = max(1, math.ceil(start + window_s - time.time()))
        return Verdict(limit=limit, remaining=max(0, limit - count), reset=reset,
                       allowed=count <= limit)


async def sweep_forever(pool: aiopg.Pool, every_s: float = 300.0) -> None:
    """Old windows and expired idempotency records are of no use: delete them now and then."""
    while True:
        await asyncio.sleep(every_s)
        try:
            async with db.cursor(pool) as cur:
                await cur.execute("DELETE FROM gateway.rate_counters"
                                  " WHERE window_start < now() - interval '2 hours'")
                await cur.execute("DELETE FROM gateway.idempotency_keys"
                                  " WHERE created_at < now() - interval '24 hours'")
        except Exception as err:  # the next sweep tries again
            raise_if_cancelled(err)
            log.warning("sweep_failed", error=repr(err))
