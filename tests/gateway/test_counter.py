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
        ordinals = await asyncio.gather(*(counters[i % 2].add(bucket, start) for i in range(600)))
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
        assert (
            "Retry-After" in verdicts[-1].headers() and "Retry-After" not in verdicts[0].headers()
        )
        # A raised limit is not held back by the remembered used-up window.
        assert (await counter.hit(bucket, 10, 3600)).allowed
    finally:
        pool.close()
        await pool.wait_closed()


async def _stored_count(database_url: str, bucket: str) -> int:
    """The count stored for the bucket, all windows."""
    pool = await db.create_pool(database_url, maxsize=1)
    try:
        async with db.cursor(pool) as cur:
            return int(
                await db.fetchval(
                    cur,
                    "SELECT coalesce(sum(count), 0) FROM gateway.rate_counters WHERE bucket = %s",
                    (bucket,),
                )
            )
    finally:
        pool.close()
        await pool.wait_closed()


async def test_blocks_far_from_the_limit_never_admit_more_than_it(database_url: str) -> None:
    """Two replicas, a limit of 2,000 and 3,000 hits in waves: the admitted are at most 2,000
    and at least 2,000 less what the two could hold back (min(256, limit/64) each), every
    ordinal is handed out once, and most hits cost no statement (blocks were reserved)."""
    pools = [await db.create_pool(database_url, maxsize=5) for _ in range(2)]
    try:
        counters = [SharedCounter(p) for p in pools]
        bucket, limit = f"test:{uuid.uuid4()}", 2000
        verdicts = []
        for wave in range(30):
            verdicts += await asyncio.gather(
                *(counters[(wave + i) % 2].hit(bucket, limit, 3600) for i in range(100))
            )
        admitted = sum(v.allowed for v in verdicts)
        held_back = 2 * min(SharedCounter.BLOCK_MAX, limit // SharedCounter.BLOCK_SHARE)
        assert limit - held_back <= admitted <= limit
        stored = await _stored_count(database_url, bucket)
        assert stored <= 3000 + held_back  # reserved, never more than one block a replica
        assert not any(c._pending or c._in_flight for c in counters)
    finally:
        for p in pools:
            p.close()
            await p.wait_closed()


async def test_blocks_hand_out_ordinals_without_a_statement(database_url: str) -> None:
    """Far from a large limit, 1,000 hits one after another take far fewer statements: the
    stored count runs ahead of the hits by less than one block, and ordinals are 1..1000."""
    pool = await db.create_pool(database_url, maxsize=2)
    try:
        counter = SharedCounter(pool)
        bucket, start = f"test:{uuid.uuid4()}", float(int(time.time()))
        ordinals = [await counter.add(bucket, start, 1_000_000) for _ in range(1000)]
        assert ordinals == list(range(1, 1001))
        stored = await _stored_count(database_url, bucket)
        assert 1000 <= stored < 1000 + SharedCounter.BLOCK_MAX
    finally:
        pool.close()
        await pool.wait_closed()


async def test_a_small_limit_is_counted_hit_by_hit(database_url: str) -> None:
    """Under BLOCK_SHARE * 2 per window nothing is reserved ahead: the stored count is the
    number of hits, and exactly the limit is admitted across two replicas."""
    pools = [await db.create_pool(database_url, maxsize=5) for _ in range(2)]
    try:
        counters = [SharedCounter(p) for p in pools]
        bucket = f"test:{uuid.uuid4()}"
        verdicts = []
        for _ in range(4):  # four waves
            verdicts += await asyncio.gather(
                *(counters[i % 2].hit(bucket, 100, 3600) for i in range(50))
            )
        assert sum(v.allowed for v in verdicts) == 100
        assert await _stored_count(database_url, bucket) <= 200
    finally:
        for p in pools:
            p.close()
            await p.wait_closed()
