"""Every pool's sessions carry a statement timeout and an idle-in-transaction timeout, each
process its own (issue 11, defect 3); a statement the server cancels is a 503, not a
cancellation of the task that ran it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import psycopg2
import pytest

from libs.common import db
from libs.common.errors import QueryTimeout
from libs.common.settings import Settings
from services.analytics.settings import AnalyticsSettings
from services.customers.settings import CustomersSettings
from services.gateway.settings import GatewaySettings
from services.ideas.settings import IdeasSettings
from services.webhooks.settings import WebhooksSettings

PROCESSES: dict[str, type[Settings]] = {
    "gateway": GatewaySettings,
    "ideas": IdeasSettings,
    "customers": CustomersSettings,
    "webhooks": WebhooksSettings,
    "analytics": AnalyticsSettings,
}

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {
    "INTERNAL_TOKEN": "Kx8-" + "q1W2e3R4t5Y6u7I8o9P0" * 2,
    "CURSOR_SECRET": "Cz7-" + "a1S2d3F4g5H6j7K8l9Z0" * 2,
}


async def session_timeouts(pool: object) -> tuple[str, str]:
    async with db.cursor(pool) as cur:  # type: ignore[arg-type]
        await cur.execute(
            "SELECT current_setting('statement_timeout'),"
            " current_setting('idle_in_transaction_session_timeout')"
        )
        row = await cur.fetchone()
    return row[0], row[1]


async def test_each_process_pool_has_its_own_timeouts(database_url: str) -> None:
    """The sessions of each process's pool carry that process's two timeouts."""
    seen = {}
    for process, kind in PROCESSES.items():
        settings = kind.from_env(SECRETS)
        pool = await db.create_pool(database_url, timeouts=settings.db_timeouts())
        try:
            seen[process] = await session_timeouts(pool)
        finally:
            pool.close()
            await pool.wait_closed()
    assert seen == {
        "gateway": ("5s", "10s"),
        "ideas": ("30s", "30s"),
        "customers": ("30s", "30s"),
        "webhooks": ("30s", "30s"),
        "analytics": ("1min", "150s"),
    }


def test_timeouts_are_configurable_by_environment() -> None:
    """DB_STATEMENT_TIMEOUT_S and DB_IDLE_TX_TIMEOUT_S override every process's defaults."""
    env = {**SECRETS, "DB_STATEMENT_TIMEOUT_S": "2.5"}
    assert GatewaySettings.from_env(env).db_timeouts() == (2.5, 10.0)
    assert AnalyticsSettings.from_env(env).db_timeouts() == (2.5, 150.0)
    env = {**SECRETS, "DB_IDLE_TX_TIMEOUT_S": "7", "EXPORT_DEADLINE_S": "60"}
    assert IdeasSettings.from_env(env).db_timeouts() == (30.0, 7.0)
    assert AnalyticsSettings.from_env(env).db_timeouts() == (60.0, 7.0)
    assert AnalyticsSettings.from_env({**SECRETS, "EXPORT_DEADLINE_S": "60"}).db_timeouts() == (
        60.0,
        90.0,
    )


def test_every_pool_is_made_by_the_one_helper() -> None:
    """No code opens a pool but `db.create_pool`, so no pool goes without the timeouts."""
    offenders = [
        str(path.relative_to(ROOT))
        for base in ("services", "libs", "bench")
        for path in (ROOT / base).rglob("*.py")
        if re.search(r"aiopg\.(create_pool|Pool)\(", path.read_text())
        and path != ROOT / "libs" / "common" / "db.py"
    ]
    assert offenders == []


@pytest.fixture
async def strict(database_url: str):
    pool = await db.create_pool(database_url, timeouts=(0.3, 0.5), maxsize=2)
    yield pool
    pool.close()
    await pool.wait_closed()


async def test_a_statement_past_its_timeout_is_a_query_timeout(strict: object) -> None:
    """The server's cancel surfaces as QueryTimeout (503, Retry-After), not CancelledError,
    and the connection stays usable."""
    async with db.cursor(strict) as cur:  # type: ignore[arg-type]
        with pytest.raises(QueryTimeout) as caught:
            await cur.execute("SELECT pg_sleep(2)")
        assert caught.value.status == 503 and caught.value.headers == {"Retry-After": "1"}
        assert isinstance(caught.value.__cause__, psycopg2.errors.QueryCanceled)
        await cur.execute("SELECT 1")
        assert await cur.fetchone() == (1,)


async def test_a_cancelled_task_is_still_cancelled(strict: object) -> None:
    """A task cancelled while its statement runs ends with CancelledError, as before."""

    async def sleep() -> None:
        async with db.cursor(strict) as cur:  # type: ignore[arg-type]
            await cur.execute("SELECT pg_sleep(0.25)")
            await cur.execute("SELECT pg_sleep(0.25)")

    task = asyncio.create_task(sleep())
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_idle_transaction_is_ended_by_the_server(strict: object) -> None:
    """A transaction left idle past its limit is ended: its session is terminated."""
    async with db.cursor(strict) as cur:  # type: ignore[arg-type]
        await cur.execute("BEGIN")
        await asyncio.sleep(1.0)
        with pytest.raises(psycopg2.Error):
            await cur.execute("SELECT 1")
