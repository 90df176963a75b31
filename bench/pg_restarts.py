"""PostgreSQL restarts under concurrent transactions, in one process on uvloop: how long can a
wait on the database last? (docs/running.md#postgresql-restarts)

    python -m bench.pg_restarts --rounds 40 --workers 16 [--no-nudge] [--tally FILE]

A private PostgreSQL (tests/support/private.py) is restarted (fast shutdown, 0.5 s down) every
second while `--workers` tasks each run small transactions through one `db.create_pool` pool
(maxsize 10). Every transaction's duration is kept; a wait past `STUCK_S` is a stuck one, and
at the first of each stretch the process prints its pool's state, each connection's, the
descriptors the kernel's epoll watches (/proc/self/fdinfo) and every task's stack. The tally:
rounds, transactions by outcome, stuck ones and the longest. `--no-nudge` turns off
`db.NUDGE_S` (the behaviour before it), to compare. Nothing here touches the shared servers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from typing import Any

import psycopg2
import uvloop

from libs.common import db
from tests.support.private import PrivatePostgres

STUCK_S = 5.0


def _epoll_watched() -> list[int]:
    """The descriptors the loop's epoll instance watches, as the kernel sees them."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:[eventpoll]":
                with open(f"/proc/self/fdinfo/{fd}") as f:
                    return sorted(int(line.split()[1]) for line in f if line.startswith("tfd:"))
        except OSError:
            continue
    return []


def _dump(pool: Any) -> None:
    watched = _epoll_watched()
    print(f"stuck: pool size {pool.size} free {pool.freesize}", file=sys.stderr)
    for conn in [*pool._used, *pool._free]:
        fd = conn._fileno
        print(
            f"  connection fd {fd} closed {conn.closed} writing {conn._writing} "
            f"waiting {conn._waiter is not None and not conn._waiter.done()} "
            f"in epoll {fd in watched}",
            file=sys.stderr,
        )
    for task in asyncio.all_tasks():
        task.print_stack(limit=12, file=sys.stderr)
    sys.stderr.flush()


def _make_table(pg: PrivatePostgres) -> None:
    conn = psycopg2.connect(pg.url("postgres"))
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id bigserial PRIMARY KEY, v text)")
    conn.close()


async def _restart(pg: PrivatePostgres, rounds: int, outcomes: Counter[str]) -> None:
    """Restart the server every 1.5 s (fast shutdown, 0.5 s down), `rounds` times."""
    for r in range(rounds):
        await asyncio.sleep(1.0)
        await asyncio.to_thread(pg.stop, "fast")
        await asyncio.sleep(0.5)
        await asyncio.to_thread(pg.start)
        print(f"round {r}: {dict(outcomes)}", file=sys.stderr, flush=True)


async def main(rounds: int, workers: int) -> dict[str, Any]:
    pg = PrivatePostgres()
    await asyncio.to_thread(pg.start)
    try:
        _make_table(pg)
        pool = await db.create_pool(pg.url("postgres"), minsize=1, maxsize=10, timeouts=(5, 10))
        outcomes: Counter[str] = Counter()
        durations: list[float] = []
        started: dict[int, float] = {}
        stop = asyncio.Event()

        async def worker(w: int) -> None:
            while not stop.is_set():
                t0 = started[w] = time.monotonic()
                try:
                    async with db.transaction(pool) as cur:
                        await cur.execute("INSERT INTO t (v) VALUES ('x')")
                        await cur.execute("SELECT count(*) FROM t WHERE id < 10")
                    outcomes["ok"] += 1
                except Exception as err:
                    outcomes[type(err).__name__] += 1
                    await asyncio.sleep(0.02)
                del started[w]
                durations.append(time.monotonic() - t0)
                await asyncio.sleep(0.005)

        async def watch() -> None:
            dumped = False
            while not stop.is_set():
                await asyncio.sleep(0.5)
                oldest = min(started.values(), default=time.monotonic())
                if time.monotonic() - oldest > STUCK_S:
                    if not dumped:
                        _dump(pool)
                    dumped = True
                else:
                    dumped = False

        tasks = [asyncio.create_task(worker(w)) for w in range(workers)]
        tasks.append(asyncio.create_task(watch()))
        await _restart(pg, rounds, outcomes)
        await asyncio.sleep(2.0)
        stop.set()
        await asyncio.wait(tasks, timeout=60)
        pool.terminate()
        return {
            "rounds": rounds,
            "workers": workers,
            "nudge_s": db.NUDGE_S,
            "outcomes": dict(outcomes),
            "stuck": sum(d > STUCK_S for d in durations),
            "longest_s": round(max(durations, default=0.0), 2),
        }
    finally:
        await asyncio.to_thread(pg.destroy)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--no-nudge", action="store_true", help="db.NUDGE_S off, as before")
    parser.add_argument("--tally", help="also write the tally to this file")
    args = parser.parse_args()
    if args.no_nudge:
        db.NUDGE_S = 1e9
    tally = uvloop.run(main(args.rounds, args.workers))
    print(json.dumps(tally), flush=True)
    if args.tally:
        with open(args.tally, "w") as f:
            f.write(json.dumps(tally) + "\n")
