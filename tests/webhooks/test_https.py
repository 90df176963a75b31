"""HTTPS receivers with a test CA (WEBHOOK_CA_FILE), http refused, deactivation, automation hooks."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import trustme

from tests.support.rendering import DATE_TIME
from tests.webhooks.support import (
    PartSystem,
    Receiver,
    publish,
    sample_idea,
    start_part_system,
    stop_part_system,
    verify,
    workspace_api,
)

CA = trustme.CA()


def server_context(ca: trustme.CA) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
    return ctx


@pytest.fixture(scope="module")
async def secure(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[PartSystem]:
    """Trusts the test CA, refuses http targets, deactivates on the first failed delivery."""
    pem = tmp_path_factory.mktemp("ca") / "ca.pem"
    CA.cert_pem.write_to_path(str(pem))
    sys_ = await start_part_system(
        {"WEBHOOK_CA_FILE": str(pem), "WEBHOOK_ALLOW_HTTP": "0", "WEBHOOK_DISABLE_AFTER_S": "0"},
        services=("gateway", "webhooks", "ideas"),
    )
    yield sys_
    await stop_part_system(sys_)


@pytest.fixture(scope="module")
async def tls_receiver() -> AsyncIterator[Receiver]:
    r = await Receiver(ssl_context=server_context(CA)).start()
    yield r
    await r.stop()


@pytest.fixture
def client(secure: PartSystem, http: Any, openapi: Any) -> tuple[str, Any]:
    return workspace_api(secure, http, openapi)


async def detail_when(api: Any, sub_id: str, done: Any, timeout: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        d = (await api.get(f"/api/v1/webhooks/{sub_id}")).data
        if done(d):
            return d  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, d
        await asyncio.sleep(0.2)


async def test_https_delivery_verifies(
    secure: PartSystem, client: Any, tls_receiver: Receiver
) -> None:
    """A receiver whose certificate chains to WEBHOOK_CA_FILE gets the signed event."""
    ws_id, api = client
    path = tls_receiver.new_path()
    sub = (
        await api.post(
            "/api/v1/webhooks",
            json={"targetUrl": tls_receiver.url(path), "events": ["idea.updated"]},
        )
    ).data
    idea = sample_idea()
    event_id = publish(secure.database_url, "idea.updated", ws_id, {"idea": idea})
    (r,) = await tls_receiver.wait(path)
    assert verify(sub["secret"], r) and r.json["id"] == event_id
    assert r.json["data"] == {"idea": idea}
    assert r.headers["X-Service-Event"] == "idea.updated"


async def test_http_targets_refused_when_not_allowed(client: Any) -> None:
    """Without WEBHOOK_ALLOW_HTTP, an http:// target answers 400 on targetUrl."""
    _, api = client
    r = await api.post(
        "/api/v1/webhooks",
        json={"targetUrl": "http://example.com/hook", "events": ["idea.created"]},
    )
    assert r.status == 400 and r.error["field"] == "targetUrl"


async def test_untrusted_certificate_fails(secure: PartSystem, client: Any) -> None:
    """A certificate from an unknown CA is a failed attempt (TLS error); nothing is received."""
    ws_id, api = client
    stranger = await Receiver(ssl_context=server_context(trustme.CA())).start()
    try:
        path = stranger.new_path()
        sub = (
            await api.post(
                "/api/v1/webhooks",
                json={"targetUrl": stranger.url(path), "events": ["idea.created"]},
            )
        ).data
        publish(secure.database_url, "idea.created", ws_id, {"idea": sample_idea()})
        d = await detail_when(api, sub["id"], lambda d: d["failureCount"] >= 1)
        assert "certificate" in d["lastError"] or "TLS" in d["lastError"], d["lastError"]
        assert stranger.at(path) == []
    finally:
        await stranger.stop()


async def test_failing_subscription_is_deactivated(
    secure: PartSystem, client: Any, tls_receiver: Receiver
) -> None:
    """A delivery that ends failed with no success within WEBHOOK_DISABLE_AFTER_S (0 here)
    deactivates the subscription; later events are not delivered."""
    ws_id, api = client
    path = tls_receiver.new_path()
    tls_receiver.answer(path, 500)
    sub = (
        await api.post(
            "/api/v1/webhooks",
            json={"targetUrl": tls_receiver.url(path), "events": ["idea.created"]},
        )
    ).data
    publish(secure.database_url, "idea.created", ws_id, {"idea": sample_idea()})
    d = await detail_when(api, sub["id"], lambda d: not d["isActive"])
    assert d["recentDeliveries"][0]["status"] == "failed"
    assert d["recentDeliveries"][0]["attemptCount"] == 3 and d["failureCount"] == 3
    publish(secure.database_url, "idea.created", ws_id, {"idea": sample_idea()})
    await asyncio.sleep(1.0)
    assert len(tls_receiver.at(path)) == 3


async def test_new_idea_reaches_hooks(
    secure: PartSystem, client: Any, tls_receiver: Receiver
) -> None:
    """A new idea is POSTed to each new_idea hook with the spec's fields."""
    ws_id, api = client
    path = tls_receiver.new_path()
    r = await api.post(
        "/api/v1/automation/webhooks/subscribe",
        json={"hookUrl": tls_receiver.url(path), "event": "new_idea"},
    )
    assert r.status == 201
    idea = sample_idea()
    publish(secure.database_url, "idea.created", ws_id, {"idea": idea})
    publish(secure.database_url, "idea.updated", ws_id, {"idea": idea})  # not a new idea
    (got,) = await tls_receiver.wait(path)
    assert got.headers["Content-Type"] == "application/json"
    assert got.json == {
        k: idea[k]
        for k in ("id", "title", "summary", "source", "authorName", "url", "category", "createdAt")
    }
    await asyncio.sleep(0.5)
    assert len(tls_receiver.at(path)) == 1


async def test_hook_optional_fields_left_out(
    secure: PartSystem, client: Any, tls_receiver: Receiver
) -> None:
    """An idea without url or category gives a body without them."""
    ws_id, api = client
    path = tls_receiver.new_path()
    await api.post(
        "/api/v1/automation/webhooks/subscribe", json={"hookUrl": tls_receiver.url(path)}
    )
    idea = sample_idea(url=None, category=None, summary=None)
    publish(secure.database_url, "idea.created", ws_id, {"idea": idea})
    (got,) = await tls_receiver.wait(path)
    assert set(got.json) == {"id", "title", "summary", "source", "authorName", "createdAt"}
    assert got.json["summary"] == ""


async def test_hook_retries_then_unsubscribe_stops(
    secure: PartSystem, client: Any, tls_receiver: Receiver
) -> None:
    """A failed hook delivery is retried with the same body; after DELETE nothing arrives."""
    ws_id, api = client
    path = tls_receiver.new_path()
    tls_receiver.answer(path, 500, 200)
    hook = (
        await api.post(
            "/api/v1/automation/webhooks/subscribe", json={"hookUrl": tls_receiver.url(path)}
        )
    ).json
    publish(secure.database_url, "idea.created", ws_id, {"idea": sample_idea()})
    got = await tls_receiver.wait(path, 2)
    assert got[0].body == got[1].body
    assert got[0].headers["X-Service-Delivery"] == got[1].headers["X-Service-Delivery"]
    r = await api.delete(f"/api/v1/automation/webhooks/subscribe/{hook['id']}")
    assert r.status == 200
    publish(secure.database_url, "idea.created", ws_id, {"idea": sample_idea()})
    await asyncio.sleep(1.0)
    assert len(tls_receiver.at(path)) == 2


async def test_hook_answering_gone_is_removed(
    secure: PartSystem, client: Any, tls_receiver: Receiver
) -> None:
    """A hook that answers 410 is removed (the REST Hooks convention)."""
    ws_id, api = client
    path = tls_receiver.new_path()
    tls_receiver.answer(path, 410)
    hook = (
        await api.post(
            "/api/v1/automation/webhooks/subscribe", json={"hookUrl": tls_receiver.url(path)}
        )
    ).json
    publish(secure.database_url, "idea.created", ws_id, {"idea": sample_idea()})
    await tls_receiver.wait(path)
    await asyncio.sleep(1.0)  # the outcome is recorded within milliseconds
    publish(secure.database_url, "idea.created", ws_id, {"idea": sample_idea()})
    await asyncio.sleep(1.0)
    assert len(tls_receiver.at(path)) == 1
    r = await api.delete(f"/api/v1/automation/webhooks/subscribe/{hook['id']}")
    assert r.status == 404


async def test_automation_idea_reaches_hook_with_author(
    client: Any, tls_receiver: Receiver
) -> None:
    """An idea created through the automation API is POSTed to the hook with its author."""
    _, api = client
    path = tls_receiver.new_path()
    await api.post(
        "/api/v1/automation/webhooks/subscribe", json={"hookUrl": tls_receiver.url(path)}
    )
    r = await api.post(
        "/api/v1/automation/ideas",
        json={
            "title": "Export to CSV",
            "summary": "From chat",
            "source": "slack",
            "authorName": "Grace",
            "url": "https://chat.example.com/m/1",
        },
    )
    assert r.status == 201, r.body
    (got,) = await tls_receiver.wait(path)
    body = got.json
    assert body["id"] == r.json["id"] and body["title"] == "Export to CSV"
    assert body["authorName"] == "Grace" and body["source"] == "slack"
    assert body["summary"] == "From chat" and body["url"] == "https://chat.example.com/m/1"
    assert "createdAt" in body and "category" not in body


async def test_main_api_idea_reaches_hook(client: Any, tls_receiver: Receiver) -> None:
    """An idea created through the main API reaches the hook too, its fields in the spec's
    order, compact, createdAt as the API wrote it."""
    _, api = client
    path = tls_receiver.new_path()
    await api.post(
        "/api/v1/automation/webhooks/subscribe", json={"hookUrl": tls_receiver.url(path)}
    )
    r = await api.post(
        "/api/v1/ideas",
        json={"title": "Main API idea", "category": "bug", "url": "https://x.example/1"},
    )
    (got,) = await tls_receiver.wait(path)
    assert got.json["id"] == r.data["id"] and got.json["category"] == "bug"
    assert got.json["authorName"] == ""
    assert list(got.json) == [
        "id",
        "title",
        "summary",
        "source",
        "authorName",
        "url",
        "category",
        "createdAt",
    ]
    assert got.json["createdAt"] == r.data["createdAt"] and DATE_TIME.match(r.data["createdAt"])
    assert got.body == orjson.dumps(got.json)
