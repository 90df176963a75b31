"""A system of its own for the hostile-input tests (schema fuzzing, route-table matrices).

Its own database, so its rate windows are its own: these tests send hundreds of calls without a
key or with invented keys, which would use up the 127.0.0.1 per-address window of the shared
system (60 per minute) and turn other tests' unauthenticated calls into 429s. For the same
reason its per-address and export limits are raised: the limits have their own tests
(tests/gateway/test_address_limit.py, tests/analytics/test_exports.py), and here they would only
hide what is behind them.

Webhooks: the first attempt of a delivery waits an hour (the run is over long before), private
and http targets are refused as in production: subscriptions made from fuzzed URLs never make
the dispatcher connect anywhere.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import aiohttp
import pytest

from tests.support.api import Api, Workspace, make_key, make_workspace
from tests.support.openapi_check import OpenApi
from tests.support.processes import System, create_database, delete_queues, drop_database

ISOLATED_ENV = {
    "UNAUTHENTICATED_RPM": "1000000",
    "EXPORT_PER_HOUR": "1000000",
    # two fuzzing workers may export at once: neither bound may refuse them (docs/analytics.md)
    "EXPORT_CONCURRENCY": "3",
    "EXPORT_CONCURRENCY_PER_WORKSPACE": "2",
    "WEBHOOK_RETRY_SCHEDULE": "3600",
    "WEBHOOK_ALLOW_PRIVATE_TARGETS": "0",
    "WEBHOOK_ALLOW_HTTP": "0",
}


@pytest.fixture(scope="package")
async def isolated() -> AsyncIterator[System]:
    url = create_database()
    prefix = f"imssec{secrets.token_hex(4)}"
    system = System(url, prefix, env_overrides=ISOLATED_ENV)
    system.start()
    try:
        await system.wait_ready()
        yield system
    finally:
        codes = system.stop()
        await delete_queues(prefix)
        drop_database(url)
    bad = {svc: c for svc, c in codes.items() if any(code != 0 for code in c)}
    assert not bad, f"processes did not shut down cleanly on SIGTERM: {bad}"


@pytest.fixture(scope="package")
async def isolated_openapi(isolated: System, http: aiohttp.ClientSession) -> OpenApi:
    async with http.get(isolated.base_url + "/api/v1/openapi.json") as r:
        assert r.status == 200
        return OpenApi(await r.json())


def workspace_in(
    system: System,
    http: aiohttp.ClientSession,
    openapi: OpenApi | None,
    *,
    plan: str = "enterprise",
    scopes: str = "all",
) -> Workspace:
    """A workspace of `system` with one key; its rate limit is out of the way."""
    ws = make_workspace(system.database_url, plan=plan, rate_limit=10_000_000)
    key = make_key(system.database_url, ws["id"], scopes=scopes)
    return Workspace(
        ws["id"], key["key"], key["id"], Api(http, system.base_url, key["key"], openapi), plan
    )
