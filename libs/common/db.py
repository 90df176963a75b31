"""PostgreSQL access with aiopg: the pool, transactions, and rows as dicts.

Storage functions take a cursor, not the app, so that one handler can run several in one
transaction: `async with transaction(pool) as cur:` (aiopg is autocommit otherwise).

Every pool of every process is made by `create_pool`, whose sessions carry the process's
`statement_timeout` and `idle_in_transaction_session_timeout` (Settings.db_timeouts): no
statement runs, and no transaction stays open, without end. A statement the server cancels
(its statement_timeout, or an operator's pg_cancel_backend) raises `QueryTimeout`, a 503, where
aiopg would raise CancelledError (see `_poll` below).

No wait on the server is without end either (docs/running.md#postgresql-restarts): a new
connection has `CONNECT_TIMEOUT_S`, a statement its statement_timeout and `QUERY_GRACE_S`, and
a deadline passed is `psycopg2.OperationalError`, the database being away (a 503); a wait
whose event the loop lost is found by `_nudge` within `NUDGE_S`.

The pools' connections and the long-lived LISTEN ones (`listen_connection`) have TCP
keepalives (`KEEPALIVES`): a server that vanished without closing its side (a host gone, a
network cut, a dropped NAT or conntrack entry) is noticed within about a minute of quiet
instead of the kernel's two hours, so that a LISTEN connection does not wait on it forever
and a pool does not hand it out (docs/running.md#postgresql-connections).
"""

from __future__ import annotations

import asyncio
import contextlib
import select
from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiopg
import aiopg.connection
import aiopg.pool
import psycopg2
import psycopg2.errors
import psycopg2.extensions
import psycopg2.extras
import structlog

from .errors import PoolTimeout, QueryTimeout
from .settings import Settings

log = structlog.get_logger("db")

psycopg2.extras.register_uuid()
# JSON columns arrive as text: the service passes them through as orjson fragments or
# decodes them itself (orjson is faster than the json module psycopg2 would use).
psycopg2.extras.register_default_json(loads=lambda s: s, globally=True)
psycopg2.extras.register_default_jsonb(loads=lambda s: s, globally=True)

Row = dict[str, Any]

# libpq's TCP keepalives: the first probe after 30 s of quiet, then every 10 s; 3 unanswered
# and the connection is dead (about 60 s). Its queries are unaffected: a live server's kernel
# answers the probes while a long statement runs.
KEEPALIVES: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}


_aiopg_poll = aiopg.connection.Connection._poll

# How often a connection waiting on PostgreSQL checks its socket itself (see `_nudge`).
NUDGE_S = 1.0


def _nudge(weak_self: Any, waiter: asyncio.Future[None], timer: list[asyncio.TimerHandle]) -> None:
    # aiopg waits on its socket through the event loop's watcher of the descriptor *number*.
    # Around PostgreSQL restarts, where numbers are closed and handed out again quickly, a
    # waiting connection's descriptor was seen missing from the kernel's epoll interest list
    # while the loop still counted it watched: no event ever came, and the wait lasted its
    # whole deadline, even after the server reset the socket
    # (docs/running.md#postgresql-restarts). So every
    # NUDGE_S of a wait, ask the kernel itself whether the socket is ready; when it is, watch
    # it anew and handle what is there, as the lost event would have.
    conn = weak_self()
    if conn is None or waiter.done():
        return
    loop = conn._loop
    try:
        fileno = conn._conn.fileno()
    except (psycopg2.Error, OSError):
        fileno = -1
    ready = fileno < 0
    if not ready:
        try:
            r, w, _ = select.select([fileno], [fileno] if conn._writing else [], [], 0)
            ready = bool(r or w)
        except (OSError, ValueError):
            ready = True  # let aiopg's own handling see what became of it
    if ready:
        log.info("db_wait_nudged", fileno=fileno)  # rare: an event that did not come, or late
        with contextlib.suppress(Exception):
            if fileno >= 0:
                _rewatch(conn, fileno, weak_self)
            aiopg.connection.Connection._ready(weak_self)
    if not waiter.done():
        timer[0] = loop.call_later(NUDGE_S, _nudge, weak_self, waiter, timer)


def _rewatch(conn: aiopg.connection.Connection, fileno: int, weak_self: Any) -> None:
    """Watch `fileno`, libpq's socket, afresh: a watcher kept under a stale registration is
    dropped and made again, which registers the socket with the kernel's poller anew."""
    loop = conn._loop
    ready = aiopg.connection.Connection._ready
    with contextlib.suppress(OSError, RuntimeError, ValueError):
        loop.remove_reader(fileno)
    if conn._writing:
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            loop.remove_writer(fileno)
    conn._fileno = fileno
    loop.add_reader(fileno, ready, weak_self)
    if conn._writing:
        loop.add_writer(fileno, ready, weak_self)


async def _poll(self: aiopg.connection.Connection, waiter: Any, timeout: float) -> Any:
    # aiopg turns a statement the server cancelled into asyncio.CancelledError, which every
    # handler and background loop takes for "this task is being stopped": a request would be
    # dropped without an answer, a consumer loop would end. When this task was not asked to
    # stop, raise it as the error it is.
    timer: list[asyncio.TimerHandle] = []
    timer.append(self._loop.call_later(NUDGE_S, _nudge, self._weakref, waiter, timer))
    try:
        return await _aiopg_poll(self, waiter, timeout)
    except TimeoutError as err:
        # aiopg's own deadline on the wait (it closed the connection): no answer from the
        # server at all, which is the database being away, not a bug (a 503).
        raise psycopg2.OperationalError(
            f"no answer from the database within {timeout:g} s"
        ) from err
    except asyncio.CancelledError as err:
        task = asyncio.current_task()
        cause = err.__context__
        if (
            isinstance(cause, psycopg2.errors.QueryCanceled)
            and task is not None
            and not task.cancelling()
        ):
            raise QueryTimeout() from cause
        raise
    finally:
        timer[0].cancel()


aiopg.connection.Connection._poll = _poll  # type: ignore[method-assign]


_aiopg_ready = aiopg.connection.Connection._ready


def _ready(weak_self: Any) -> None:
    # When libpq has closed a connection's socket (a refused connect, a server gone), aiopg
    # stops watching it for reading and forgets its descriptor, but not for writing, which a
    # connect in progress watches too. asyncio's selector drops the descriptor either way;
    # uvloop keeps a closed watcher under that number, and the next connection given the same
    # number either fails at once ("unable to perform operation on <UVPoll closed=True>") or,
    # when its reader is put on the stale watcher, is never woken and waits out aiopg's
    # timeout (docs/running.md#postgresql-restarts). So stop watching for writing too, in the
    # same step, before any other socket can take the number.
    conn = weak_self()
    if conn is None:
        return
    fileno, writing = conn._fileno, conn._writing
    _aiopg_ready(weak_self)
    if writing and fileno is not None and conn._fileno is None:
        with contextlib.suppress(OSError, RuntimeError):
            conn._loop.remove_writer(fileno)


aiopg.connection.Connection._ready = staticmethod(_ready)  # type: ignore[method-assign]


_aiopg_acquire = aiopg.Pool._acquire


async def _acquire(self: aiopg.Pool) -> Any:
    # Waiting for a free connection ends after the pool's acquire timeout (DB_POOL_TIMEOUT_S,
    # `create_pool`) or aiopg's own, each a bare TimeoutError, which every handler took for a
    # bug: 500. Every connection being in use is the database busy, which the client should
    # retry: a 503 with Retry-After, in every process (`PoolTimeout`). A cancellation from
    # outside (an enclosing timeout's) stays one: these timeouts raise only when they fired.
    try:
        async with asyncio.timeout(getattr(self, "_ims_acquire_timeout", None)):
            return await _aiopg_acquire(self)
    except TimeoutError as err:
        raise PoolTimeout() from err


aiopg.Pool._acquire = _acquire  # type: ignore[method-assign]


# A new connection's deadline: a server that accepts and then says nothing (starting up under
# load, a half-open network path) must not hold a pool, which connects under its lock, for
# the 30 s of its acquire timeout. Past it, the connect fails as the database being down
# (psycopg2.OperationalError: a 503, libs/common/unavailable.py).
CONNECT_TIMEOUT_S = 5.0
# A statement's deadline beyond its statement_timeout, for the server's own cancel to arrive.
QUERY_GRACE_S = 2.0

_aiopg_connect = aiopg.connection.connect


async def _pool_connect(dsn: str, *, timeout: float, **kwargs: Any) -> aiopg.Connection:
    conn = await _aiopg_connect(dsn, timeout=min(timeout, CONNECT_TIMEOUT_S), **kwargs)
    conn._timeout = timeout  # until the pool's on_connect sets its queries' deadline
    return conn


aiopg.pool.connect = _pool_connect  # type: ignore[assignment]


def session_options(timeouts: tuple[float, float], *extra: str) -> str:
    """libpq `options`: UTC, the two timeouts (seconds, given to PostgreSQL in ms), `extra`."""
    statement_s, idle_s = timeouts
    return " ".join(
        [
            "-c timezone=UTC",
            f"-c statement_timeout={round(statement_s * 1000)}",
            f"-c idle_in_transaction_session_timeout={round(idle_s * 1000)}",
            *extra,
        ]
    )


async def create_pool(
    dsn: str,
    *,
    timeouts: tuple[float, float] = Settings.DB_TIMEOUTS,
    minsize: int = 1,
    maxsize: int = 10,
    application_name: str = "ims",
    extra_options: Sequence[str] = (),
    acquire_timeout: float = Settings.default("db_pool_timeout_s"),
) -> aiopg.Pool:
    """A pool whose sessions run in UTC with `timeouts` (statement, idle in transaction).

    Its waits on the server have deadlines: acquiring a connection `acquire_timeout`
    (`DB_POOL_TIMEOUT_S`; then `PoolTimeout`, a 503), opening one `CONNECT_TIMEOUT_S`, and each
    statement its statement_timeout and `QUERY_GRACE_S` (the server cancels it first and says
    so, a `QueryTimeout`; past that, no answer came at all). A deadline passed on the server is
    `psycopg2.OperationalError`, the database being away: a 503."""
    statement_s = timeouts[0]

    async def on_connect(conn: aiopg.Connection) -> None:
        if statement_s > 0:
            conn._timeout = statement_s + QUERY_GRACE_S

    pool = await aiopg.create_pool(
        dsn,
        minsize=minsize,
        maxsize=maxsize,
        timeout=30.0,  # aiopg's: its connects, and its client-side bound on each statement
        pool_recycle=300.0,
        on_connect=on_connect,
        options=session_options(timeouts, *extra_options),
        application_name=application_name,
        **KEEPALIVES,
    )
    pool._ims_acquire_timeout = acquire_timeout  # type: ignore[attr-defined]  # our mark
    return pool


def listen_connection(dsn: str, timeout: float = 10.0) -> Any:
    """A connection of its own (`async with`), for LISTEN: outside the pools, kept for the
    process's life, with the pools' keepalives."""
    return aiopg.connect(dsn, timeout=timeout, **KEEPALIVES)


@contextlib.asynccontextmanager
async def transaction(pool: aiopg.Pool, snapshot: bool = False) -> AsyncIterator[aiopg.Cursor]:
    """One transaction: committed when the block ends, rolled back when it raises. With
    `snapshot`, a read-only one whose queries all see the database as of its first (a
    resource read in several queries is one state of it, whatever commits meanwhile)."""
    async with pool.acquire() as conn:
        async with conn.cursor() as cur:
            await cur.execute(
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if snapshot else "BEGIN"
            )
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


async def fetchone(
    cur: aiopg.Cursor, sql: str, params: Sequence[Any] | dict[str, Any] = ()
) -> Row | None:
    await cur.execute(sql, params)
    row = await cur.fetchone()
    if row is None:
        return None
    # a row is as long as its description: the driver makes both (strict=True costs ~20% here)
    return dict(zip([d[0] for d in cur.description or ()], row, strict=False))


async def fetchall(
    cur: aiopg.Cursor, sql: str, params: Sequence[Any] | dict[str, Any] = ()
) -> list[Row]:
    await cur.execute(sql, params)
    rows = await cur.fetchall()
    names = [d[0] for d in cur.description or ()]
    return [dict(zip(names, r, strict=False)) for r in rows]  # as in fetchone


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
