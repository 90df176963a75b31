"""Fixed-window rate limits counted in PostgreSQL, so every gateway replica sees one number.

One atomic upsert per request (`count = count + 1 ... RETURNING count`) makes the count exact
under any concurrency: the (N+1)th request of a window is refused, whichever replica gets it.
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


async def hit(pool: aiopg.Pool, bucket: str, limit: int, window_s: int) -> Verdict:
    """Count one request in `bucket`'s current window and judge it."""
    now = time.time()
    start = math.floor(now / window_s) * window_s
    reset = max(1, math.ceil(start + window_s - now))
    async with db.cursor(pool) as cur:
        count = await db.fetchval(cur, """
            INSERT INTO gateway.rate_counters (bucket, window_start, count) VALUES (%s, %s, 1)
            ON CONFLICT (bucket, window_start) DO UPDATE SET count = gateway.rate_counters.count + 1
            RETURNING count""", (bucket, datetime.fromtimestamp(start, timezone.utc)))
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
            log.warning("sweep_failed", error=repr(err))
