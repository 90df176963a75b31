"""A database that cannot be reached is told apart from a bug: 503, not 500."""

from __future__ import annotations

import asyncio

import psycopg2
import pytest

from libs.common import db
from libs.common.unavailable import DatabaseUnavailable, database_down
from tests.support.processes import free_port


async def test_a_refused_connection_is_the_database_down() -> None:
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere"  # nothing listens there
    with pytest.raises(Exception) as caught:
        pool = await db.create_pool(url, minsize=1, maxsize=1)
        pool.close()
    assert database_down(caught.value)
    try:  # raised from it, as handlers do, it is still recognised
        raise RuntimeError("while reading") from caught.value
    except RuntimeError as err:
        assert database_down(err)


def test_other_errors_are_not() -> None:
    assert not database_down(ValueError("a bug"))
    assert not database_down(RuntimeError("unable to perform operation"))


def test_the_answer() -> None:
    err = DatabaseUnavailable()
    assert (err.status, err.code, err.headers) == (503, "service_unavailable", {"Retry-After": "1"})


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_refused_connections_leave_nothing_watched(database_url: str, loop: str) -> None:
    """Every process runs on uvloop. A refused connect used to leave uvloop watching its
    closed socket for writing, and the next connection given the same descriptor number
    failed ("unable to perform operation on <UVPoll closed=True>") or was never woken. After
    refused connects, each one refused alike, a connection to the database answers at once."""
    import uvloop

    refused = f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere"

    async def main() -> None:
        for _ in range(4):
            with pytest.raises(psycopg2.OperationalError, match="refused"):
                await db.create_pool(refused, minsize=1, maxsize=1)
        async with asyncio.timeout(10):
            pool = await db.create_pool(database_url, minsize=1, maxsize=1)
            async with db.cursor(pool) as cur:
                assert await db.fetchval(cur, "SELECT 1") == 1
            pool.close()
            await pool.wait_closed()

    factory = uvloop.new_event_loop if loop == "uvloop" else asyncio.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main())


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_wait_whose_watcher_was_lost_still_ends(database_url: str, loop: str) -> None:
    """A query waits on its socket through the event loop's watcher of the descriptor number.
    Seen in the restart drill: that watcher gone while the query waited (no longer in the
    kernel's poller), the server's reset never woke it, and the request hung for aiopg's whole
    timeout. With the watcher taken away mid-query, the query still returns; and when the
    server then ends the session, the error comes within seconds, not after 30."""
    import uvloop

    async def main() -> None:
        pool = await db.create_pool(database_url, minsize=1, maxsize=1)
        try:
            async with pool.acquire() as conn, conn.cursor() as cur:
                query = asyncio.create_task(cur.execute("SELECT pg_sleep(0.3)"))
                await asyncio.sleep(0.1)
                asyncio.get_running_loop().remove_reader(conn._fileno)  # the watcher lost
                started = asyncio.get_running_loop().time()
                async with asyncio.timeout(5):
                    await query
                assert asyncio.get_running_loop().time() - started < 3

            async with pool.acquire() as conn, conn.cursor() as cur:
                pid = conn.raw.get_backend_pid()
                query = asyncio.create_task(cur.execute("SELECT pg_sleep(20)"))
                await asyncio.sleep(0.1)
                asyncio.get_running_loop().remove_reader(conn._fileno)
                other = psycopg2.connect(database_url)
                other.autocommit = True
                with other.cursor() as c:  # the server ends the session (a restart does)
                    c.execute("SELECT pg_terminate_backend(%s)", (pid,))
                other.close()
                started = asyncio.get_running_loop().time()
                with pytest.raises(psycopg2.OperationalError) as caught:
                    async with asyncio.timeout(8):
                        await query
                assert database_down(caught.value)
                assert asyncio.get_running_loop().time() - started < 5
        finally:
            pool.close()
            await pool.wait_closed()

    factory = uvloop.new_event_loop if loop == "uvloop" else asyncio.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main())


async def test_a_server_that_accepts_and_says_nothing_is_the_database_down() -> None:
    """A server that takes the connection and never answers (one starting up under load, a
    half-open path) used to hold the pool, which connects under its lock, for its whole 30 s
    acquire timeout and then failed as a bug (TimeoutError: a 500). The connect gives up
    after db.CONNECT_TIMEOUT_S, as the database being down (a 503)."""
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel completes the handshakes; nobody ever reads or answers
    url = f"postgresql://postgres@127.0.0.1:{silent.getsockname()[1]}/nowhere"
    try:
        pool = await db.create_pool(url, minsize=0, maxsize=2)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(psycopg2.OperationalError) as caught:
            async with asyncio.timeout(15):
                async with db.cursor(pool) as cur:
                    await cur.execute("SELECT 1")
        assert database_down(caught.value)
        assert loop.time() - started < db.CONNECT_TIMEOUT_S + 3
        pool.close()
        await pool.wait_closed()
    finally:
        silent.close()


async def test_a_statement_without_an_answer_is_the_database_down(database_url: str) -> None:
    """A statement whose server never answers (here its backend stopped: no statement_timeout
    can fire) used to wait aiopg's 30 s and fail as a TimeoutError (a 500). Its deadline is
    its statement_timeout and db.QUERY_GRACE_S; past it, the database is down (a 503)."""
    import os
    import signal

    pool = await db.create_pool(database_url, timeouts=(1.0, 5.0), minsize=1, maxsize=1)
    try:
        async with pool.acquire() as conn, conn.cursor() as cur:
            pid = conn.raw.get_backend_pid()
            os.kill(pid, signal.SIGSTOP)
            try:
                loop = asyncio.get_running_loop()
                started = loop.time()
                with pytest.raises(psycopg2.OperationalError) as caught:
                    async with asyncio.timeout(12):
                        await cur.execute("SELECT 1")
                assert database_down(caught.value)
                assert loop.time() - started < 1.0 + db.QUERY_GRACE_S + 2
            finally:
                os.kill(pid, signal.SIGCONT)
        async with db.cursor(pool) as cur:  # the pool dropped it and connects anew
            assert await db.fetchval(cur, "SELECT 1") == 1
    finally:
        pool.close()
        await pool.wait_closed()
