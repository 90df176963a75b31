"""The ideas service's storage functions (async, over an aiopg cursor) run on a psycopg2
connection: the seed writes through them inside its own transaction, so that it has no second
way in. The adapter's methods never suspend, so a coroutine runs to its end in one step."""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class SyncCursor:
    """The part of aiopg's cursor the storage functions use, over a psycopg2 connection."""

    def __init__(self, conn: Any) -> None:
        self._cur = conn.cursor()

    @property
    def description(self) -> Any:
        return self._cur.description

    async def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> None:
        self._cur.execute(sql, params)

    async def fetchone(self) -> Any:
        return self._cur.fetchone()

    async def fetchall(self) -> Any:
        return self._cur.fetchall()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """The coroutine's result; it must not suspend (only SyncCursor awaits inside)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("a storage function suspended on a synchronous cursor")
