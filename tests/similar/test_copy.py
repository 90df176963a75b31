"""The similar service's copy of the ideas (`similar.ideas`, docs/similar.md), filled from the
events it consumes: an event applies only when it is not older than the copy's state (its
`x-event-seq`, its place in the ideas outbox), so a repeat changes nothing and an event that
arrives late never brings back an older state; the backfill's rows give way to any event, and
never take the place of an event's. Against the real database, and through the broker."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import aio_pika
import aiopg
import orjson
import psycopg2

from libs.common.messaging import SEQ_HEADER
from services.similar.store import IdeaState, apply_ideas, backfill
from tests.support.api import Api, Workspace
from tests.support.processes import AMQP_URL, LOG_DIR

from .test_similar import I, new_idea, similar_to, until


def state(ws: uuid.UUID, idea: uuid.UUID, title: str, version: int, **kw: Any) -> IdeaState:
    return IdeaState(
        ws, idea, title, kw.get("summary"), kw.get("status", "new"), kw.get("merged"), version
    )


def row(database_url: str, ws: uuid.UUID, idea: uuid.UUID) -> tuple[Any, ...] | None:
    conn = psycopg2.connect(database_url)
    try:
        with conn.cursor() as cur:
            cur.execute(
                'SELECT title, status, merged_into_id, version FROM "similar".ideas'
                " WHERE workspace_id = %s AND idea_id = %s",
                (str(ws), str(idea)),
            )
            return cur.fetchone()  # type: ignore[no-any-return]
    finally:
        conn.close()


async def test_an_older_event_never_overwrites_a_newer_state(database_url: str) -> None:
    ws, idea, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    pool = await aiopg.create_pool(database_url, minsize=1, maxsize=1)
    try:
        assert await apply_ideas(pool, [state(ws, idea, "Created", 10)]) == 1
        # A later edit, then the creation again (a redelivery), then a late delete's older
        # event: the edit stays.
        assert await apply_ideas(pool, [state(ws, idea, "Edited", 20)]) == 1
        assert await apply_ideas(pool, [state(ws, idea, "Created", 10)]) == 0
        assert row(database_url, ws, idea) == ("Edited", "new", None, 20)
        # The same event twice: the same state.
        assert await apply_ideas(pool, [state(ws, idea, "Edited", 20)]) == 1
        assert row(database_url, ws, idea) == ("Edited", "new", None, 20)
        # Events of one batch in any order: the newest of each idea, each idea its own.
        merged = state(ws, idea, "Edited", 31, status="duplicate", merged=other)
        batch = [merged, state(ws, idea, "Edited", 30), state(ws, other, "Primary", 29)]
        assert await apply_ideas(pool, batch) == 2
        assert row(database_url, ws, idea) == ("Edited", "duplicate", other, 31)
        assert row(database_url, ws, other) == ("Primary", "new", None, 29)
    finally:
        pool.close()
        await pool.wait_closed()


async def test_the_backfill_gives_way_to_events(database_url: str) -> None:
    """The backfill's rows (version 0) take the place of an earlier backfill's, never of an
    event's; any event takes theirs."""
    ws, known, unknown = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    pool = await aiopg.create_pool(database_url, minsize=1, maxsize=1)
    conn = psycopg2.connect(database_url)
    try:
        await apply_ideas(pool, [state(ws, known, "From its event", 5)])
        rows = [
            (ws, known, "Read before the event", None, "new", None),
            (ws, unknown, "Written by SQL", None, "new", None),
        ]
        assert backfill(conn, rows) == 1
        assert row(database_url, ws, known) == ("From its event", "new", None, 5)
        assert row(database_url, ws, unknown) == ("Written by SQL", "new", None, 0)
        assert backfill(conn, [(ws, unknown, "Copied again", None, "deleted", None)]) == 1
        assert row(database_url, ws, unknown) == ("Copied again", "deleted", None, 0)
        # An event published before the relay numbered its events counts as 0: it takes a
        # backfilled row's place, not an event's.
        assert await apply_ideas(pool, [state(ws, unknown, "An old event", 0)]) == 1
        assert await apply_ideas(pool, [state(ws, known, "An old event", 0)]) == 0
        assert row(database_url, ws, unknown)[0] == "An old event"  # type: ignore[index]
    finally:
        conn.close()
        pool.close()
        await pool.wait_closed()


async def test_a_redelivered_older_event_changes_no_search(
    api: Api, ws: Workspace, system: Any
) -> None:
    """An idea renamed to a new meaning, then its creation event delivered again (as a broker
    redelivers, or a relay publishes twice): the search still finds the new meaning, not the
    old one, once the embedder has taken the old event."""
    conn = await aio_pika.connect_robust(AMQP_URL)
    try:
        channel = await conn.channel()
        exchange = await channel.get_exchange(f"{system.amqp_prefix}.events")
        tap = await channel.declare_queue(exclusive=True, auto_delete=True)
        await tap.bind(exchange, routing_key="idea.created")
        idea = await new_idea(api, "Dark mode for the dashboard", "A dark colour scheme")
        created = None
        for _ in range(100):
            message = await tap.get(no_ack=True, fail=False)
            if (
                message is not None
                and orjson.loads(message.body)["data"]["idea"]["id"] == idea["id"]
            ):
                created = message
                break
            await asyncio.sleep(0.05)
        assert created is not None and isinstance(created.headers.get(SEQ_HEADER), int)
        r = await api.patch(
            f"{I}/{idea['id']}",
            json={"title": "Sign in with a SAML identity provider", "summary": "Okta logins"},
        )
        assert r.status == 200, r.body

        async def new_meaning() -> bool:
            got = await similar_to(api, "Log in through Okta single sign-on", minSimilarity=0.5)
            return bool(got) and got[0]["idea"]["id"] == idea["id"]

        await until(new_meaning)
        event_id = orjson.loads(created.body)["id"]
        await exchange.publish(
            aio_pika.Message(
                created.body,
                content_type="application/json",
                message_id=event_id,
                type="idea.created",
                headers=dict(created.headers),
            ),
            routing_key="idea.created",
        )
    finally:
        await conn.close()
    log = LOG_DIR / f"{system.amqp_prefix}-similar-embedder-0.log"

    async def taken_twice() -> bool:
        lines = [line for line in log.read_text().splitlines() if event_id in line]
        return sum('"event_consumed"' in line for line in lines) >= 2

    await until(taken_twice, within=10)
    await asyncio.sleep(0.5)  # a refresh of the search process's index, had anything changed
    assert await new_meaning()
    old = await similar_to(api, "Night theme, the white screens hurt my eyes", minSimilarity=0.5)
    assert idea["id"] not in [o["idea"]["id"] for o in old]
