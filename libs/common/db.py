"""PostgreSQL access with aiopg: the pool, transactions, and rows as dicts.

Storage functions take a cursor, not the app, so that one handler can run several in one
transaction: `async with transaction(pool) as cur:` (aiopg is autocommit otherwise).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiopg
import psycopg2
import psycopg2.extensions
import psycopg2.extras

psycopg2.extras.register_uuid()
# JSON columns arrive as text: the service passes them through as orjson fragments or
# decodes them itself (orjson is faster than the json module psycopg2 would use).
psycopg2.extras.register_default_json(loads=lambda s: s, globally=True)
psycopg2.extras.register_default_jsonb(loads=lambda s: s, globally=True)

Row = dict[str, Any]


async def create_pool(dsn: str, *, minsize: int = 1, maxsize: int = 10,
                      read_only: bool = False, application_name: str = "ims") -> aiopg.Pool:
    """A pool whose sessions run in UTC (and read-only, for the analytics role)."""
    options = "-c timezone=UTC"
    if read_only:
        options += " -c default_transaction_read_only=on"
    return await aiopg.create_pool(
        dsn, minsize=minsize, maxsize=maxsize, timeout=30.0, pool_recycle=300.0,
        options=options, application_name=application_name,
    )


@contextlib.asynccontextmanager
async def transaction(pool: aiopg.Pool) -> AsyncIterator[aiopg.Cursor]:
    """One transaction: committed when the block ends, rolled back when it raises."""
    async with pool.acquire() as conn:
        async with conn.cursor() as cur:
            await cur.execute("BEGIN")
            try:
                yield cur
            except BaseException:
                # A failed rollback (the query was cancelled and aiopg closed the cursor) must not
                # replace the original error: a swallowed CancelledError would keep a task alive
                # through shutdown.
                try:
                    await cur.execute("ROLLBACK")
                except Exception:
                    conn.close()  # in an unknown state: the pool drops a closed connection
                raise
            else:
                await cur.execute("COMMIT")


@contextlib.asynccontextmanager
async def cursor(pool: aiopg.Pool) -> AsyncIterator[aiopg.Cursor]:
    """An autocommit cursor for reads and single statements."""
    async with pool.acquire() as conn:
        async with conn.cursor() as cur:
            yield cur


async def fetchone(cur: aiopg.Cursor, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Row | None:
    await cur.execute(sql, params)
    row = await cur.fetchone()
    if row is None:
        return None
    return dict(zip([d[0] for d in cur.description], row))


async def fetchall(cur: aiopg.Cursor, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Row]:
    await cur.execute(sql, params)
    rows = await cur.fetchall()
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in rows]


async def fetchval(cur: aiopg.Cursor, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
    await cur.execute(sql, params)
    row = await cur.fetchone()
    return None if row is None else row[0]


def is_unique_violation(err: BaseException, constraint: str | None = None) -> bool:
    if not isinstance(err, psycopg2.errors.UniqueViolation):
        return False
    return constraint is None or getattr(err.diag, "constraint_name", None) == constraint


async def ping(pool: aiopg.Pool) -> bool:
    try:
        async with pool.acquire() as conn:
            async with conn.cursor() as cur:
                await cur.execute("SELECT 1")
        return True
    except Exception:
        return False
