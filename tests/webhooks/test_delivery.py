"""Signed delivery, retries, failure and deactivation over plain HTTP (the shared system)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

from tests.support.api import Api, Workspace
from tests.support.processes import System
from tests.webhooks.support import (
    Receiver,
    legacy_subscription,
    publish,
    sample_idea,
    verify,
    verify_standard,
)

ALL_EVENTS = [
    "idea.created",
    "idea.updated",
    "idea.status_changed",
    "idea.voted",
    "idea.scored",
    "idea.assigned",
    "idea.deleted",
    "idea.destination_created",
    "idea.signal_detected",
    "customer.created",
    "customer.updated",
    "comment.created",
    "comment.updated",
    "comment.deleted",
]


async def subscribe(api: Api, url: str, events: list[str] | None = None) -> dict[str, Any]:
    r = await api.post(
        "/api/v1/webhooks", json={"targetUrl": url, "events": events or ["idea.created"]}
    )
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def deliveries_when(api: Api, sub_id: str, done: Any, timeout: float = 15.0) -> dict:
    """Poll the subscription until `done(detail)` holds."""
    deadline = time.monotonic() + timeout
    while True:
        detail = (await api.get(f"/api/v1/webhooks/{sub_id}")).data
        if done(detail):
            return detail  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"condition not reached: {detail}"
        await asyncio.sleep(0.2)


def event_data(kind: str) -> dict[str, Any]:
    if kind.startswith("customer."):
        return {"customer": {"id": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "name": "Acme"}}
    if kind.startswith("comment."):
        comment = {"id": "0b6f1c2e-3d4a-4e5f-8a9b-0c1d2e3f4a5b", "body": "Any news?"}
        return {"comment": comment, "idea": sample_idea()}
    data: dict[str, Any] = {"idea": sample_idea()}
    extras = {
        "idea.status_changed": {"previousStatus": "new"},
        "idea.voted": {"vote": {"voter": "key:1", "value": 1}},
        "idea.assigned": {"previousRoadmapStageId": None},
        "idea.signal_detected": {"signal": {"id": "s1", "platform": "api"}},
    }
    data.update(extras.get(kind, {}))
    return data


async def test_every_event_kind_arrives_signed(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """Each event kind reaches a subscriber of all kinds with its body, headers and signature."""
    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path), ALL_EVENTS)
    datas = {kind: event_data(kind) for kind in ALL_EVENTS}
    sent = {kind: publish(system.database_url, kind, ws.id, datas[kind]) for kind in ALL_EVENTS}
    got = await receiver.wait(path, len(ALL_EVENTS))
    assert len(got) == len(ALL_EVENTS)
    for r in got:
        body = r.json
        kind = r.headers["X-Service-Event"]
        assert body["id"] == sent[kind] and body["type"] == kind
        assert body["workspaceId"] == ws.id and body["data"] == datas[kind]
        assert set(body) == {"id", "type", "createdAt", "workspaceId", "data"}
        assert r.headers["Content-Type"] == "application/json"
        assert abs(int(r.headers["X-Service-Timestamp"]) - time.time()) < 30
        assert verify(sub["secret"], r) and verify_standard(sub["secret"], r)
        assert r.headers["webhook-id"] == r.headers["X-Service-Delivery"]
        assert r.headers["webhook-timestamp"] == r.headers["X-Service-Timestamp"]
    detail = await deliveries_when(
        ws.api,
        sub["id"],
        lambda d: (
            len(d["recentDeliveries"]) == len(ALL_EVENTS)
            and all(x["status"] == "delivered" for x in d["recentDeliveries"])
        ),
    )
    ids = {r.headers["X-Service-Delivery"] for r in got}
    assert ids == {d["id"] for d in detail["recentDeliveries"]}
    first = detail["recentDeliveries"][0]
    assert first["attemptCount"] == 1 and first["statusCode"] == 200 and first["error"] is None
    assert first["deliveredAt"] is not None and first["durationMs"] is not None
    assert detail["lastDeliveredAt"] is not None and detail["failureCount"] == 0


async def test_only_subscribed_kinds_arrive(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """An event kind the subscription did not ask for is not delivered to it."""
    path = receiver.new_path()
    await subscribe(ws.api, receiver.url(path), ["customer.created"])
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    wanted = publish(system.database_url, "customer.created", ws.id, event_data("customer.created"))
    got = await receiver.wait(path, 1)
    await asyncio.sleep(0.5)
    assert [r.json["id"] for r in receiver.at(path)] == [wanted] == [got[0].json["id"]]


async def test_signature_changes_with_the_secret(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """A signature does not verify with another subscription's secret."""
    path = receiver.new_path()
    await subscribe(ws.api, receiver.url(path))
    other = await subscribe(ws.api, receiver.url())
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    (r,) = await receiver.wait(path, 1)
    assert not verify(other["secret"], r)


async def test_retry_keeps_delivery_id_with_fresh_timestamp(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """Two failures then success: three attempts, one delivery id, new signatures each time."""
    path = receiver.new_path()
    receiver.answer(path, 500, 503, 200)
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    got = await receiver.wait(path, 3)
    assert len({r.headers["X-Service-Delivery"] for r in got}) == 1
    stamps = [int(r.headers["X-Service-Timestamp"]) for r in got]
    assert stamps == sorted(stamps) and stamps[0] < stamps[2]
    assert all(verify(sub["secret"], r) for r in got) and len({r.body for r in got}) == 1
    detail = await deliveries_when(
        ws.api, sub["id"], lambda d: d["recentDeliveries"][0]["status"] == "delivered"
    )
    (d,) = detail["recentDeliveries"]
    assert d["attemptCount"] == 3 and d["statusCode"] == 200
    assert detail["failureCount"] == 0 and detail["lastFailedAt"] is not None
    assert detail["lastError"].startswith("HTTP 503")


async def test_failed_after_last_attempt(system: System, ws: Workspace, receiver: Receiver) -> None:
    """A receiver that always fails: the delivery ends failed after the schedule's 3 attempts."""
    path = receiver.new_path()
    receiver.answer(path, 500)
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    detail = await deliveries_when(
        ws.api,
        sub["id"],
        lambda d: d["recentDeliveries"] and d["recentDeliveries"][0]["status"] == "failed",
    )
    (d,) = detail["recentDeliveries"]
    assert d["attemptCount"] == 3 and d["statusCode"] == 500 and d["error"].startswith("HTTP 500")
    assert len(receiver.at(path)) == 3
    assert detail["failureCount"] == 3 and detail["lastError"].startswith("HTTP 500")
    # The shared system disables after 5 days of failure: this one stays active.
    assert detail["isActive"] is True


async def test_gone_deactivates_at_once(system: System, ws: Workspace, receiver: Receiver) -> None:
    """A 410 answer deactivates the subscription: no retry, no more deliveries."""
    path = receiver.new_path()
    receiver.answer(path, 410)
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    detail = await deliveries_when(ws.api, sub["id"], lambda d: not d["isActive"])
    assert detail["recentDeliveries"][0]["status"] == "failed"
    assert detail["recentDeliveries"][0]["attemptCount"] == 1
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    await asyncio.sleep(1.5)
    assert len(receiver.at(path)) == 1


async def test_redirect_is_a_failure_and_not_followed(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """A 302 answer is a failed attempt; the Location is never visited."""
    path, elsewhere = receiver.new_path(), receiver.new_path()
    receiver.answer(path, (302, {"Location": receiver.url(elsewhere)}), 200)
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    detail = await deliveries_when(
        ws.api,
        sub["id"],
        lambda d: d["recentDeliveries"] and d["recentDeliveries"][0]["status"] == "delivered",
    )
    assert detail["recentDeliveries"][0]["attemptCount"] == 2
    assert receiver.at(elsewhere) == []


async def test_timeout_is_a_failure(system: System, ws: Workspace, receiver: Receiver) -> None:
    """A receiver that does not answer within WEBHOOK_TIMEOUT_S fails the attempt."""
    path = receiver.new_path()
    receiver.answer(path, "hang", 200)
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    detail = await deliveries_when(
        ws.api,
        sub["id"],
        lambda d: d["recentDeliveries"] and d["recentDeliveries"][0]["status"] == "delivered",
    )
    assert detail["recentDeliveries"][0]["attemptCount"] == 2
    assert detail["lastError"].startswith("timeout")


async def test_unreachable_receiver_is_a_failure(system: System, ws: Workspace) -> None:
    """A refused connection is a failed attempt with a connection error."""
    from tests.support.processes import free_port

    sub = await subscribe(ws.api, f"http://127.0.0.1:{free_port()}/x")
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    detail = await deliveries_when(ws.api, sub["id"], lambda d: d["failureCount"] >= 1)
    assert detail["lastError"].startswith("connection error")


async def test_deleted_subscription_gets_nothing_more(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """After DELETE, events no longer reach the old target."""
    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path))
    await ws.api.delete(f"/api/v1/webhooks/{sub['id']}")
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    await asyncio.sleep(1.0)
    assert receiver.at(path) == []


async def test_recent_deliveries_are_the_twenty_newest(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """The detail lists at most 20 deliveries, newest first."""
    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path))
    ids = [
        publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
        for _ in range(23)
    ]
    await receiver.wait(path, 23)
    detail = await deliveries_when(
        ws.api, sub["id"], lambda d: all(x["status"] == "delivered" for x in d["recentDeliveries"])
    )
    got = [d["eventId"] for d in detail["recentDeliveries"]]
    assert len(got) == 20 and set(got) <= set(ids)
    stamps = [d["createdAt"] for d in detail["recentDeliveries"]]
    assert stamps == sorted(stamps, reverse=True)
    assert orjson.dumps(detail)  # serializable as sent


async def test_detail_reads_one_state_of_the_subscription(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """The subscription's counters and its recent deliveries are read in one snapshot: a
    delivery recorded between the two reads shows in both or in neither (a delivered delivery
    beside a null `lastDeliveredAt` was possible when they were two autocommit reads)."""
    import psycopg2

    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    await receiver.wait(path, 1)
    await deliveries_when(ws.api, sub["id"], lambda d: d["lastDeliveredAt"] is not None)
    writer = psycopg2.connect(system.database_url)
    watcher = psycopg2.connect(system.database_url)
    watcher.autocommit = True
    try:
        with writer, writer.cursor() as cur:  # back to before the delivery was recorded
            cur.execute(
                "UPDATE webhooks.subscriptions SET last_delivered_at = NULL WHERE id = %s",
                (sub["id"],),
            )
            cur.execute(
                "UPDATE webhooks.deliveries SET status = 'pending', delivered_at = NULL,"
                " next_attempt_at = now() + interval '1 hour' WHERE subscription_id = %s",
                (sub["id"],),
            )
        cur = writer.cursor()
        cur.execute("LOCK TABLE webhooks.deliveries IN ACCESS EXCLUSIVE MODE")
        reading = asyncio.ensure_future(ws.api.get(f"/api/v1/webhooks/{sub['id']}"))
        deadline = time.monotonic() + 10
        while True:  # until the read has read the subscription and waits for the deliveries
            with watcher.cursor() as w:
                w.execute(
                    "SELECT count(*) FROM pg_locks WHERE NOT granted"
                    " AND relation = 'webhooks.deliveries'::regclass"
                )
                if w.fetchone()[0]:
                    break
            assert time.monotonic() < deadline, "the read never waited for the deliveries"
            await asyncio.sleep(0.02)
        cur.execute(  # the delivery recorded, as the dispatcher does: both in one commit
            "UPDATE webhooks.deliveries SET status = 'delivered', delivered_at = now()"
            " WHERE subscription_id = %s",
            (sub["id"],),
        )
        cur.execute(
            "UPDATE webhooks.subscriptions SET last_delivered_at = now() WHERE id = %s",
            (sub["id"],),
        )
        writer.commit()
        r = await reading
    finally:
        writer.close()
        watcher.close()
    assert r.status == 200, r.body
    delivered = [d for d in r.data["recentDeliveries"] if d["status"] == "delivered"]
    assert (r.data["lastDeliveredAt"] is not None) == bool(delivered), r.data


async def test_unusable_hosts_end_failed_not_retried_forever(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """Old rows whose host the IDNA codec refuses (an empty label, a 64-character label) end
    `failed` after the schedule's attempts like any failure, and other deliveries go on."""
    subs = [
        legacy_subscription(system.database_url, ws.id, url)
        for url in ("http://a..b.example.com/hook", f"http://{'a' * 64}.example.com/hook")
    ]
    path = receiver.new_path()
    healthy = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    for sub_id in subs:
        detail = await deliveries_when(
            ws.api,
            sub_id,
            lambda d: d["recentDeliveries"] and d["recentDeliveries"][0]["status"] == "failed",
        )
        (d,) = detail["recentDeliveries"]
        assert d["attemptCount"] == 3 and d["statusCode"] is None
        assert d["error"] == "target refused: invalid host"
        assert detail["failureCount"] == 3
    await receiver.wait(path, 1)
    assert (await ws.api.get(f"/api/v1/webhooks/{healthy['id']}")).data["failureCount"] == 0
