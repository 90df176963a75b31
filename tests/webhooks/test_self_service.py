"""Webhook self-service through the gateway (docs/webhooks.md): update and pause, test ping, secret
rotation with dual signing, Standard Webhooks headers, the delivery log and redelivery."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import re
import time
import uuid
from datetime import datetime
from typing import Any

from tests.support.api import Api, Workspace
from tests.support.processes import System
from tests.webhooks.support import (
    Receiver,
    hex_signatures,
    publish,
    verify,
    verify_hex,
    verify_standard,
)
from tests.webhooks.test_delivery import deliveries_when, event_data, subscribe

W = "/api/v1/webhooks"


def ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def delivery(api: Api, sub_id: str, delivery_id: str) -> dict[str, Any]:
    r = await api.get(f"{W}/{sub_id}/deliveries/{delivery_id}")
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def settled(api: Api, sub_id: str, status: str, n: int = 1) -> list[dict[str, Any]]:
    """Poll until `n` deliveries of the subscription have `status`."""
    d = await deliveries_when(
        api, sub_id, lambda d: sum(x["status"] == status for x in d["recentDeliveries"]) >= n
    )
    return [x for x in d["recentDeliveries"] if x["status"] == status]


# ---- PATCH --------------------------------------------------------------------------------


async def test_patch_updates_and_keeps_the_history(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """name, targetUrl and events change in place: the same id, its deliveries kept, the
    secret masked, updatedAt moved; the next event goes to the new URL."""
    old, new = receiver.new_path(), receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(old))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    await receiver.wait(old, 1)
    await settled(ws.api, sub["id"], "delivered")
    r = await ws.api.patch(
        f"{W}/{sub['id']}",
        json={"name": "Renamed", "targetUrl": receiver.url(new), "events": ["idea.updated"]},
    )
    assert r.status == 200, r.body
    got = r.data
    assert got["id"] == sub["id"] and got["name"] == "Renamed"
    assert got["targetUrl"] == receiver.url(new) and got["events"] == ["idea.updated"]
    assert got["secret"] == "whsec_****" + sub["secret"][-4:]
    assert ts(got["updatedAt"]) > ts(sub["updatedAt"]) and got["createdAt"] == sub["createdAt"]
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    publish(system.database_url, "idea.updated", ws.id, event_data("idea.updated"))
    (arrived,) = await receiver.wait(new, 1)
    assert arrived.headers["X-Service-Event"] == "idea.updated" and verify(sub["secret"], arrived)
    await asyncio.sleep(0.3)
    assert len(receiver.at(old)) == 1
    detail = (await ws.api.get(f"{W}/{sub['id']}")).data
    assert len(detail["recentDeliveries"]) == 2
    r = await ws.api.patch(f"{W}/{sub['id']}", json={"name": None})
    assert r.status == 200 and r.data["name"] is None


async def test_patch_refusals_name_the_field(
    ws: Workspace, receiver: Receiver, new_workspace: Any
) -> None:
    """At least one property, the create body's rules, no nulls but `name`; unknown ids 404."""
    sub = await subscribe(ws.api, receiver.url())
    cases = [
        ({}, "body"),
        ({"targetUrl": None}, "targetUrl"),
        ({"events": None}, "events"),
        ({"isActive": None}, "isActive"),
        ({"isActive": "yes"}, "isActive"),
        ({"events": []}, "events"),
        ({"events": ["idea.created"] * 2}, "events"),
        ({"events": ["nope"]}, "events[0]"),
        ({"targetUrl": "ftp://x.example/"}, "targetUrl"),
        ({"targetUrl": "https://１２７.０.０.１/"}, "targetUrl"),
        ({"name": "n" * 256}, "name"),
        ({"secret": "whsec_x"}, "secret"),
    ]
    for body, field in cases:
        r = await ws.api.patch(f"{W}/{sub['id']}", json=body)
        assert r.status == 400, (body, r.body)
        assert r.error["code"] == "validation_error" and r.error["field"] == field, (body, r.body)
    r = await ws.api.request("PATCH", f"{W}/{sub['id']}", body=b"")
    assert r.status == 400 and r.error["code"] == "validation_error"
    other = await new_workspace()
    for api, sub_id in ((other.api, sub["id"]), (ws.api, str(uuid.uuid4()))):
        r = await api.patch(f"{W}/{sub_id}", json={"name": "x"})
        assert r.status == 404 and r.error["code"] == "not_found"
    assert (await ws.api.get(f"{W}/{sub['id']}")).data["name"] is None


async def test_paused_subscription_never_gets_the_events_of_its_pause(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """isActive false: nothing is delivered, not even after isActive true; later events are."""
    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path))
    r = await ws.api.patch(f"{W}/{sub['id']}", json={"isActive": False})
    assert r.status == 200 and r.data["isActive"] is False
    paused = publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    await asyncio.sleep(1.0)
    r = await ws.api.patch(f"{W}/{sub['id']}", json={"isActive": True})
    assert r.status == 200 and r.data["isActive"] is True
    later = publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    (got,) = await receiver.wait(path, 1)
    await asyncio.sleep(0.5)
    assert [x.json["id"] for x in receiver.at(path)] == [later] != [paused]


async def test_resuming_resets_the_failure_count(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """isActive true reactivates and sets failureCount back to 0."""
    path = receiver.new_path()
    receiver.answer(path, 500)
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    await settled(ws.api, sub["id"], "failed")
    assert (await ws.api.get(f"{W}/{sub['id']}")).data["failureCount"] == 3
    r = await ws.api.patch(f"{W}/{sub['id']}", json={"isActive": True})
    assert r.data["failureCount"] == 0 and r.data["isActive"] is True
    assert r.data["lastError"].startswith("HTTP 500")


# ---- test ping ----------------------------------------------------------------------------


async def test_ping_is_signed_like_a_delivery_and_changes_nothing(
    ws: Workspace, receiver: Receiver
) -> None:
    """A webhook.test POST with every header; both signature schemes verify; the
    subscription is the same afterwards."""
    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path))
    before = (await ws.api.get(f"{W}/{sub['id']}")).data
    r = await ws.api.post(f"{W}/{sub['id']}/test")
    assert r.status == 200, r.body
    assert r.data["success"] is True and r.data["statusCode"] == 200
    assert r.data["error"] is None and isinstance(r.data["durationMs"], int)
    (ping,) = receiver.at(path)
    body = ping.json
    assert list(body) == ["id", "type", "createdAt", "workspaceId", "data"]
    assert body["type"] == "webhook.test" and body["workspaceId"] == ws.id
    assert body["data"] == {"subscriptionId": sub["id"]}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", body["createdAt"])
    h = ping.headers
    assert h["X-Service-Event"] == "webhook.test"
    assert h["X-Service-Delivery"] == h["webhook-id"] == body["id"]
    assert h["X-Service-Timestamp"] == h["webhook-timestamp"]
    assert verify(sub["secret"], ping) and verify_standard(sub["secret"], ping)
    assert (await ws.api.get(f"{W}/{sub['id']}")).data == before


async def test_ping_works_paused_and_a_410_deactivates_nothing(
    ws: Workspace, receiver: Receiver
) -> None:
    """A failed ping (410) reports it and leaves the counters, errors and state alone."""
    path = receiver.new_path()
    receiver.answer(path, 410)
    sub = await subscribe(ws.api, receiver.url(path))
    for active in (True, False):
        await ws.api.patch(f"{W}/{sub['id']}", json={"isActive": active})
        before = (await ws.api.get(f"{W}/{sub['id']}")).data
        r = await ws.api.post(f"{W}/{sub['id']}/test")
        assert r.status == 200 and r.data["success"] is False and r.data["statusCode"] == 410
        assert r.data["error"].startswith("HTTP 410")
        after = (await ws.api.get(f"{W}/{sub['id']}")).data
        assert after == before and after["isActive"] is active
    assert len(receiver.at(path)) == 2


async def test_ping_answers_within_the_timeout_against_a_hanging_receiver(
    ws: Workspace, receiver: Receiver
) -> None:
    """WEBHOOK_TIMEOUT_S is 2 here: the answer comes within 4 s, with no status code and the
    time waited."""
    path = receiver.new_path()
    receiver.answer(path, "hang")
    sub = await subscribe(ws.api, receiver.url(path))
    started = time.monotonic()
    r = await ws.api.post(f"{W}/{sub['id']}/test")
    assert time.monotonic() - started < 4.0
    assert r.data["success"] is False and r.data["statusCode"] is None
    assert 1900 <= r.data["durationMs"] < 4000 and r.data["error"].startswith("timeout")


# ---- rotation -----------------------------------------------------------------------------


async def rotate(api: Api, sub_id: str, body: Any = None) -> dict[str, Any]:
    r = await api.post(f"{W}/{sub_id}/rotate-secret", json=body)
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def next_delivery(system: System, ws: Workspace, receiver: Receiver, path: str) -> Any:
    n = len(receiver.at(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    return (await receiver.wait(path, n + 1))[-1]


async def test_rotation_signs_with_both_secrets_new_first(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """The full new secret is shown once; deliveries then carry two hex digests and two
    `v1,` entries, the new secret's first; each secret verifies on its own."""
    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path))
    old = sub["secret"]
    rotated = await rotate(ws.api, sub["id"])
    new = rotated["secret"]
    assert re.fullmatch(r"whsec_[A-Za-z0-9]{40}", new) and new != old
    assert rotated["id"] == sub["id"] and ts(rotated["updatedAt"]) > ts(sub["updatedAt"])
    assert (await ws.api.get(f"{W}/{sub['id']}")).data["secret"] == "whsec_****" + new[-4:]
    got = await next_delivery(system, ws, receiver, path)
    first, second = hex_signatures(got)
    assert verify_hex(new, got, first) and verify_hex(old, got, second)
    entries = got.headers["webhook-signature"].split(" ")
    assert len(entries) == 2 and all(e.startswith("v1,") for e in entries)
    assert verify_standard(new, got) and verify_standard(old, got)
    ping = await ws.api.post(f"{W}/{sub['id']}/test")
    assert ping.data["success"] is True
    assert len(hex_signatures(receiver.at(path)[-1])) == 2


async def test_short_expiry_two_signatures_then_one(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """expiresInSeconds 2: two signatures at once, one after the previous secret expired;
    a retry signed after the expiry carries only the new one."""
    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path))
    new = (await rotate(ws.api, sub["id"], {"expiresInSeconds": 2}))["secret"]
    during = await next_delivery(system, ws, receiver, path)
    assert len(hex_signatures(during)) == 2 and verify_standard(sub["secret"], during)
    await asyncio.sleep(2.2)
    after = await next_delivery(system, ws, receiver, path)
    assert hex_signatures(after) == [hex_signatures(after)[0]] and verify(new, after)
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    assert verify_standard(new, after) and not verify_standard(sub["secret"], after)
    zero = (await rotate(ws.api, sub["id"], {"expiresInSeconds": 0}))["secret"]
    at_once = await next_delivery(system, ws, receiver, path)
    assert len(hex_signatures(at_once)) == 1 and verify(zero, at_once)


async def test_second_rotation_during_the_overlap_keeps_two(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """A rotation during the overlap drops the oldest secret: never three signatures."""
    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path))
    s1 = sub["secret"]
    s2 = (await rotate(ws.api, sub["id"]))["secret"]
    s3 = (await rotate(ws.api, sub["id"], {"expiresInSeconds": 600}))["secret"]
    got = await next_delivery(system, ws, receiver, path)
    first, second = hex_signatures(got)
    assert verify_hex(s3, got, first) and verify_hex(s2, got, second)
    assert not verify(s1, got) and not verify_standard(s1, got)
    assert len(got.headers["webhook-signature"].split(" ")) == 2


async def test_rotation_refusals(ws: Workspace, receiver: Receiver, new_workspace: Any) -> None:
    """expiresInSeconds is an integer from 0 to 604800; no body means a day; 404 elsewhere."""
    sub = await subscribe(ws.api, receiver.url())
    for body, field in (
        ({"expiresInSeconds": -1}, "expiresInSeconds"),
        ({"expiresInSeconds": 604801}, "expiresInSeconds"),
        ({"expiresInSeconds": "60"}, "expiresInSeconds"),
        ({"expiresInSeconds": 1.5}, "expiresInSeconds"),
        ({"expiresIn": 5}, "expiresIn"),
    ):
        r = await ws.api.post(f"{W}/{sub['id']}/rotate-secret", json=body)
        assert r.status == 400 and r.error["field"] == field, (body, r.body)
    r = await ws.api.request("POST", f"{W}/{sub['id']}/rotate-secret", body=b"")
    assert r.status == 200 and r.data["secret"] != sub["secret"]
    r = await (await new_workspace()).api.post(f"{W}/{sub['id']}/rotate-secret")
    assert r.status == 404


# ---- delivery log -------------------------------------------------------------------------


async def test_delivery_log_pages_newest_first_with_filters(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """Keyset pages without skips or repeats; status and event_type filter; bad values 400."""
    path = receiver.new_path()
    receiver.answer(path, 500)
    sub = await subscribe(ws.api, receiver.url(path), ["idea.created", "idea.updated"])
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    await settled(ws.api, sub["id"], "failed")
    receiver.answer(path, 200)
    for kind in ("idea.created", "idea.updated", "idea.created", "idea.updated"):
        publish(system.database_url, kind, ws.id, event_data(kind))
    await settled(ws.api, sub["id"], "delivered", 4)
    url = f"{W}/{sub['id']}/deliveries"
    everything = (await ws.api.get(url, params={"limit": 100})).json
    assert everything["pagination"] == {"limit": 100, "hasMore": False, "nextCursor": None}
    ids = [d["id"] for d in everything["data"]]
    stamps = [d["createdAt"] for d in everything["data"]]
    assert len(ids) == 5 and stamps == sorted(stamps, reverse=True)
    seen, cursor = [], None
    while True:
        page = (await ws.api.get(url, params={"limit": 2, "cursor": cursor})).json
        seen += [d["id"] for d in page["data"]]
        cursor = page["pagination"]["nextCursor"]
        assert page["pagination"]["hasMore"] is (cursor is not None)
        if cursor is None:
            break
    assert seen == ids
    await cursors_signed_with_the_whole_secret(system, ws, url)
    failed = (await ws.api.get(url, params={"status": "failed"})).data
    assert [d["status"] for d in failed] == ["failed"] and failed[0]["attemptCount"] == 3
    assert len((await ws.api.get(url, params={"status": "delivered"})).data) == 4
    updated = (await ws.api.get(url, params={"event_type": "idea.updated"})).data
    assert len(updated) == 2 and {d["eventType"] for d in updated} == {"idea.updated"}
    both = (
        await ws.api.get(url, params={"event_type": "idea.created", "status": "delivered"})
    ).data
    assert len(both) == 2
    assert (await ws.api.get(url, params={"cursor": ""})).data == everything["data"][:25]
    first = (await ws.api.get(url, params={"limit": 1, "status": "delivered"})).json
    for params, field in (
        ({"status": "done"}, "status"),
        ({"event_type": "idea"}, "event_type"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"cursor": "forged"}, "cursor"),
        ({"cursor": first["pagination"]["nextCursor"]}, "cursor"),
        ({"sort": "createdAt"}, "sort"),
    ):
        r = await ws.api.get(url, params=params)
        assert r.status == 400 and r.error["field"] == field, (params, r.body)


async def cursors_signed_with_the_whole_secret(system: System, ws: Workspace, url: str) -> None:
    """A page's cursor is signed with the whole CURSOR_SECRET (it once was signed with its first
    character only, which anyone could forge): the same cursor re-signed with that character
    is refused."""
    cursor = (await ws.api.get(url, params={"limit": 1})).json["pagination"]["nextCursor"]
    body, sig = cursor.split(".", 1)
    payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))

    def signed(key: str) -> str:
        mac = hmac.new(key.encode(), payload, hashlib.sha256).digest()[:16]
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    assert sig == signed(system.cursor_secret)
    assert (await ws.api.get(url, params={"limit": 1, "cursor": cursor})).status == 200
    forged = await ws.api.get(
        url, params={"limit": 1, "cursor": f"{body}.{signed(system.cursor_secret[0])}"}
    )
    assert forged.status == 400 and forged.error["field"] == "cursor"


async def test_delivery_detail_has_payload_and_every_attempt(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """The payload is the body sent; each attempt has its number, status, error, duration and
    time; nextAttemptAt shows the next attempt while pending and is null after."""
    path = receiver.new_path()
    receiver.answer(path, (503, {"Retry-After": "3"}), 500, 500)
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    (first,) = await receiver.wait(path, 1)
    d_id = first.headers["X-Service-Delivery"]
    deadline = time.monotonic() + 5
    while True:
        d = await delivery(ws.api, sub["id"], d_id)
        if d["attemptCount"] == 1:
            break
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    assert d["status"] == "pending" and d["nextAttemptAt"] is not None
    assert ts(d["nextAttemptAt"]) - ts(d["attempts"][0]["attemptedAt"]) >= 2.5
    await settled(ws.api, sub["id"], "failed")
    d = await delivery(ws.api, sub["id"], d_id)
    assert list(d)[:10] == [
        "id",
        "eventId",
        "eventType",
        "status",
        "statusCode",
        "attemptCount",
        "error",
        "durationMs",
        "deliveredAt",
        "createdAt",
    ]
    assert d["nextAttemptAt"] is None and d["status"] == "failed"
    assert d["payload"] == first.json
    assert [a["attempt"] for a in d["attempts"]] == [1, 2, 3]
    assert [a["statusCode"] for a in d["attempts"]] == [503, 500, 500]
    assert d["attempts"][0]["error"].startswith("HTTP 503")
    times = [ts(a["attemptedAt"]) for a in d["attempts"]]
    assert times == sorted(times) and all(isinstance(a["durationMs"], int) for a in d["attempts"])
    for bad in (str(uuid.uuid4()), "not-a-uuid"):
        r = await ws.api.get(f"{W}/{sub['id']}/deliveries/{bad}")
        assert r.status == 404 and r.error["code"] == "not_found"
    other = await subscribe(ws.api, receiver.url())
    assert (await ws.api.get(f"{W}/{other['id']}/deliveries/{d_id}")).status == 404


async def test_a_manage_only_key_reads_the_payload_its_receiver_got(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """Decided (docs/webhooks.md, Who reads delivery payloads): a key holding webhooks:manage
    alone reads a delivery's payload, customer record included, byte for byte what the
    receiver got; such a key could point a subscription at its own receiver anyway."""
    manage = ws.api.with_key(
        (await ws.new_key(system.database_url, scopes="webhooks:manage"))["key"]
    )
    assert (await manage.get("/api/v1/customers")).status == 403
    path = receiver.new_path()
    sub = await subscribe(manage, receiver.url(path), ["customer.created"])
    customer = {"id": str(uuid.uuid4()), "name": "Acme", "email": "ops@acme.example"}
    publish(system.database_url, "customer.created", ws.id, {"customer": customer})
    (got,) = await receiver.wait(path, 1)
    d = await delivery(manage, sub["id"], got.headers["X-Service-Delivery"])
    assert d["payload"] == got.json and d["payload"]["data"]["customer"] == customer


# ---- redelivery ---------------------------------------------------------------------------


async def test_redelivering_a_failed_delivery(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """A failed delivery goes out again now, same delivery id, attemptCount going on."""
    path = receiver.new_path()
    receiver.answer(path, 500)
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    (failed,) = await settled(ws.api, sub["id"], "failed")
    receiver.answer(path, 200)
    r = await ws.api.post(f"{W}/{sub['id']}/deliveries/{failed['id']}/redeliver")
    assert r.status == 202, r.body
    assert r.data["id"] == failed["id"] and r.data["status"] == "pending"
    assert r.data["attemptCount"] == 3
    got = await receiver.wait(path, 4)
    assert got[-1].headers["X-Service-Delivery"] == failed["id"] and verify(sub["secret"], got[-1])
    await settled(ws.api, sub["id"], "delivered")
    d = await delivery(ws.api, sub["id"], failed["id"])
    assert d["attemptCount"] == 4 and [a["attempt"] for a in d["attempts"]] == [1, 2, 3, 4]
    assert d["deliveredAt"] is not None and d["nextAttemptAt"] is None


async def test_redelivery_gets_the_whole_schedule_again(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """Still failing after a redelivery: three more attempts (the schedule), then failed."""
    path = receiver.new_path()
    receiver.answer(path, 500)
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    (failed,) = await settled(ws.api, sub["id"], "failed")
    r = await ws.api.post(f"{W}/{sub['id']}/deliveries/{failed['id']}/redeliver")
    assert r.status == 202
    await receiver.wait(path, 6)
    (again,) = await settled(ws.api, sub["id"], "failed")
    assert again["attemptCount"] == 6
    await asyncio.sleep(1.5)
    assert len(receiver.at(path)) == 6


async def test_redelivering_a_delivered_delivery(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """A delivered delivery can be sent again: it arrives a second time, same id."""
    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    (done,) = await settled(ws.api, sub["id"], "delivered")
    r = await ws.api.post(f"{W}/{sub['id']}/deliveries/{done['id']}/redeliver")
    assert r.status == 202 and r.data["status"] == "pending" and r.data["deliveredAt"] is None
    first, second = await receiver.wait(path, 2)
    assert first.body == second.body
    assert first.headers["X-Service-Delivery"] == second.headers["X-Service-Delivery"]
    assert int(second.headers["X-Service-Timestamp"]) >= int(first.headers["X-Service-Timestamp"])


async def test_redelivery_conflicts_and_not_found(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """409 for a pending delivery and for a paused subscription; 404 for an unknown one."""
    path = receiver.new_path()
    receiver.answer(path, (503, {"Retry-After": "60"}))
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    (first,) = await receiver.wait(path, 1)
    d_id = first.headers["X-Service-Delivery"]
    url = f"{W}/{sub['id']}/deliveries/{d_id}/redeliver"
    r = await ws.api.post(url)
    assert r.status == 409 and r.error["code"] == "conflict"
    deadline = time.monotonic() + 5
    while (await delivery(ws.api, sub["id"], d_id))["attemptCount"] < 1:  # recorded, pending
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    assert (await ws.api.post(url)).status == 409
    await ws.api.patch(f"{W}/{sub['id']}", json={"isActive": False})
    d = await delivery(ws.api, sub["id"], d_id)
    assert d["status"] == "failed" and d["nextAttemptAt"] is None
    r = await ws.api.post(url)
    assert r.status == 409 and r.error["code"] == "conflict"
    r = await ws.api.post(f"{W}/{sub['id']}/deliveries/{uuid.uuid4()}/redeliver")
    assert r.status == 404 and r.error["code"] == "not_found"
    await ws.api.patch(f"{W}/{sub['id']}", json={"isActive": True})
    receiver.answer(path, 200)
    assert (await ws.api.post(url)).status == 202
    await receiver.wait(path, 2)


async def test_new_routes_need_the_scope_and_stay_in_the_workspace(
    ws: Workspace, receiver: Receiver, new_workspace: Any
) -> None:
    """Without webhooks:manage: 403; another workspace's subscription: 404 everywhere."""
    sub = await subscribe(ws.api, receiver.url())
    d = str(uuid.uuid4())
    calls = [
        ("PATCH", f"{W}/{sub['id']}", {"name": "x"}),
        ("POST", f"{W}/{sub['id']}/test", None),
        ("POST", f"{W}/{sub['id']}/rotate-secret", None),
        ("GET", f"{W}/{sub['id']}/deliveries", None),
        ("GET", f"{W}/{sub['id']}/deliveries/{d}", None),
        ("POST", f"{W}/{sub['id']}/deliveries/{d}/redeliver", None),
    ]
    scoped = (await new_workspace(scopes="ideas:read,ideas:write")).api
    stranger = (await new_workspace()).api
    for method, path, body in calls:
        r = await scoped.request(method, path, json=body)
        assert r.status == 403 and r.error["code"] == "insufficient_scope", (method, path)
        r = await stranger.request(method, path, json=body)
        assert r.status == 404 and r.error["code"] == "not_found", (method, path)
    assert (await ws.api.get(f"{W}/{sub['id']}")).data["name"] is None
