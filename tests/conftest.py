"""Fixtures: one running system per test session (real processes, PostgreSQL, RabbitMQ)."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from tests.support.api import Api, Workspace, make_key, make_workspace
from tests.support.openapi_check import OpenApi
from tests.support.processes import System, create_database, delete_queues, drop_database

# The suite runs several systems at once (every process inherits this environment): small
# pools keep the whole run well inside PostgreSQL's default max_connections of 100.
os.environ.setdefault("DB_POOL_MAX", "4")


@pytest.fixture(scope="session")
def database_url() -> Any:
    url = create_database()
    yield url
    drop_database(url)


@pytest.fixture(scope="session")
async def system(database_url: str) -> AsyncIterator[System]:
    """Every service running as its own process, two gateways sharing the limits."""
    prefix = f"imstest{secrets.token_hex(4)}"
    sys_ = System(
        database_url,
        prefix,
        replicas={"gateway": 2},
        env_overrides={
            "WEBHOOK_RETRY_SCHEDULE": "0,1,1",
            "WEBHOOK_TIMEOUT_S": "2",
            "RETENTION_INTERVAL_S": "1",
        },
    )
    sys_.start()
    try:
        await sys_.wait_ready()
        yield sys_
    finally:
        codes = sys_.stop()
        await delete_queues(prefix)
    bad = {svc: c for svc, c in codes.items() if any(code != 0 for code in c)}
    assert not bad, f"processes did not shut down cleanly on SIGTERM: {bad}"


@pytest.fixture(scope="session")
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture(scope="session")
async def openapi(system: System, http: aiohttp.ClientSession) -> OpenApi:
    async with http.get(system.base_url + "/api/v1/openapi.json") as r:
        assert r.status == 200
        return OpenApi(await r.json())


WorkspaceFactory = Callable[..., Awaitable[Workspace]]


@pytest.fixture
def new_workspace(
    system: System, http: aiohttp.ClientSession, openapi: OpenApi
) -> WorkspaceFactory:
    """Make a workspace with an all-scope key; each test gets data of its own."""

    async def make(
        plan: str = "enterprise",
        rate_limit: int | None = 100_000,
        inbox_mode: str = "direct",
        scopes: str = "all",
        name: str | None = None,
    ) -> Workspace:
        ws = make_workspace(
            system.database_url, plan=plan, rate_limit=rate_limit, inbox_mode=inbox_mode, name=name
        )
        key = make_key(system.database_url, ws["id"], scopes=scopes)
        return Workspace(
            ws["id"], key["key"], key["id"], Api(http, system.base_url, key["key"], openapi), plan
        )

    return make


@pytest.fixture
async def ws(new_workspace: WorkspaceFactory) -> Workspace:
    return await new_workspace()


@pytest.fixture
def api(ws: Workspace) -> Api:
    return ws.api
