"""SSRF refusals with WEBHOOK_ALLOW_PRIVATE_TARGETS=0: at creation for IP literals, and at
connect time for names, on the address actually resolved."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.webhooks.support import (PartSystem, Receiver, publish, sample_idea,
                                    start_part_system, stop_part_system, workspace_api)

PRIVATE_LITERALS = ["127.0.0.1", "10.1.2.3", "172.16.0.9", "192.168.1.1", "169.254.169.254",
                    "0.0.0.0", "224.0.0.1", "240.0.0.1", "100.64.0.1", "[::1]",
                    "[::ffff:127.0.0.1]", "[fe80::1]", "[fc00::1]"]


@pytest.fixture(scope="module")
async def guarded() -> AsyncIterator[PartSystem]:
    sys_ = await start_part_system({"WEBHOOK_ALLOW_PRIVATE_TARGETS": "0",
                                    "WEBHOOK_ALLOW_HTTP": "1"})
    yield sys_
    await stop_part_system(sys_)


@pytest.fixture
def client(guarded: PartSystem, http: Any, openapi: Any) -> tuple[str, Any]:
    return workspace_api(guarded, http, openapi)


async def test_private_ip_literals_refused_at_creation(client: Any) -> None:
    """A targetUrl or hookUrl naming a non-public address answers 400."""
    _, api = client
    for host in PRIVATE_LITERALS:
        r = await api.post("/api/v1/webhooks", json={"targetUrl": f"https://{host}/hook",
                                                     "events": ["idea.created"]})
        assert r.status == 400 and r.error["field"] == "targetUrl", host
        r = await api.post("/api/v1/automation/webhooks/subscribe",
                           json={"hookUrl": f"https://{host}/hook"})
        assert r.status == 400 and r.error["field"] == "hookUrl", host


async def test_public_literal_accepted(client: Any) -> None:
    """A public IP literal is a valid target."""
    _, api = client
    r = await api.post("/api/v1/webhooks", json={"targetUrl": "https://93.184.216.34/hook",
                                                 "events": ["idea.created"]})
    assert r.status == 200


async def test_name_resolving_to_loopback_refused_at_delivery(guarded: PartSystem, client: Any,
                                                              receiver: Receiver) -> None:
    """`localhost` passes creation, but the connection is refused on its resolved address."""
    ws_id, api = client
    path = receiver.new_path()
    r = await api.post("/api/v1/webhooks", json={"targetUrl": receiver.url(path, "localhost"),
                                                 "events": ["idea.created"]})
    assert r.status == 200
    sub = r.data
    publish(guarded.database_url, "idea.created", ws_id, {"idea": sample_idea()})
    deadline = time.monotonic() + 15
    while True:
        d = (await api.get(f"/api/v1/webhooks/{sub['id']}")).data
        if d["recentDeliveries"] and d["recentDeliveries"][0]["status"] == "failed":
            break
        assert time.monotonic() < deadline, d
        await asyncio.sleep(0.2)
    assert d["lastError"].startswith("target refused"), d["lastError"]
    assert d["recentDeliveries"][0]["attemptCount"] == 3
    assert receiver.at(path) == []
