"""A database that cannot be reached answers 503, not 500.

While PostgreSQL is down, restarting or refusing connections, psycopg2 raises
`OperationalError` (connection refused, server closed the connection, administrator shutdown,
the database starting up) or `InterfaceError` (a pooled connection already closed). Those are a
dependency's outage, which the client should retry: 503 `service_unavailable` with
`Retry-After: 1`, logged as a warning (no stack). A statement cancelled by its timeout is
already a 503 (`QueryTimeout`, libs/common/db.py).

One more form, found by the PostgreSQL restart drill: under uvloop, a connection that the
server refuses at once closes its socket before aiopg watches it, and aiopg's connect raises
`RuntimeError` ("unable to perform operation on <UVPoll closed=True>"). A `RuntimeError` raised
from inside aiopg's connection code is taken for what it is: the database cannot be reached.
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


def _from_aiopg_connect(err: BaseException) -> bool:
    tb = err.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
        if name.endswith("aiopg/connection.py") and tb.tb_frame.f_code.co_name == "__init__":
            return True
        tb = tb.tb_next
    return False


def database_down(err: BaseException) -> bool:
    """Whether `err`, or an error it was raised from, says the database cannot be reached."""
    seen = 0
    e: BaseException | None = err
    while e is not None and seen < 8:
        if isinstance(e, DOWN) or (isinstance(e, RuntimeError) and _from_aiopg_connect(e)):
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False
