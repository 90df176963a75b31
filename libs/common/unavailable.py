"""A database that cannot be reached answers 503, not 500.

While PostgreSQL is down, restarting or refusing connections, psycopg2 raises
`OperationalError` (connection refused, server closed the connection, administrator shutdown,
the database starting up) or `InterfaceError` (a pooled connection already closed). Those are a
dependency's outage, which the client should retry: 503 `service_unavailable` with
`Retry-After: 1`, logged as a warning (no stack). A statement cancelled by its timeout is
already a 503 (`QueryTimeout`, libs/common/db.py).
"""

from __future__ import annotations

import psycopg2

from .errors import ServiceUnavailable

DOWN = (psycopg2.OperationalError, psycopg2.InterfaceError)


class DatabaseUnavailable(ServiceUnavailable):
    default_message = "The database is unavailable; retry shortly"

    def __init__(self, message: str | None = None, **kw: object) -> None:
        kw.setdefault("headers", {"Retry-After": "1"})
        super().__init__(message, **kw)  # type: ignore[arg-type]


def database_down(err: BaseException) -> bool:
    """Whether `err`, or an error it was raised from, says the database cannot be reached."""
    seen = 0
    e: BaseException | None = err
    while e is not None and seen < 8:
        if isinstance(e, DOWN):
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False
