"""An export the analytics service refuses for want of a slot does not spend the workspace's
hourly export window (docs/gateway.md#rate-limits).

A system of its own (gateway and analytics): three exports an hour, one export at a time per
workspace and one in the process, so one held export makes the others' refusals."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import aiohttp
import pytest

from tests.gateway.conftest import clear_of_window_edge
from tests.support.api import Api
from tests.webhooks.support import PartSystem, start_part_system, stop_part_system, workspace_api

from .test_export_bounds import EXPORT, bearer, export_sessions, fat_ideas, until

PER_HOUR = 3


@pytest.fixture(scope="module")
async def one_slot() -> AsyncIterator[PartSystem]:
    env = {
        "EXPORT_CONCURRENCY": "1",
        "EXPORT_CONCURRENCY_PER_WORKSPACE": "1",
        "EXPORT_PER_HOUR": str(PER_HOUR),
    }
    sys_ = await start_part_system(env, ("gateway", "analytics"))
    yield sys_
    await stop_part_system(sys_)


async def held_export(base_url: str, api: Api) -> socket.socket:
    """An export started and not read: it holds its slot while its answer fills the buffers."""
    url = urlsplit(base_url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (url.hostname, url.port))
    lines = "".join(f"{k}: {v}\r\n" for k, v in bearer(api).items())
    await loop.sock_sendall(sock, f"GET {EXPORT} HTTP/1.1\r\nHost: x\r\n{lines}\r\n".encode())
    head = await asyncio.wait_for(loop.sock_recv(sock, 12), 10)
    assert head == b"HTTP/1.1 200", head
    return sock


async def exports_left(api: Api) -> int:
    """Export until the window refuses; how many ran."""
    ran = 0
    while True:
        r = await api.get(EXPORT, params={"limit": 1})
        if r.status != 200:
            assert (r.status, r.error["code"]) == (429, "rate_limited"), r.json
            assert "per hour" in r.error["message"] and int(r.headers["Retry-After"]) > 0
            return ran
        ran += 1


async def test_refused_exports_do_not_spend_the_hourly_window(
    one_slot: PartSystem, http: aiohttp.ClientSession
) -> None:
    """While an export holds the only slot: the same workspace's exports are refused 429 (its
    slot), another's 503 (the process's), each with Retry-After; none of them is counted, so
    afterwards each workspace still has what it had left of its hour."""
    (ws1, api1), (_, api2) = (workspace_api(one_slot, http, None) for _ in range(2))
    await asyncio.to_thread(fat_ideas, one_slot.database_url, ws1)
    await clear_of_window_edge(3600, margin=30)
    holder = await held_export(one_slot.base_url, api1)
    try:
        for api, status in ((api1, 429), (api2, 503)) * 4:
            r = await api.get(EXPORT, params={"limit": 1})
            assert r.status == status and r.headers["Retry-After"] == "5", r.json
            assert "per hour" not in r.error["message"]
    finally:
        holder.close()
    assert await until(lambda: not export_sessions(one_slot.database_url))
    await asyncio.sleep(0.2)  # the slot is let go as the export's transaction ends
    started = time.monotonic()
    assert await exports_left(api1) == PER_HOUR - 1  # the held one counted
    assert await exports_left(api2) == PER_HOUR
    assert time.monotonic() - started < 30
