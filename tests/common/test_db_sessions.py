"""What every PostgreSQL session of the system carries from its start: TCP keepalives on each
connection of every process (libs/common/db.py, docs/running.md#postgresql-connections), and
the ideas service's generic plans for its prepared statements (services/ideas/prepared.py)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import psycopg2.extensions

from libs.common import db
from services.ideas import prepared
from tests.support.processes import open_files, tcp_sockets

ESTABLISHED = "01"


def _descendants(pid: int) -> list[int]:
    out = [pid]
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
            for child in f.read().split():
                out.extend(_descendants(int(child)))
    return out


async def test_every_process_connects_to_postgresql_with_keepalives(system: Any) -> None:
    """Every connection each process (and its children) holds to PostgreSQL, its pools' and
    its LISTEN connections alike, has the keepalive timer running: a server that vanished
    without a word is noticed in about a minute, not the kernel's two hours. A connection
    without keepalives shows no timer at all while it is idle."""
    port = int(psycopg2.extensions.parse_dsn(system.database_url).get("port", 5432))
    hex_port = f":{port:04X}"
    # each established connection to PostgreSQL: its socket -> its timer (/proc/net/tcp's
    # `tr`: 0 none, 1 retransmit, 2 keepalive, 4 zero-window probe)
    timers = {
        f"socket:[{cols[9]}]": cols[5].split(":")[0]
        for cols in tcp_sockets()
        if cols[2].endswith(hex_port) and cols[3] == ESTABLISHED
    }
    seen: dict[str, list[str]] = {}
    for svc, procs in system.procs.items():
        for proc in procs:
            mine = set().union(*(open_files(p) for p in _descendants(proc.pid)))
            seen.setdefault(svc, []).extend(t for s, t in timers.items() if s in mine)
    holding = {svc for svc, t in seen.items() if t}
    expected = {"gateway", "ideas", "similar", "similar-embedder", "customers", "webhooks"}
    assert expected | {"analytics"} <= holding, seen
    without = {svc: t.count("00") for svc, t in seen.items() if "00" in t}
    assert not without, f"connections without keepalives, by process: {without} of {seen}"


async def test_prepared_statements_keep_generic_plans_after_a_rolled_back_first_use(
    database_url: str,
) -> None:
    """The ideas service's sessions plan prepared statements generically from their start, so
    a first use inside a transaction that rolls back leaves the session as it was (a SET on
    first use would have been rolled back with it)."""
    pool = await db.create_pool(
        database_url, minsize=1, maxsize=1, extra_options=prepared.SESSION_OPTIONS
    )
    try:

        class Undo(Exception):
            pass

        with contextlib.suppress(Undo):
            async with db.transaction(pool) as cur:
                await prepared.execute(cur, "SELECT %s::int + 1", (41,))
                assert (await cur.fetchone())[0] == 42
                raise Undo
        async with db.cursor(pool) as cur:
            await prepared.execute(cur, "SELECT %s::int + 1", (1,))
            assert (await cur.fetchone())[0] == 2
            await cur.execute("SHOW plan_cache_mode")
            assert (await cur.fetchone())[0] == "force_generic_plan"
    finally:
        pool.close()
        await pool.wait_closed()
