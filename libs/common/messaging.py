"""Events: the transactional outbox, the relay that publishes it, and the consumer base.

A change and its event commit in one transaction (`add_event`). The relay publishes outbox rows
to one durable topic exchange with publisher confirms, pipelined, as mandatory messages (a
message no queue took comes back and stays in the outbox), then deletes them; it locks rows with
`FOR UPDATE SKIP LOCKED`, so any number of relays can run. Consumers use durable quorum queues,
commit their effect together with the event id (a repeat is skipped), ack after the commit, and
a message that keeps failing goes to a dead-letter queue after `DELIVERY_LIMIT` tries.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aio_pika
import aiopg
import orjson
import structlog
from aio_pika.abc import (
    AbstractChannel,
    AbstractExchange,
    AbstractIncomingMessage,
    AbstractRobustConnection,
)

from . import db
from .render import dumps
from .tasks import raise_if_cancelled

log = structlog.get_logger("messaging")

DELIVERY_LIMIT = 10
RELAY_BATCH = 500
# The message header with the event's place in its producer's outbox (the outbox row's id,
# taken when the event was written). Events of one entity written under its row lock (every
# event of an idea is written after the idea's row was updated, in that transaction) are
# numbered in the order of their commits, so a consumer that keeps a copy of the entity applies
# an event only when its number is not below the one it applied last (docs/events.md).
SEQ_HEADER = "x-event-seq"


def now_utc() -> datetime:
    return datetime.now(UTC)


def event_body(
    event_id: uuid.UUID,
    event_type: str,
    workspace_id: uuid.UUID,
    data: dict[str, Any],
    created_at: datetime | None = None,
) -> bytes:
    """The event as it travels and as webhook receivers get it (docs/webhooks.md), serialized
    once, in the one form (libs/common/render.py): these bytes are the delivery body."""
    return dumps(
        {
            "id": str(event_id),
            "type": event_type,
            "createdAt": created_at or now_utc(),
            "workspaceId": str(workspace_id),
            "data": data,
        }
    )


async def add_event(
    cur: aiopg.Cursor,
    schema: str,
    event_type: str,
    workspace_id: uuid.UUID,
    data: dict[str, Any],
    request_id: str | None = None,
    headers: dict[str, str] | None = None,
) -> uuid.UUID:
    """Write an event to `schema`'s outbox in the caller's transaction and wake the relay.

    `headers` travel as message headers beside the body: what a consumer needs that the
    receivers of the body (webhooks) do not get."""
    event_id = uuid.uuid4()
    body = event_body(event_id, event_type, workspace_id, data)
    await cur.execute(
        f"INSERT INTO {schema}.outbox (event_id, event_type, workspace_id, body, request_id,"
        " headers) VALUES (%s, %s, %s, %s, %s, %s)",
        (
            event_id,
            event_type,
            workspace_id,
            body,
            request_id,
            dumps(headers).decode() if headers else None,
        ),
    )
    await cur.execute(f"NOTIFY {schema}_outbox")  # delivered at commit; coalesced per tx
    return event_id


@dataclass
class Broker:
    """One robust, named connection with a confirming publisher channel and the topology:
    `queues`, every consumer queue with the routing keys it binds (libs/api/topology.py)."""

    url: str
    prefix: str
    name: str
    queues: Mapping[str, Sequence[str]] = field(default_factory=dict)
    connection: AbstractRobustConnection | None = None
    channel: AbstractChannel | None = None
    exchange: AbstractExchange | None = None

    @property
    def exchange_name(self) -> str:
        return f"{self.prefix}.events"

    @property
    def dlx_name(self) -> str:
        return f"{self.prefix}.dead"

    def queue_name(self, consumer: str) -> str:
        return f"{self.prefix}.{consumer}"

    async def connect(self) -> None:
        self.connection = await aio_pika.connect_robust(
            self.url, client_properties={"connection_name": self.name}, timeout=10
        )
        # Confirms on, and a returned (unroutable) mandatory message raises instead of
        # being confirmed silently.
        self.channel = await self.connection.channel(publisher_confirms=True, on_return_raises=True)
        self.exchange = await declare_topology(self.channel, self.prefix, self.queues)

    async def close(self) -> None:
        if self.connection is not None:
            await self.connection.close()

    @property
    def ready(self) -> bool:
        return (
            self.connection is not None
            and not self.connection.is_closed
            and self.connection.connected.is_set()
        )

    async def publish(
        self,
        rows: list[tuple[Any, str, bytes, str | None]],
        headers: Sequence[Mapping[str, Any] | None] = (),
    ) -> list[Any]:
        """Publish (key, routing key, body, request id) rows, each with its `headers` when
        given; return the keys confirmed."""
        if self.exchange is None:
            return []
        exchange = self.exchange

        async def one(
            routing_key: str, body: bytes, request_id: str | None, extra: Mapping[str, Any] | None
        ) -> None:
            message = aio_pika.Message(
                body,
                content_type="application/json",
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                message_id=orjson.loads(body)["id"],
                type=routing_key,
                headers={**({"x-request-id": request_id} if request_id else {}), **(extra or {})},
            )
            await exchange.publish(message, routing_key=routing_key, mandatory=True, timeout=10)

        # Pipelined confirms: publish the whole batch, then await the confirms together.
        extras = list(headers) or [None] * len(rows)
        results = await asyncio.gather(
            *(
                one(rk, body, rid, extra)
                for (_, rk, body, rid), extra in zip(rows, extras, strict=True)
            ),
            return_exceptions=True,
        )
        confirmed = []
        for (key, rk, _, _), res in zip(rows, results, strict=True):
            if isinstance(res, BaseException):
                log.warning("publish_failed", routing_key=rk, error=repr(res))
            else:
                confirmed.append(key)
        return confirmed


async def declare_topology(
    channel: AbstractChannel, prefix: str, queues: Mapping[str, Sequence[str]]
) -> AbstractExchange:
    """The topic exchange, the dead-letter exchange and every consumer queue with its bindings.

    Declared by every process that connects, so no event is published before the queues that
    must receive it exist (a mandatory publish to no queue would come back).
    """
    # durable: the exchange and queues outlive a broker restart.
    exchange = await channel.declare_exchange(
        f"{prefix}.events", aio_pika.ExchangeType.TOPIC, durable=True
    )
    dlx = await channel.declare_exchange(
        f"{prefix}.dead", aio_pika.ExchangeType.DIRECT, durable=True
    )
    for consumer, keys in queues.items():
        name = f"{prefix}.{consumer}"
        dead = await channel.declare_queue(f"{name}.dead", durable=True)
        await dead.bind(dlx, routing_key=name)
        queue = await channel.declare_queue(
            name,
            durable=True,
            arguments={
                # quorum: replicated, and it counts redeliveries so a poison message stops.
                "x-queue-type": "quorum",
                "x-delivery-limit": DELIVERY_LIMIT,
                "x-dead-letter-exchange": f"{prefix}.dead",
                "x-dead-letter-routing-key": name,
            },
        )
        for key in keys:
            await queue.bind(exchange, routing_key=key)
    return exchange


class OutboxRelay:
    """Publishes one schema's outbox; wakes on NOTIFY, polls as a fallback."""

    def __init__(
        self, pool: aiopg.Pool, dsn: str, schema: str, broker: Broker, interval: float = 0.5
    ) -> None:
        self.pool, self.dsn, self.schema, self.broker = pool, dsn, schema, broker
        self.interval = interval

    async def drain_once(self) -> int:
        """Publish one batch; return how many rows were published."""
        if not self.broker.ready:
            return 0
        async with db.transaction(self.pool) as cur:
            await cur.execute(
                f"SELECT id, event_type, body, request_id, headers::text FROM {self.schema}.outbox"
                " ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED",
                (RELAY_BATCH,),
            )
            rows = await cur.fetchall()
            if not rows:
                return 0
            confirmed = await self.broker.publish(
                [(r[0], r[1], bytes(r[2]), r[3]) for r in rows],
                [{**(orjson.loads(r[4]) if r[4] else {}), SEQ_HEADER: r[0]} for r in rows],
            )
            if confirmed:
                await cur.execute(
                    f"DELETE FROM {self.schema}.outbox WHERE id = ANY(%s)", (confirmed,)
                )
        return len(confirmed)

    async def run(self) -> None:
        while True:
            try:
                await self._listen_and_drain()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                raise_if_cancelled(err)
                log.warning("relay_error", schema=self.schema, error=repr(err))
                await asyncio.sleep(1.0)

    async def _listen_and_drain(self) -> None:
        async with db.listen_connection(self.dsn) as conn:
            async with conn.cursor() as cur:
                await cur.execute(f"LISTEN {self.schema}_outbox")
            while True:
                raise_if_cancelled()  # a cancellation an aiopg query swallowed
                while await self.drain_once() >= RELAY_BATCH:
                    pass
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
                # that lands as the notice arrives, and the relay would never stop.
                try:
                    async with asyncio.timeout(self.interval):
                        await conn.notifies.get()
                except TimeoutError:
                    if conn.closed:
                        raise ConnectionError("listen connection closed") from None


Handler = Callable[[aiopg.Cursor, dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class Idempotent:
    """A consumer's handler whose effect is the same however often, and in whatever order, it
    runs, because it applies the current state rather than the event's: it runs without the
    record of handled events, with the pool, and opens the transactions it needs (so it can do
    slow work, say a model's, with none open)."""

    apply: Callable[[aiopg.Pool, dict[str, Any]], Awaitable[None]]


class Event(dict[str, Any]):
    """A consumed event's fields, `body`: the exact bytes it was published as, which a
    consumer that passes the event on (the webhooks fan-out) sends as they are, and `headers`:
    what its producer sent beside the body (`add_event`)."""

    body: bytes = b""
    headers: Mapping[str, Any] = {}


async def parse_event(message: AbstractIncomingMessage) -> Event | None:
    """The event a message carries; a malformed one is dead-lettered (no retry can fix it)."""
    try:
        fields = orjson.loads(message.body)
        if not isinstance(fields, dict):
            raise TypeError("not an object")
        uuid.UUID(fields["id"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        log.error("event_malformed", routing_key=message.routing_key)
        await message.reject(requeue=False)
        return None
    event = Event(fields)
    event.body = message.body
    event.headers = message.headers or {}
    return event


class Consumer:
    """Consumes one queue; each event's effect commits with its id, then the message is acked."""

    def __init__(
        self,
        pool: aiopg.Pool,
        broker: Broker,
        consumer: str,
        schema: str,
        handler: Handler | Idempotent,
        prefetch: int = 32,
    ) -> None:
        self.pool, self.broker, self.consumer, self.schema = pool, broker, consumer, schema
        self.handler, self.prefetch = handler, prefetch
        self._channel: AbstractChannel | None = None

    async def start(self) -> None:
        assert self.broker.connection is not None
        self._channel = await self.broker.connection.channel()
        await self._channel.set_qos(prefetch_count=self.prefetch)
        queue = await self._channel.get_queue(self.broker.queue_name(self.consumer))
        await queue.consume(self.receive)

    async def stop(self) -> None:
        if self._channel is not None and not self._channel.is_closed:
            await self._channel.close()

    async def handle(self, event: dict[str, Any]) -> bool:
        """Apply the event once; False when it had already been handled."""
        if isinstance(self.handler, Idempotent):
            await self.handler.apply(self.pool, event)
            return True
        async with db.transaction(self.pool) as cur:
            await cur.execute(
                f"INSERT INTO {self.schema}.processed_events (consumer, event_id)"
                " VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (self.consumer, event["id"]),
            )
            if cur.rowcount == 0:
                return False
            await self.handler(cur, event)
        return True

    async def receive(self, message: AbstractIncomingMessage) -> None:
        """What the queue hands each message to: here, `consume_one` at once. A subclass may
        gather messages instead and handle them together (the webhooks `BatchConsumer`)."""
        await self.consume_one(message)

    async def consume_one(self, message: AbstractIncomingMessage) -> None:
        """One message: its event applied (`handle`) and the message acked, or nacked back to
        the queue after a pause when applying failed."""
        request_id = (message.headers or {}).get("x-request-id")
        with structlog.contextvars.bound_contextvars(request_id=request_id, consumer=self.consumer):
            event = await parse_event(message)
            if event is None:
                return
            started = asyncio.get_running_loop().time()
            try:
                applied = await self.handle(event)
            except Exception as err:
                log.warning(
                    "event_failed", event_id=event["id"], type=event.get("type"), error=repr(err)
                )
                await asyncio.sleep(0.5)  # back off before the broker hands it out again
                await message.nack(requeue=True)
                return
            await message.ack()
            log.info(
                "event_consumed",
                event_id=event["id"],
                type=event.get("type"),
                applied=applied,
                duration_ms=round((asyncio.get_running_loop().time() - started) * 1000, 2),
            )
