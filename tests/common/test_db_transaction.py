"""`transaction()` against the real database: commit, rollback, and errors that are not masked."""

from __future__ import annotations

import asyncio

import pytest

from libs.common import db


@pytest.fixture
async def pool(database_url: str):
    p = await db.create_pool(database_url, minsize=1, maxsize=2)
    yield p
    p.close()
    await p.wait_closed()


async def test_cancellation_survives_a_failed_rollback(pool) -> None:
    """A cancelled task whose cursor is already closed still ends with CancelledError."""

    async def work() -> None:
        async with db.transaction(pool) as cur:
            await cur.execute("SELECT 1")
            cur.close()  # what aiopg does to a cursor whose query was cancelled
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(work())


async def test_error_rolls_back(pool) -> None:
    """An error inside the block leaves nothing written."""
    async with db.cursor(pool) as cur:
        await cur.execute("CREATE TEMP TABLE IF NOT EXISTS t_rb (x int)")
    with pytest.raises(RuntimeError):
        async with db.transaction(pool) as cur:
            await cur.execute("CREATE TABLE IF NOT EXISTS public.tx_probe (x int)")
            await cur.execute("INSERT INTO public.tx_probe VALUES (1)")
            raise RuntimeError("boom")
    async with db.cursor(pool) as cur:
        exists = await db.fetchval(cur, "SELECT to_regclass('public.tx_probe') IS NOT NULL")
    assert exists is False
