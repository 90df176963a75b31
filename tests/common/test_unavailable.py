"""A database that cannot be reached is told apart from a bug: 503, not 500."""

from __future__ import annotations

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
    assert not database_down(RuntimeError("unable to perform operation"))  # not from aiopg


def test_the_answer() -> None:
    err = DatabaseUnavailable()
    assert (err.status, err.code, err.headers) == (503, "service_unavailable", {"Retry-After": "1"})
