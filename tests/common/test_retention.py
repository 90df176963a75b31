"""The retention sweep against the real database: only old rows go, in batches, and sweepers
running at the same time (replicas) split the rows without errors or waits."""

from __future__ import annotations

import asyncio

import pytest

from libs.common import db
from libs.common.retention import Sweep, sweep_table

PROBE = Sweep("public.retention_probe", "at", "keep IS NOT TRUE")


@pytest.fixture
async def pools(database_url: str):
    made = [await db.create_pool(database_url, minsize=1, maxsize=2) for _ in range(3)]
    async with db.cursor(made[0]) as cur:
        await cur.execute(
            "DROP TABLE IF EXISTS public.retention_probe;"
            " CREATE TABLE public.retention_probe (id serial PRIMARY KEY,"
            " at timestamptz NOT NULL, keep boolean)"
        )
        await cur.execute(
            "INSERT INTO public.retention_probe (at, keep)"
            " SELECT now() - make_interval(days => 31), g % 500 = 0"
            " FROM generate_series(1, 5000) g"
        )
        await cur.execute(
            "INSERT INTO public.retention_probe (at)"
            " SELECT now() - make_interval(days => 29) FROM generate_series(1, 50)"
        )
    yield made
    async with db.cursor(made[0]) as cur:
        await cur.execute("DROP TABLE IF EXISTS public.retention_probe")
    for p in made:
        p.close()
        await p.wait_closed()


async def test_concurrent_sweeps_split_the_old_rows(pools) -> None:
    """Three sweepers at once delete the 4,990 old rows once in all; newer rows and rows the
    condition keeps stay."""
    counts = await asyncio.gather(*(sweep_table(p, PROBE, days=30, batch=100) for p in pools))
    assert sum(counts) == 4990
    async with db.cursor(pools[0]) as cur:
        await cur.execute(
            "SELECT count(*) FILTER (WHERE at > now() - interval '30 days'),"
            " count(*) FILTER (WHERE keep), count(*) FROM public.retention_probe"
        )
        assert await cur.fetchone() == (50, 10, 60)


async def test_a_locked_row_is_left_for_the_next_sweep(pools) -> None:
    """A row another transaction holds is skipped, not waited for."""
    async with db.transaction(pools[0]) as holder:
        await holder.execute(
            "SELECT id FROM public.retention_probe WHERE NOT keep ORDER BY id LIMIT 1 FOR UPDATE"
        )
        deleted = await asyncio.wait_for(sweep_table(pools[1], PROBE, days=30), timeout=10)
        assert deleted == 4989
    assert await sweep_table(pools[1], PROBE, days=30) == 1
