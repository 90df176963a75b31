"""The retention sweep in the running processes (RETENTION_INTERVAL_S=1 in the shared system,
RETENTION_DAYS its default 30): deliveries, their attempts and handled-event ids older than
the period go; pending deliveries and newer rows stay."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg2

from tests.support.api import Workspace
from tests.support.processes import System
from tests.webhooks.support import Receiver, publish
from tests.webhooks.test_delivery import deliveries_when, event_data, subscribe


def sql(url: str, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = psycopg2.connect(url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute(query, params)
            return cur.fetchall() if cur.description else []
    finally:
        conn.close()


def age(url: str, deliveries: list[str], events: list[str], ideas_events: list[str]) -> None:
    """Make these rows 31 days old."""
    sql(
        url,
        "UPDATE webhooks.deliveries SET created_at = now() - interval '31 days'"
        " WHERE id = ANY(%s::uuid[])",
        (deliveries,),
    )
    sql(
        url,
        "UPDATE webhooks.attempts SET created_at = now() - interval '31 days'"
        " WHERE delivery_id = ANY(%s::uuid[])",
        (deliveries,),
    )
    sql(
        url,
        "UPDATE webhooks.processed_events SET processed_at = now() - interval '31 days'"
        " WHERE event_id = ANY(%s::uuid[])",
        (events,),
    )
    sql(
        url,
        "UPDATE ideas.processed_events SET processed_at = now() - interval '31 days'"
        " WHERE event_id = ANY(%s::uuid[])",
        (ideas_events,),
    )


async def until(cond: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(cond):
        assert time.monotonic() < deadline, "not swept in time"
        await asyncio.sleep(0.2)


async def test_old_rows_are_swept_and_the_rest_kept(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """A 31-day-old delivered delivery, its attempts and the event ids go; a 31-day-old
    pending delivery and today's rows stay."""
    url = system.database_url
    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path))
    events = [publish(url, "idea.created", ws.id, event_data("idea.created")) for _ in range(3)]
    detail = await deliveries_when(
        ws.api,
        sub["id"],
        lambda d: (
            len(d["recentDeliveries"]) == 3
            and all(x["status"] == "delivered" for x in d["recentDeliveries"])
        ),
    )
    old, pending, fresh = sorted(detail["recentDeliveries"], key=lambda d: d["eventId"])
    sql(
        url,
        "UPDATE webhooks.deliveries SET status = 'pending',"
        " next_attempt_at = now() + interval '1 day' WHERE id = %s",
        (pending["id"],),
    )
    handled = "SELECT event_id::text FROM ideas.processed_events"
    before = {r[0] for r in sql(url, handled)}
    customer = (await ws.api.post("/api/v1/customers", json={"name": "Retained"})).data
    ideas_events: list[str] = []
    deadline = time.monotonic() + 10
    while not ideas_events:  # the ideas service's projection handles customer.created
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
        ideas_events = [r[0] for r in sql(url, handled) if r[0] not in before]
    age(url, [old["id"], pending["id"]], [old["eventId"]], ideas_events)

    def swept() -> bool:
        return not sql(url, "SELECT 1 FROM webhooks.deliveries WHERE id = %s", (old["id"],))

    await until(swept)
    assert not sql(url, "SELECT 1 FROM webhooks.attempts WHERE delivery_id = %s", (old["id"],))
    await until(
        lambda: (
            not sql(
                url,
                "SELECT 1 FROM webhooks.processed_events WHERE event_id = %s",
                (old["eventId"],),
            )
        )
    )
    await until(
        lambda: (
            not sql(
                url,
                "SELECT 1 FROM ideas.processed_events WHERE event_id = ANY(%s::uuid[])",
                (ideas_events,),
            )
        )
    )
    left = {
        r[0]
        for r in sql(
            url, "SELECT id::text FROM webhooks.deliveries WHERE subscription_id = %s", (sub["id"],)
        )
    }
    assert left == {pending["id"], fresh["id"]}
    assert sql(
        url, "SELECT count(*) FROM webhooks.attempts WHERE delivery_id = %s", (fresh["id"],)
    ) == [(1,)]
    assert (
        len(
            sql(
                url,
                "SELECT 1 FROM webhooks.processed_events WHERE event_id = ANY(%s::uuid[])",
                ([e for e in events if e != old["eventId"]],),
            )
        )
        == 2
    )
    assert customer["name"] == "Retained"
