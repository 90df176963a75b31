"""Fixed-window rate limits counted in PostgreSQL, so every gateway replica sees one number.

An atomic upsert (`count = count + n ... RETURNING count`) gives every request its own ordinal
in the window, so the count is exact under any concurrency: the (N+1)th request of a window is
refused, whichever replica gets it. The table is unlogged (migration 0002): no disk flush while
the hot row is locked. Far from its limit, a replica reserves ordinals in blocks and hands them
out without a round trip (`SharedCounter`): never more admitted than the limit, at most a
bounded few refused early.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import aiopg
import structlog

from libs.common import db
from libs.common.tasks import raise_if_cancelled

log = structlog.get_logger("ratelimit")


@dataclass(frozen=True)
class Verdict:
    limit: int
    remaining: int
    reset: int  # seconds until the window ends
    allowed: bool

    def headers(self) -> dict[str, str]:
        h = {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
        }
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
    """Per-window counters in PostgreSQL, with concurrent hits on one bucket coalesced and, on
    a bucket far from its limit, ordinals reserved in blocks.

    Hits on a bucket that arrive together (in one turn of the event loop, or while
    `IN_FLIGHT` statements on that bucket are already out) are added in one statement
    (`count = count + n RETURNING count`), and each gets its own number `count - n + 1 ..
    count`. A few statements per bucket may be out at once, so one slow round trip does not
    hold up every request behind it.

    Blocks: when the window's count is far below the limit, a statement reserves more ordinals
    than it has waiters (`count + b`), and this replica hands the rest out locally, with no
    round trip, to the hits that follow. The block starts at what is waiting, doubles with each
    statement in a window, and is never more than `BLOCK_MAX` nor more than 1/`BLOCK_SHARE` of
    what the last statement saw left of the limit: near the limit every hit is counted in the
    database again, and a limit under `BLOCK_SHARE` * 2 is always counted hit by hit. Every
    ordinal is still handed out once across replicas, so no window ever admits more than its
    limit; what a replica reserved and did not use before the window ended is lost, so a window
    may refuse at most min(`BLOCK_MAX`, 1/`BLOCK_SHARE` of the limit) hits per replica early
    (docs/gateway.md).
    """

    IN_FLIGHT = 4
    BLOCK_MAX = 256
    BLOCK_SHARE = 64

    def __init__(self, pool: aiopg.Pool) -> None:
        self.pool = pool
        self._pending: dict[tuple[str, float], list[asyncio.Future[int]]] = {}
        self._in_flight: dict[tuple[str, float], int] = {}
        self._scheduled: set[tuple[str, float]] = set()
        self._tasks: set[asyncio.Task[None]] = set()  # held, so no flush is collected midway
        # Buckets whose window is known to be used up (window start, limit): a client
        # hammering past its limit costs the database nothing more until the window ends.
        self._full: dict[str, tuple[float, int]] = {}
        # Reserved ordinals not handed out yet, by bucket: (window start, [[next, last], ...]).
        self._spare: dict[str, tuple[float, list[list[int]]]] = {}
        # The next block to reserve, by bucket: (window start, size).
        self._block: dict[str, tuple[float, int]] = {}
        self._limits: dict[str, int] = {}

    def _take_spare(self, bucket: str, window_start: float) -> int | None:
        spare = self._spare.get(bucket)
        if spare is None or spare[0] != window_start:
            return None
        ranges = spare[1]
        while ranges:
            span = ranges[0]
            if span[0] <= span[1]:
                n = span[0]
                span[0] += 1
                return n
            ranges.pop(0)
        return None

    async def add(self, bucket: str, window_start: float, limit: int | None = None) -> int:
        """Count one hit; return its ordinal in the window (1 for the first)."""
        n = self._take_spare(bucket, window_start)
        if n is not None:
            return n
        if limit is not None:
            self._limits[bucket] = limit
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

    def _block_size(self, key: tuple[str, float], waiting: int) -> int:
        bucket, start = key
        block = self._block.get(bucket)
        size = block[1] if block is not None and block[0] == start else 1
        return max(waiting, size)

    def _reserved(self, key: tuple[str, float], asked: int, total: int) -> None:
        """After a statement of `asked` ordinals ending at `total`: the next block's size."""
        bucket, start = key
        limit = self._limits.get(bucket, 0)
        cap = min(self.BLOCK_MAX, (limit - total) // self.BLOCK_SHARE)
        if len(self._block) > 100_000:
            self._block.clear()
            self._spare.clear()
        self._block[bucket] = (start, max(1, min(asked * 2, cap)))

    async def _flush(self, key: tuple[str, float]) -> None:
        # Runs a turn after it was scheduled: every hit of that turn goes in this batch.
        self._scheduled.discard(key)
        batch = self._pending.pop(key, None)
        if not batch:
            return
        self._in_flight[key] = self._in_flight.get(key, 0) + 1
        asked = self._block_size(key, len(batch))
        try:
            total = await self._upsert(key, asked)
        except Exception as err:  # each waiter hears of it (and answers 503 or 500)
            for f in batch:
                if not f.done():
                    f.set_exception(err)
        else:
            first = total - asked + 1
            for i, f in enumerate(batch):
                if not f.done():  # a waiter whose client left is still counted
                    f.set_result(first + i)
            self._reserved(key, asked, total)
            if asked > len(batch):
                bucket, start = key
                spare = self._spare.get(bucket)
                if spare is None or spare[0] != start:
                    spare = self._spare[bucket] = (start, [])
                spare[1].append([first + len(batch), total])
        finally:
            left = self._in_flight[key] - 1
            if left:
                self._in_flight[key] = left
            else:
                del self._in_flight[key]
            waiting = self._pending.get(key)
            while waiting:  # hits that came meanwhile take what was reserved first
                n = self._take_spare(*key)
                if n is None:
                    break
                f = waiting.pop(0)
                if not f.done():
                    f.set_result(n)
            if waiting:
                self._schedule(key)
            elif key in self._pending:
                del self._pending[key]

    async def _upsert(self, key: tuple[str, float], n: int) -> int:
        bucket, start = key
        async with self.pool.acquire() as conn:
            async with conn.cursor() as cur:
                # Prepared once per pooled connection: the statement runs on every request,
                # and parsing and planning it each time cost PostgreSQL more than running it.
                if not getattr(conn, "_ims_rate_prepared", False):
                    await cur.execute(_PREPARE)
                    conn._ims_rate_prepared = True  # type: ignore[attr-defined]  # our mark
                await cur.execute(
                    "EXECUTE ims_rate_hit (%s, %s, %s)",
                    (bucket, datetime.fromtimestamp(start, UTC), n),
                )
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
            count = await self.add(bucket, start, limit)
            if count >= limit:
                if len(self._full) > 100_000:
                    self._full.clear()
                self._full[bucket] = (start, limit)
        reset = max(1, math.ceil(start + window_s - time.time()))
        return Verdict(
            limit=limit, remaining=max(0, limit - count), reset=reset, allowed=count <= limit
        )


_TAKE = """
    INSERT INTO gateway.rate_counters AS c (bucket, window_start, count) VALUES (%s, %s, 1)
    ON CONFLICT (bucket, window_start) DO UPDATE SET count = c.count + 1 WHERE c.count < %s
    RETURNING count"""
_GIVE_BACK = """
    UPDATE gateway.rate_counters SET count = count - 1
     WHERE bucket = %s AND window_start = %s AND count > 0"""


@dataclass(frozen=True)
class Taken:
    """A hit of a window that may be given back (`give_back`): its verdict and window."""

    verdict: Verdict
    bucket: str
    window_start: datetime


async def take(pool: aiopg.Pool, bucket: str, limit: int, window_s: int) -> Taken:
    """Count one hit in `bucket`'s current window if it has room, in one statement: the
    count is that of the hits admitted and not given back, exact across replicas. A refused
    hit is not counted (unlike `SharedCounter.hit`), so a hit given back makes room again for
    whichever replica asks next. For rare, costly hits (exports): no coalescing, no blocks, no
    memory of a full window."""
    now = time.time()
    start = datetime.fromtimestamp(math.floor(now / window_s) * window_s, UTC)
    async with db.cursor(pool) as cur:
        count = await db.fetchval(cur, _TAKE, (bucket, start, limit))
    reset = max(1, math.ceil(start.timestamp() + window_s - time.time()))
    allowed = count is not None
    remaining = limit - int(count) if allowed else 0
    return Taken(Verdict(limit, remaining, reset, allowed), bucket, start)


async def give_back(pool: aiopg.Pool, taken: Taken) -> None:
    """Uncount an admitted hit of `take` (in the window it was counted in)."""
    async with db.cursor(pool) as cur:
        await cur.execute(_GIVE_BACK, (taken.bucket, taken.window_start))


async def sweep_forever(pool: aiopg.Pool, every_s: float = 300.0) -> None:
    """Old windows and expired idempotency records are of no use: delete them now and then."""
    while True:
        await asyncio.sleep(every_s)
        try:
            async with db.cursor(pool) as cur:
                await cur.execute(
                    "DELETE FROM gateway.rate_counters"
                    " WHERE window_start < now() - interval '2 hours'"
                )
                await cur.execute(
                    "DELETE FROM gateway.idempotency_keys"
                    " WHERE created_at < now() - interval '24 hours'"
                )
        except Exception as err:  # the next sweep tries again
            raise_if_cancelled(err)
            log.warning("sweep_failed", error=repr(err))
