"""Retention: rows older than `RETENTION_DAYS` are deleted, in bounded batches.

A process sweeps the tables it owns shortly after it starts and then every
`RETENTION_INTERVAL_S`. Each batch is one statement deleting at most `BATCH` rows, chosen with
`FOR UPDATE SKIP LOCKED`: replicas sweeping at the same moment split the rows between them
instead of waiting on each other, and a row some other transaction holds is left for the next
sweep. A short pause between batches leaves the database to the service's own work.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import aiopg
import structlog
from aiohttp import web

from . import db
from .tasks import raise_if_cancelled
from .web import SETTINGS, stop_tasks

log = structlog.get_logger("retention")

BATCH = 1000
PAUSE_S = 0.05


@dataclass(frozen=True)
class Sweep:
    """One table's rule: rows whose `column` is older than the retention period go."""

    table: str  # schema-qualified, from code only (never from input)
    column: str  # a timestamptz column, indexed
    condition: str = "true"  # rows that must stay whatever their age stay out


async def sweep_table(pool: aiopg.Pool, sweep: Sweep, days: float, batch: int = BATCH) -> int:
    """Delete every row of `sweep` past the period; return how many went."""
    sql = (
        f"DELETE FROM {sweep.table} WHERE ctid = ANY(ARRAY("
        f"SELECT ctid FROM {sweep.table}"
        f" WHERE {sweep.column} < now() - make_interval(secs => %s) AND ({sweep.condition})"
        f" LIMIT %s FOR UPDATE SKIP LOCKED))"
    )
    total = 0
    while True:
        async with db.cursor(pool) as cur:  # one statement: its own short transaction
            await cur.execute(sql, (days * 86400.0, batch))
            deleted = cur.rowcount
        total += deleted
        if deleted < batch:
            return total
        await asyncio.sleep(PAUSE_S)


async def sweep_all(pool: aiopg.Pool, sweeps: tuple[Sweep, ...], days: float) -> dict[str, int]:
    done = {}
    for sweep in sweeps:
        done[sweep.table] = await sweep_table(pool, sweep, days)
    return done


def retention_context(
    pool: Callable[[web.Application], aiopg.Pool],
    sweeps: tuple[Sweep, ...],
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context running the sweeps of `sweeps` in the background."""

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        s = app[SETTINGS]

        async def forever() -> None:
            # Replicas started together do not sweep in step.
            await asyncio.sleep(min(5.0, s.retention_interval_s) * (0.5 + random.random()))
            while True:
                try:
                    done = await sweep_all(pool(app), sweeps, s.retention_days)
                    if any(done.values()):
                        log.info("retention_swept", deleted=done, days=s.retention_days)
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # the next sweep tries again
                    raise_if_cancelled(err)
                    log.warning("retention_failed", error=repr(err))
                await asyncio.sleep(s.retention_interval_s)

        task = asyncio.create_task(forever())
        yield
        await stop_tasks([task])

    return ctx
