"""The shared counter itself: coalesced hits from two replicas still get distinct ordinals."""

from __future__ import annotations

import asyncio
import time
import uuid

from libs.common import db
from services.gateway.ratelimit import SharedCounter


async def test_every_hit_gets_its_own_ordinal(database_url: str) -> None:
    """600 concurrent hits on one bucket through two counters: ordinals exactly 1..600."""
    pools = [await db.create_pool(database_url, maxsize=5) for _ in range(2)]
    try:
        counters = [SharedCounter(p) for p in pools]
        bucket, start = f"test:{uuid.uuid4()}", float(int(time.time()))
        ordinals = await asyncio.gather(*(counters[i % 2].add(bucket, start)
                                          for i in range(600)))
        assert sorted(ordinals) == list(range(1, 601))
        # Nothing is left waiting or counted as out.
        assert not any(c._pending or c._in_flight for c in counters)
    finally:
        for p in pools:
            p.close()
            await p.wait_closed()


async def test_verdicts_and_the_used_up_window(database_url: str) -> None:
    pool = await db.create_pool(database_url, maxsize=2)
    try:
        counter = SharedCounter(pool)
        bucket = f"test:{uuid.uuid4()}"
        verdicts = [await counter.hit(bucket, 3, 3600) for _ in range(5)]
        assert [v.allowed for v in verdicts] == [True, True, True, False, False]
        assert [v.remaining for v in verdicts] == [2, 1, 0, 0, 0]
        assert "Retry-After" in verdicts[-1].headers() and "Retry-After" not in verdicts[0].headers()
        # A raised limit is not held back by the remembered used-up window.
        assert (await counter.hit(bucket, 10, 3600)).allowed
    finally:
        pool.close()
        await pool.wait_closed()
