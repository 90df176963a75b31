"""Server-side prepared statements for the hot reads (get by id, list pages).

Planning a query over a table with many indexes costs more than running it (a page of 25 is an
index range scan of well under a millisecond). A statement prepared once per connection, with
PostgreSQL inferring every parameter's type from its column or cast, skips that work after the
first executions. Statements whose plan depends on the values (search) are not prepared.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Sequence
from typing import Any

import aiopg

_PREPARED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_PLACEHOLDER = re.compile(r"%s")


def _numbered(sql: str) -> str:
    counter = iter(range(1, 10_000))
    return _PLACEHOLDER.sub(lambda _: f"${next(counter)}", sql)


# A keyset page's custom plan looks cheaper than the generic one (it knows how deep the cursor
# is), so PostgreSQL would plan every execution anew and lose what preparing saves; the generic
# plan is the same index range scan. Set when each session starts (`pg_context(options=...)`):
# a SET on a session's first use would revert if that first use were in a transaction that
# rolled back, and the session would plan each execution anew from then on.
SESSION_OPTIONS = ("-c plan_cache_mode=force_generic_plan",)


async def execute(cur: aiopg.Cursor, sql: str, params: Sequence[Any]) -> None:
    """Run `sql` (psycopg2 `%s` placeholders, no literal `%`) as a prepared statement, on a
    connection of a pool made with `SESSION_OPTIONS`."""
    name = "ims_" + hashlib.sha1(sql.encode()).hexdigest()[:16]
    done = _PREPARED.setdefault(cur.connection, set())
    if name not in done:
        await cur.execute(f"PREPARE {name} AS {_numbered(sql)}")
        done.add(name)
    if params:
        await cur.execute(f"EXECUTE {name} ({', '.join(['%s'] * len(params))})", tuple(params))
    else:
        await cur.execute(f"EXECUTE {name}")
