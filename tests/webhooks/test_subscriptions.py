"""The subscriptions API through the gateway: create, list, read, delete, limits, validation."""

from __future__ import annotations

import asyncio
import re
import uuid

from tests.support.api import Api
from tests.webhooks.support import Receiver

EVENTS = ["idea.created", "customer.updated"]


async def create(api: Api, url: str, **over: object) -> dict:
    body = {"name": "CRM sync", "targetUrl": url, "events": EVENTS, **over}
    r = await api.post("/api/v1/webhooks", json=body)
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def test_create_shows_the_secret_once(api: Api, receiver: Receiver) -> None:
    """The creation answer carries the full secret; later answers mask it."""
    sub = await create(api, receiver.url())
    assert re.fullmatch(r"whsec_[A-Za-z0-9]{32,}", sub["secret"])
    assert sub["isActive"] is True and sub["failureCount"] == 0
    assert sub["events"] == EVENTS and sub["name"] == "CRM sync"
    assert sub["lastDeliveredAt"] is None and sub["lastError"] is None
    masked = "whsec_****" + sub["secret"][-4:]
    listed = (await api.get("/api/v1/webhooks")).data
    assert [s["secret"] for s in listed if s["id"] == sub["id"]] == [masked]
    detail = (await api.get(f"/api/v1/webhooks/{sub['id']}")).data
    assert detail["secret"] == masked and detail["recentDeliveries"] == []


async def test_name_is_optional(api: Api, receiver: Receiver) -> None:
    """Without a name the subscription's name is null."""
    r = await api.post(
        "/api/v1/webhooks", json={"targetUrl": receiver.url(), "events": ["idea.voted"]}
    )
    assert r.status == 200 and r.data["name"] is None


async def test_eleventh_subscription_is_refused(api: Api, receiver: Receiver) -> None:
    """A workspace holds 10 subscriptions, even when created concurrently; the 11th is 422."""
    results = await asyncio.gather(
        *(
            api.post(
                "/api/v1/webhooks", json={"targetUrl": receiver.url(), "events": ["idea.created"]}
            )
            for _ in range(12)
        )
    )
    statuses = sorted(r.status for r in results)
    assert statuses == [200] * 10 + [422] * 2
    refused = next(r for r in results if r.status == 422)
    assert refused.error["code"] == "limit_exceeded"
    assert len((await api.get("/api/v1/webhooks")).data) == 10


async def test_delete_then_not_found(api: Api, receiver: Receiver) -> None:
    """DELETE answers {id, deleted: true}; the subscription is gone afterwards."""
    sub = await create(api, receiver.url())
    r = await api.delete(f"/api/v1/webhooks/{sub['id']}")
    assert r.status == 200 and r.data == {"id": sub["id"], "deleted": True}
    assert (await api.get(f"/api/v1/webhooks/{sub['id']}")).status == 404
    assert (await api.delete(f"/api/v1/webhooks/{sub['id']}")).status == 404
    assert sub["id"] not in [s["id"] for s in (await api.get("/api/v1/webhooks")).data]


async def test_other_workspace_sees_nothing(api: Api, new_workspace, receiver: Receiver) -> None:
    """Another workspace's subscription is not found, not listed, not deletable."""
    sub = await create(api, receiver.url())
    other = (await new_workspace()).api
    assert (await other.get(f"/api/v1/webhooks/{sub['id']}")).error["code"] == "not_found"
    assert (await other.delete(f"/api/v1/webhooks/{sub['id']}")).status == 404
    assert (await other.get("/api/v1/webhooks")).data == []


async def test_bad_ids_are_not_found(api: Api) -> None:
    """A path id that is not a UUID, or an unknown one, answers 404 not_found."""
    for path in ("/api/v1/webhooks/nope", f"/api/v1/webhooks/{uuid.uuid4()}"):
        r = await api.get(path)
        assert r.status == 404 and r.error["code"] == "not_found", path


async def test_invalid_bodies_name_the_field(api: Api, receiver: Receiver) -> None:
    """Bad create bodies answer 400 validation_error naming the field."""
    url = receiver.url()
    cases = [
        ({"events": EVENTS}, "targetUrl"),
        ({"targetUrl": url}, "events"),
        ({"targetUrl": url, "events": []}, "events"),
        ({"targetUrl": url, "events": ["idea.created", "idea.created"]}, "events"),
        ({"targetUrl": url, "events": ["idea.nope"]}, "events[0]"),
        ({"targetUrl": url, "events": EVENTS, "extra": 1}, "extra"),
        ({"targetUrl": 5, "events": EVENTS}, "targetUrl"),
        ({"targetUrl": "ftp://example.com/x", "events": EVENTS}, "targetUrl"),
        ({"targetUrl": "not a url", "events": EVENTS}, "targetUrl"),
        ({"targetUrl": "https://example.com/" + "a" * 2000, "events": EVENTS}, "targetUrl"),
        ({"targetUrl": url, "events": EVENTS, "name": "n" * 256}, "name"),
    ]
    for body, field in cases:
        r = await api.post("/api/v1/webhooks", json=body)
        assert r.status == 400, (body, r.body)
        assert r.error["code"] == "validation_error" and r.error["field"] == field, (body, r.error)


async def test_hosts_read_otherwise_refused_even_where_private_targets_are_allowed(
    api: Api, receiver: Receiver
) -> None:
    """This system allows private targets, yet a host in compatibility characters or an
    invalid DNS/IDNA name is a validation_error on targetUrl / hookUrl (docs/api.md)."""
    for host in (
        "１２７.０.０.１",
        "127。0。0。1",
        "ｌｏｃａｌｈｏｓｔ",
        "a..b.example.com",
        "a" * 64 + ".example.com",
        "xn--zz.example",
        "ex_ample.com",
        "127.1",
    ):
        r = await api.post(
            "/api/v1/webhooks", json={"targetUrl": f"http://{host}/x", "events": EVENTS}
        )
        assert r.status == 400, (host, r.body)
        assert r.error["code"] == "validation_error" and r.error["field"] == "targetUrl"
        r = await api.post(
            "/api/v1/automation/webhooks/subscribe", json={"hookUrl": f"https://{host}/x"}
        )
        assert r.status == 400 and r.error["field"] == "hookUrl", (host, r.body)
    r = await api.post(
        "/api/v1/webhooks", json={"targetUrl": "http://bücher.example/x", "events": EVENTS}
    )
    assert r.status == 200 and r.data["targetUrl"] == "http://bücher.example/x"


async def test_scope_is_required(new_workspace, receiver: Receiver) -> None:
    """A key without webhooks:manage gets 403 insufficient_scope."""
    ws = await new_workspace(scopes="ideas:read")
    r = await ws.api.get("/api/v1/webhooks")
    assert r.status == 403 and r.error["code"] == "insufficient_scope"


async def test_automation_subscribe_and_unsubscribe(api: Api) -> None:
    """A hook answers 201 {id, hookUrl, event}, is not listed, and unsubscribes once."""
    r = await api.post(
        "/api/v1/automation/webhooks/subscribe",
        json={"hookUrl": "https://hooks.example.com/catch/1"},
    )
    assert r.status == 201, r.body
    assert r.json["hookUrl"] == "https://hooks.example.com/catch/1"
    assert r.json["event"] == "new_idea"
    assert (await api.get("/api/v1/webhooks")).data == []
    hook = r.json["id"]
    r = await api.delete(f"/api/v1/automation/webhooks/subscribe/{hook}")
    assert r.status == 200 and r.json == {"success": True}
    r = await api.delete(f"/api/v1/automation/webhooks/subscribe/{hook}")
    assert r.status == 404 and r.error["code"] == "not_found"


async def test_automation_subscribe_refusals(api: Api) -> None:
    """Hooks must be https and for new_idea: otherwise 400."""
    for body, field in (
        ({"hookUrl": "http://hooks.example.com/x"}, "hookUrl"),
        ({"hookUrl": "https://hooks.example.com/x", "event": "idea.created"}, "event"),
        ({}, "hookUrl"),
    ):
        r = await api.post("/api/v1/automation/webhooks/subscribe", json=body)
        assert r.status == 400 and r.error["field"] == field, (body, r.body)


async def test_fifty_first_hook_is_forbidden(api: Api) -> None:
    """A workspace holds 50 automation hooks; the 51st answers 403."""
    for i in range(50):
        r = await api.post(
            "/api/v1/automation/webhooks/subscribe",
            json={"hookUrl": f"https://hooks.example.com/{i}"},
        )
        assert r.status == 201
    r = await api.post(
        "/api/v1/automation/webhooks/subscribe", json={"hookUrl": "https://hooks.example.com/51"}
    )
    assert r.status == 403
