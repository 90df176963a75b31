"""Outbox -> relay -> RabbitMQ -> consumer: every event's effect happens exactly once.

Real PostgreSQL and RabbitMQ, with a schema, an AMQP prefix and a queue of this test's own,
and RabbitMQ stopped while events are being written (and started again).
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aio_pika
import aiopg
import pytest

from libs.api.topology import QUEUES
from libs.common import db
from libs.common.messaging import (
    DELIVERY_LIMIT,
    Broker,
    Consumer,
    OutboxRelay,
    add_event,
    event_body,
)
from tests.support import chaos
from tests.support.processes import AMQP_URL, ROOT

CONSUMER = "evtest"
ROUTING_KEY = "evtest.happened"
WORKSPACE = uuid.UUID(int=7)


@dataclass
class Rig:
    pool: aiopg.Pool
    schema: str
    broker: Broker

    async def write(self, n: int, tag: str) -> list[str]:
        """Write `n` events, one transaction each, as a service would."""
        ids = []
        for i in range(n):
            async with db.transaction(self.pool) as cur:
                eid = await add_event(
                    cur,
                    self.schema,
                    ROUTING_KEY,
                    WORKSPACE,
                    {"tag": tag, "i": i},
                    request_id=f"req-{tag}-{i}",
                )
            ids.append(str(eid))
        return ids

    async def effects(self) -> dict[str, int]:
        async with db.cursor(self.pool) as cur:
            rows = await db.fetchall(
                cur, f"SELECT event_id::text AS id, applied FROM {self.schema}.effects"
            )
        return {r["id"]: r["applied"] for r in rows}

    async def wait_for(self, ids: list[str], timeout: float) -> dict[str, int]:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            seen = await self.effects()
            if all(i in seen for i in ids) or asyncio.get_running_loop().time() > deadline:
                return seen
            await asyncio.sleep(0.1)


async def declare_queue(broker: Broker) -> None:
    """This test's consumer queue, declared like the topology's: quorum, dead-lettered."""
    assert broker.connection is not None
    ch = await broker.connection.channel()
    dlx = await ch.declare_exchange(broker.dlx_name, aio_pika.ExchangeType.DIRECT, durable=True)
    name = broker.queue_name(CONSUMER)
    dead = await ch.declare_queue(f"{name}.dead", durable=True)
    await dead.bind(dlx, routing_key=name)
    queue = await ch.declare_queue(
        name,
        durable=True,
        arguments={
            "x-queue-type": "quorum",
            "x-delivery-limit": DELIVERY_LIMIT,
            "x-dead-letter-exchange": broker.dlx_name,
            "x-dead-letter-routing-key": name,
        },
    )
    await queue.bind(broker.exchange_name, routing_key=ROUTING_KEY)
    await ch.close()


async def apply(cur: aiopg.Cursor, event: dict[str, Any], schema: str) -> None:
    # The effect counts itself: a second application would show as applied = 2.
    await cur.execute(
        f"INSERT INTO {schema}.effects (event_id, applied) VALUES (%s, 1)"
        f" ON CONFLICT (event_id) DO UPDATE SET applied = {schema}.effects.applied + 1",
        (event["id"],),
    )


@pytest.fixture(scope="module")
async def rig(database_url: str) -> AsyncIterator[Rig]:
    schema = f"evtest_{secrets.token_hex(4)}"
    prefix = f"imsevt{secrets.token_hex(4)}"
    pool = await db.create_pool(database_url, maxsize=5)
    templates = [
        (ROOT / "libs/common/migrations" / name).read_text()
        for name in ("outbox.sql", "outbox_headers.sql")
    ]
    async with db.cursor(pool) as cur:
        await cur.execute(f"CREATE SCHEMA {schema}")
        for template in templates:
            await cur.execute(template.format(schema=schema))
        await cur.execute(
            f"CREATE TABLE {schema}.effects (event_id uuid PRIMARY KEY, applied integer NOT NULL)"
        )
    broker = Broker(AMQP_URL, prefix, "ims-evtest", QUEUES)
    await broker.connect()
    await declare_queue(broker)
    consumer = Consumer(
        pool, broker, CONSUMER, schema, lambda cur, ev: apply(cur, ev, schema), prefetch=16
    )
    await consumer.start()
    relay = OutboxRelay(pool, database_url, schema, broker, interval=0.2)
    relay_task = asyncio.create_task(relay.run())
    try:
        yield Rig(pool, schema, broker)
    finally:
        relay_task.cancel()
        await asyncio.gather(relay_task, return_exceptions=True)
        await consumer.stop()
        await _delete_broker_objects(broker)
        await broker.close()
        async with db.cursor(pool) as cur:
            await cur.execute(f"DROP SCHEMA {schema} CASCADE")
        pool.close()
        await pool.wait_closed()


async def _delete_broker_objects(broker: Broker) -> None:
    conn = await aio_pika.connect(AMQP_URL)
    try:
        ch = await conn.channel()
        for consumer in (*QUEUES, CONSUMER):
            for name in (broker.queue_name(consumer), broker.queue_name(consumer) + ".dead"):
                await ch.queue_delete(name)
        for name in (broker.exchange_name, broker.dlx_name):
            await ch.exchange_delete(name)
    finally:
        await conn.close()


async def test_events_arrive_once(rig: Rig) -> None:
    ids = await rig.write(50, "plain")
    seen = await rig.wait_for(ids, timeout=15)
    assert [seen.get(i) for i in ids] == [1] * len(ids)
    async with db.cursor(rig.pool) as cur:
        assert await db.fetchval(cur, f"SELECT count(*) FROM {rig.schema}.outbox") == 0


async def test_a_redelivered_event_has_no_second_effect(rig: Rig) -> None:
    """The same message published twice (as after a lost confirm) is applied once."""
    ids = await rig.write(1, "dup")
    await rig.wait_for(ids, timeout=10)
    body = event_body(uuid.UUID(ids[0]), ROUTING_KEY, WORKSPACE, {"tag": "dup"})
    await rig.broker.publish([(1, ROUTING_KEY, body, None)])
    marker = await rig.write(1, "after-dup")  # queued behind the repeat
    seen = await rig.wait_for(marker, timeout=10)
    assert seen[ids[0]] == 1 and seen[marker[0]] == 1


async def test_exactly_once_across_a_broker_outage(rig: Rig) -> None:
    """Events written before, during and after RabbitMQ is down each take effect exactly once."""
    writer_ids: list[str] = []

    async def keep_writing() -> None:
        for round_ in range(60):
            writer_ids.extend(await rig.write(5, f"outage-{round_}"))
            await asyncio.sleep(0.05)

    writer = asyncio.create_task(keep_writing())
    try:
        await asyncio.sleep(0.5)
        await chaos.stop_broker()
        await asyncio.sleep(1.0)
        assert not rig.broker.ready
        during = await rig.write(20, "while-down")
    finally:
        await chaos.start_broker()
    await writer
    ids = writer_ids + during
    seen = await rig.wait_for(ids, timeout=60)
    missing = [i for i in ids if i not in seen]
    assert not missing, f"{len(missing)} of {len(ids)} events never took effect"
    assert {seen[i] for i in ids} == {1}
    async with db.cursor(rig.pool) as cur:
        assert await db.fetchval(cur, f"SELECT count(*) FROM {rig.schema}.outbox") == 0


async def test_malformed_message_is_dead_lettered(rig: Rig) -> None:
    assert rig.broker.exchange is not None
    await rig.broker.exchange.publish(aio_pika.Message(b"not json"), routing_key=ROUTING_KEY)
    conn = await aio_pika.connect(AMQP_URL)
    try:
        ch = await conn.channel()
        dead = await ch.declare_queue(rig.broker.queue_name(CONSUMER) + ".dead", durable=True)
        msg = None
        for _ in range(50):
            msg = await dead.get(fail=False)
            if msg is not None:
                break
            await asyncio.sleep(0.1)
        assert msg is not None and msg.body == b"not json"
        await msg.ack()
    finally:
        await conn.close()


@pytest.mark.timeout(60)
async def test_relay_stops_when_cancelled_while_notices_arrive(rig: Rig, database_url: str) -> None:
    """A relay cancelled as a notice arrives stops (with asyncio.wait_for on 3.11 the
    cancellation could be swallowed and the relay, and the shutdown with it, went on)."""
    flooding = True

    async def flood() -> None:
        async with aiopg.connect(database_url) as conn:
            async with conn.cursor() as cur:
                while flooding:
                    await cur.execute(f"NOTIFY {rig.schema}_outbox")

    flooder = asyncio.create_task(flood())
    try:
        for _ in range(40):
            relay = OutboxRelay(rig.pool, database_url, rig.schema, rig.broker, interval=0.2)
            task = asyncio.create_task(relay.run())
            await asyncio.sleep(0.05)
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=2.0)
            assert done, "the relay went on after it was cancelled"
    finally:
        flooding = False
        await flooder
