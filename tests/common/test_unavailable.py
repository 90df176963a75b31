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
