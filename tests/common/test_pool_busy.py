"""Every pooled connection in use past DB_POOL_TIMEOUT_S: 503 `service_unavailable` with
`Retry-After`, in the gateway and in every service, where aiopg's bare TimeoutError was a 500.

A system of its own whose processes each have two pooled connections (analytics keeps one
beside its export slot) and wait 0.5 s for one. A table lock taken here holds the requests that
read it, each on one of its process's connections; the requests after them find none free.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator

import aiohttp
import psycopg2
import pytest

from tests.support.api import Api, Resp, make_key, make_workspace
from tests.support.processes import System, create_database, delete_queues, drop_database

# (what is locked, what reads it through the gateway)
READS = {
    "gateway": ("gateway.rate_counters", "/api/v1/ideas"),
    "ideas": ("ideas.ideas", "/api/v1/ideas"),
    "customers": ("customers.customers", "/api/v1/customers"),
    "webhooks": ("webhooks.subscriptions", "/api/v1/webhooks"),
    "analytics": ("ideas.ideas", "/api/v1/analytics/summary"),
}


@pytest.fixture(scope="module")
async def busy() -> AsyncIterator[System]:
    url = create_database()
    prefix = f"imspool{secrets.token_hex(4)}"
    system = System(
        url,
        prefix,
        env_overrides={
            "DB_POOL_MIN": "1",
            "DB_POOL_MAX": "2",
            "DB_POOL_TIMEOUT_S": "0.5",
            "EXPORT_CONCURRENCY": "1",
        },
    )
    system.start()
    try:
        await system.wait_ready()
        yield system
    finally:
        system.stop()
        await delete_queues(prefix)
        drop_database(url)


async def _while_locked(api: Api, table: str, path: str, url: str) -> list[Resp]:
    """Four requests, 0.3 s apart, while `table` is locked: the first two take the process's
    two connections and wait on the lock, the others find none free. The lock goes after
    2.5 s. (Apart in time: the gateway's rate windows would take hits that arrive together in
    one statement, on one connection.)"""
    conn = psycopg2.connect(url)
    try:
        with conn.cursor() as cur:
            cur.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            calls = []
            for _ in range(4):
                calls.append(asyncio.create_task(api.get(path, check=False)))
                await asyncio.sleep(0.3)
            await asyncio.sleep(1.3)
        conn.rollback()
        async with asyncio.timeout(30):
            return await asyncio.gather(*calls)
    finally:
        conn.close()


@pytest.mark.parametrize("process", list(READS))
async def test_no_free_connection_is_503_with_retry_after(busy: System, process: str) -> None:
    ws = make_workspace(busy.database_url)
    async with aiohttp.ClientSession() as http:
        api = Api(http, busy.base_url, make_key(busy.database_url, ws["id"])["key"], None)
        table, path = READS[process]
        assert (await api.get(path)).status == 200  # the key is known, the process warm
        answers = await _while_locked(api, table, path, busy.database_url)
        statuses = sorted(r.status for r in answers)
        assert set(statuses) <= {200, 503} and 503 in statuses, statuses
        for r in answers:
            if r.status == 503:
                assert r.error["code"] == "service_unavailable"
                assert r.headers["Retry-After"] == "1"
        assert (await api.get(path)).status == 200  # and the process answers again
