"""Exports cannot pin the analytics pool (issue 11, defect 3): a client that reads slowly is cut
off and its pooled connection comes back; the slots bound how many run; others still export.

A system of its own (gateway and analytics) with short bounds: two export slots, one per
workspace, a write timeout of 2 s per 64 KiB, a deadline of 6 s and statements limited to 2 s."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import psycopg2
import pytest

from libs.common.caller import H_TOKEN, H_WORKSPACE
from tests.support.api import Api
from tests.support.openapi_check import OpenApi
from tests.webhooks.support import PartSystem, start_part_system, stop_part_system, workspace_api

from .data import Db

WRITE_TIMEOUT_S, DEADLINE_S, STATEMENT_TIMEOUT_S = 2, 6, 2
EXPORT = "/api/v1/export/ideas"
TCP_CLOSE, TCP_CLOSE_WAIT = 7, 8  # tcpi_state of Linux's TCP_INFO
# ~5 KB each: ~10 MB of JSON, far more than every socket buffer on the way; the steady reader
# (64 KiB every 50 ms at most) needs at least 7.8 s for it, past the deadline.
FAT_IDEAS = 2000


@pytest.fixture(scope="module")
async def bounded() -> AsyncIterator[PartSystem]:
    env = {
        "EXPORT_CONCURRENCY": "2",
        "EXPORT_CONCURRENCY_PER_WORKSPACE": "1",
        "EXPORT_WRITE_TIMEOUT_S": str(WRITE_TIMEOUT_S),
        "EXPORT_DEADLINE_S": str(DEADLINE_S),
        "EXPORT_PER_HOUR": "1000",
        "DB_STATEMENT_TIMEOUT_S": str(STATEMENT_TIMEOUT_S),
    }
    sys_ = await start_part_system(env, ("gateway", "analytics"))
    yield sys_
    await stop_part_system(sys_)


def fat_ideas(database_url: str, workspace_id: str) -> None:
    conn = psycopg2.connect(database_url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute(
                """
                INSERT INTO ideas.ideas (workspace_id, id, number, title, title_key, status,
                                         summary, created_at)
                SELECT %s, gen_random_uuid(), n, 'Fat idea ' || n, 'fat idea ' || n, 'new',
                       repeat('x', 5000), now() - n * interval '1 second'
                  FROM generate_series(1, %s) n""",
                (workspace_id, FAT_IDEAS),
            )
    finally:
        conn.close()


@dataclass
class Reading:
    status_line: bytes = b""
    received: int = 0
    complete: bool = False  # the chunked body's last chunk arrived
    elapsed: float = 0.0


async def read_slowly(
    base_url: str, headers: dict[str, str], chunk: int, pause: float, started: asyncio.Event
) -> Reading:
    """GET an export over a raw socket, `chunk` bytes every `pause` seconds, to the end."""
    url = urlsplit(base_url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096 if chunk < 1024 else 65536)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (url.hostname, url.port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=max(chunk, 1024))
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    writer.write(f"GET {EXPORT} HTTP/1.1\r\nHost: {url.netloc}\r\n{lines}\r\n".encode())
    reading, tail, t0 = Reading(), b"", time.monotonic()
    try:
        reading.status_line = await reader.readline()
        started.set()
        while not server_ended(sock):
            data = await reader.read(chunk)
            if not data:
                break
            reading.received += len(data)
            tail = (tail + data)[-16:]
            await asyncio.sleep(pause)
    except ConnectionError:
        pass  # the reset of a cut-off
    finally:
        started.set()
        reading.elapsed = time.monotonic() - t0
        reading.complete = tail.endswith(b"\r\n0\r\n\r\n")
        writer.close()
    return reading


def server_ended(sock: socket.socket) -> bool:
    """Whether the server reset or closed the connection. A slow reader would otherwise see it
    only after reading what its buffers already hold, which takes minutes at a byte a time."""
    state = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]
    return state in (TCP_CLOSE, TCP_CLOSE_WAIT)


async def metric(http: aiohttp.ClientSession, sys_: PartSystem, sample: str) -> float:
    async with http.get(sys_.service_url("analytics") + "/metrics") as r:
        text = await r.text()
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(sample + " ")
    )


def export_sessions(database_url: str) -> list[tuple[str, str]]:
    """The analytics pool's sessions that are in a transaction or running a statement."""
    conn = psycopg2.connect(database_url)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("""SELECT state, query FROM pg_stat_activity
                            WHERE datname = current_database()
                              AND application_name = 'ims-analytics'
                              AND state IN ('active', 'idle in transaction',
                                            'idle in transaction (aborted)')""")
            return [(r[0], r[1]) for r in cur.fetchall()]
    finally:
        conn.close()


async def until(check: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await check() if asyncio.iscoroutinefunction(check) else check()
        if value or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.1)


def bearer(api: Api) -> dict[str, str]:
    return {"Authorization": f"Bearer {api.key}"}


async def test_slow_clients_are_cut_off_and_free_their_slots_and_connections(
    bounded: PartSystem, http: aiohttp.ClientSession
) -> None:
    """Through the gateway: a byte-at-a-time reader is cut off by the write timeout, a steady
    slow one by the deadline; beyond its workspace's slot 429, beyond the process's 503, both
    with Retry-After; others still export."""
    async with http.get(bounded.base_url + "/api/v1/openapi.json") as r:
        openapi = OpenApi(await r.json())
    (ws1, api1), (ws2, api2), (ws3, api3) = [
        workspace_api(bounded, http, openapi) for _ in range(3)
    ]
    for ws in (ws1, ws2):
        await asyncio.to_thread(fat_ideas, bounded.database_url, ws)
    small_db = Db(bounded.database_url, ws3)  # the ideas service is not part of this system
    small_db.idea("A small export")
    small_db.close()
    deadlines = await metric(http, bounded, 'ims_exports_cut_off_total{reason="deadline"}')
    one_byte, steady = asyncio.Event(), asyncio.Event()
    byte_reader = asyncio.create_task(
        read_slowly(bounded.base_url, bearer(api1), 1, 0.05, one_byte)
    )
    steady_reader = asyncio.create_task(
        read_slowly(bounded.base_url, bearer(api2), 65536, 0.05, steady)
    )
    await asyncio.wait_for(asyncio.gather(one_byte.wait(), steady.wait()), 10)

    await refused(api1, "workspace")  # ws1 already runs its one export
    await refused(api3, "Too many")  # both slots are taken
    assert await metric(http, bounded, 'ims_exports_refused_total{bound="workspace"}') >= 1
    assert await metric(http, bounded, 'ims_exports_refused_total{bound="process"}') >= 1

    first = await asyncio.wait_for(byte_reader, DEADLINE_S + 10)
    assert first.status_line.startswith(b"HTTP/1.1 200") and not first.complete, first
    assert first.elapsed < DEADLINE_S - 1, first  # the write timeout, not the deadline
    assert not steady_reader.done()
    small = await api3.get(EXPORT)  # its slot is free again while the slow one runs
    assert small.status == 200 and [i["title"] for i in small.json] == ["A small export"]

    second = await asyncio.wait_for(steady_reader, DEADLINE_S + 30)
    assert second.status_line.startswith(b"HTTP/1.1 200") and not second.complete, second
    assert second.received > 1_000_000 and second.elapsed >= DEADLINE_S - 1, second
    assert (
        await metric(http, bounded, 'ims_exports_cut_off_total{reason="deadline"}') == deadlines + 1
    )

    # The cut-off exports gave their connections back: none is left in a transaction.
    assert await until(lambda: not export_sessions(bounded.database_url)), export_sessions(
        bounded.database_url
    )
    whole = await api1.get(EXPORT, params={"limit": 10})
    assert whole.status == 200 and len(whole.json) == 10


async def test_the_analytics_service_cuts_off_a_slow_reader_itself(
    bounded: PartSystem, http: aiohttp.ClientSession
) -> None:
    """Straight to the service (as a stuck gateway would read): its own write timeout ends
    the export, rolls its transaction back and frees its slot."""
    ws, api = workspace_api(bounded, http, None)
    await asyncio.to_thread(fat_ideas, bounded.database_url, ws)
    sample = 'ims_exports_cut_off_total{reason="write_timeout"}'
    before = await metric(http, bounded, sample)
    caller = {H_TOKEN: bounded.internal_token, H_WORKSPACE: ws}
    reading = await asyncio.wait_for(
        read_slowly(bounded.service_url("analytics"), caller, 1, 0.05, asyncio.Event()),
        DEADLINE_S + 10,
    )
    assert reading.status_line.startswith(b"HTTP/1.1 200") and not reading.complete, reading
    assert reading.elapsed < DEADLINE_S - 1, reading
    assert await metric(http, bounded, sample) == before + 1
    assert await until(lambda: not export_sessions(bounded.database_url)), export_sessions(
        bounded.database_url
    )
    again = await api.get(EXPORT, params={"limit": 1}, check=False)
    assert again.status == 200 and len(again.json) == 1


async def refused(api: Api, words: str) -> None:
    r = await api.get(EXPORT, params={"limit": 1})
    want = (429, "rate_limited") if words == "workspace" else (503, "service_unavailable")
    assert (r.status, r.error["code"]) == want, r.json
    assert r.headers["Retry-After"] == "5" and words in r.error["message"], r.json


async def test_a_statement_past_its_timeout_answers_503_and_the_next_call_works(
    bounded: PartSystem, http: aiohttp.ClientSession
) -> None:
    """A report blocked behind a lock hits the analytics pool's statement_timeout: a prompt 503
    with Retry-After, not a request that hangs or a dropped connection."""
    _, api = workspace_api(bounded, http, None)
    conn = psycopg2.connect(bounded.database_url)
    try:
        with conn.cursor() as cur:  # holds the lock until the rollback below
            cur.execute("LOCK TABLE customers.customers IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        r = await api.get("/api/v1/analytics/summary", check=False)
        waited = time.monotonic() - started
    finally:
        conn.rollback()
        conn.close()
    assert r.status == 503 and r.error["code"] == "service_unavailable", r.body
    assert r.headers["Retry-After"] == "1" and waited < STATEMENT_TIMEOUT_S + 5, waited
    assert (await api.get("/api/v1/analytics/summary", check=False)).status == 200
