"""SSRF refusals with WEBHOOK_ALLOW_PRIVATE_TARGETS=0: at creation for IP literals and for
hosts the HTTP client would read otherwise, and at connect time on every address actually
connected to, resolved or literal (also for rows written before the creation rules)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.webhooks.support import (
    PartSystem,
    Receiver,
    legacy_subscription,
    publish,
    sample_idea,
    start_part_system,
    stop_part_system,
    workspace_api,
)

PRIVATE_LITERALS = [
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.9",
    "192.168.1.1",
    "169.254.169.254",
    "0.0.0.0",
    "224.0.0.1",
    "240.0.0.1",
    "100.64.0.1",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[fe80::1]",
    "[fc00::1]",
]


@pytest.fixture(scope="module")
async def guarded() -> AsyncIterator[PartSystem]:
    sys_ = await start_part_system(
        {"WEBHOOK_ALLOW_PRIVATE_TARGETS": "0", "WEBHOOK_ALLOW_HTTP": "1"}
    )
    yield sys_
    await stop_part_system(sys_)


@pytest.fixture
def client(guarded: PartSystem, http: Any, openapi: Any) -> tuple[str, Any]:
    return workspace_api(guarded, http, openapi)


async def test_private_ip_literals_refused_at_creation(client: Any) -> None:
    """A targetUrl or hookUrl naming a non-public address answers 400."""
    _, api = client
    for host in PRIVATE_LITERALS:
        r = await api.post(
            "/api/v1/webhooks",
            json={"targetUrl": f"https://{host}/hook", "events": ["idea.created"]},
        )
        assert r.status == 400 and r.error["field"] == "targetUrl", host
        r = await api.post(
            "/api/v1/automation/webhooks/subscribe", json={"hookUrl": f"https://{host}/hook"}
        )
        assert r.status == 400 and r.error["field"] == "hookUrl", host


LOOPBACK_IN_DISGUISE = [
    "１２７.０.０.１",
    "127。0。0。1",
    "𝟏𝟐𝟕.𝟎.𝟎.𝟏",
    "127．0．0．1",
    "０．０．０．０",
    "127.1",
    "2130706433",
    "0x7f.1",
]


async def test_hosts_the_client_reads_as_loopback_refused_at_creation(
    client: Any, receiver: Receiver
) -> None:
    """Full-width digits, ideographic dots, mathematical digits and numeric shorthands that the
    HTTP client turns into 127.0.0.1 or 0.0.0.0: 400 on targetUrl and hookUrl."""
    _, api = client
    for host in LOOPBACK_IN_DISGUISE:
        r = await api.post(
            "/api/v1/webhooks",
            json={"targetUrl": f"https://{host}:{receiver.port}/hook", "events": ["idea.created"]},
        )
        assert r.status == 400 and r.error["field"] == "targetUrl", (host, r.body)
        r = await api.post(
            "/api/v1/automation/webhooks/subscribe",
            json={"hookUrl": f"https://{host}:{receiver.port}/hook"},
        )
        assert r.status == 400 and r.error["field"] == "hookUrl", (host, r.body)


async def failed_delivery(api: Any, sub_id: str, timeout: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        d = (await api.get(f"/api/v1/webhooks/{sub_id}")).data
        if d["recentDeliveries"] and d["recentDeliveries"][0]["status"] != "pending":
            return d  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, d
        await asyncio.sleep(0.2)


def legacy_subscriptions_notified(
    guarded: PartSystem, ws_id: str, receiver: Receiver, hosts: tuple[str, ...]
) -> dict[str, str]:
    """A subscription per host written before the host rules (receiver path -> its id), then
    an event they all get."""
    subs = {}
    for host in hosts:
        path = receiver.new_path()
        subs[path] = legacy_subscription(
            guarded.database_url, ws_id, f"http://{host}:{receiver.port}{path}"
        )
    publish(guarded.database_url, "idea.created", ws_id, {"idea": sample_idea()})
    return subs


async def test_old_rows_in_disguise_never_reach_loopback(
    guarded: PartSystem, client: Any, receiver: Receiver
) -> None:
    """A subscription written before the host rules, to a full-width or ideographic form of
    127.0.0.1, is refused at every attempt: nothing reaches the receiver."""
    ws_id, api = client
    subs = legacy_subscriptions_notified(
        guarded, ws_id, receiver, ("１２７.０.０.１", "127。0。0。1", "𝟏𝟐𝟕.𝟎.𝟎.𝟏")
    )
    for path, sub_id in subs.items():
        d = await failed_delivery(api, sub_id)
        assert d["recentDeliveries"][0]["status"] == "failed"
        assert d["recentDeliveries"][0]["attemptCount"] == 3
        assert d["lastError"] == "target refused: invalid host", d["lastError"]
        assert receiver.at(path) == []


async def test_private_literals_refused_at_connect(
    guarded: PartSystem, client: Any, receiver: Receiver
) -> None:
    """An IP literal never reaches a resolver: the connector refuses a private one on the
    address itself (an old row, created before literals were checked), saying only that."""
    ws_id, api = client
    subs = legacy_subscriptions_notified(
        guarded, ws_id, receiver, ("127.0.0.1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]")
    )
    for path, sub_id in subs.items():
        d = await failed_delivery(api, sub_id)
        assert d["recentDeliveries"][0]["status"] == "failed", d
        assert d["lastError"] == "target refused", d["lastError"]
        assert d["recentDeliveries"][0]["error"] == "target refused"
        assert receiver.at(path) == []


async def test_public_literal_accepted(client: Any) -> None:
    """A public IP literal is a valid target."""
    _, api = client
    r = await api.post(
        "/api/v1/webhooks",
        json={"targetUrl": "https://93.184.216.34/hook", "events": ["idea.created"]},
    )
    assert r.status == 200


async def test_name_resolving_to_loopback_refused_at_delivery(
    guarded: PartSystem, client: Any, receiver: Receiver
) -> None:
    """`localhost` passes creation, but the connection is refused on its resolved address."""
    ws_id, api = client
    path = receiver.new_path()
    r = await api.post(
        "/api/v1/webhooks",
        json={"targetUrl": receiver.url(path, "localhost"), "events": ["idea.created"]},
    )
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
    # Only that: never the address the name resolved to.
    assert d["lastError"] == "target refused", d["lastError"]
    assert d["recentDeliveries"][0]["attemptCount"] == 3
    assert receiver.at(path) == []


async def test_ping_to_a_refused_target_reports_it(client: Any, receiver: Receiver) -> None:
    """The test ping follows the target rules: a name resolving to loopback is success: false
    with the refusal, and nothing is sent."""
    _, api = client
    path = receiver.new_path()
    sub = (
        await api.post(
            "/api/v1/webhooks",
            json={"targetUrl": receiver.url(path, "localhost"), "events": ["idea.created"]},
        )
    ).data
    r = await api.post(f"/api/v1/webhooks/{sub['id']}/test")
    assert r.status == 200, r.body
    assert r.data == {
        "success": False,
        "statusCode": None,
        "durationMs": r.data["durationMs"],
        "error": "target refused",
    }
    assert receiver.at(path) == []
