"""Helpers of the customers tests: builders and a tap on the event exchange."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aio_pika
import orjson
import pytest

from tests.support.api import Api
from tests.support.processes import AMQP_URL, System


async def new_customer(api: Api, **fields: Any) -> dict[str, Any]:
    body = {"name": f"Acme {uuid.uuid4().hex[:6]}", **fields}
    r = await api.post("/api/v1/customers", json=body)
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def new_idea(api: Api, title: str | None = None) -> dict[str, Any]:
    r = await api.post("/api/v1/ideas", json={"title": title or f"Idea {uuid.uuid4().hex[:6]}"})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def link(api: Api, idea_id: str, customer_id: str) -> dict[str, Any]:
    r = await api.post(f"/api/v1/ideas/{idea_id}/customers", json={"customerId": customer_id})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def poll(fn: Any, expect: Any, within: float = 1.0) -> Any:
    """Call `fn` until it returns `expect` or `within` seconds pass; return the last value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = await fn()
        if value == expect or loop.time() >= deadline:
            return value
        await asyncio.sleep(0.02)


async def idea_arr(api: Api, idea_id: str) -> Any:
    r = await api.get(f"/api/v1/ideas/{idea_id}")
    assert r.status == 200, r.body
    return r.data["totalCustomerARR"]


class Tap:
    """A private queue bound to the event exchange: what the services published."""

    def __init__(self, queue: aio_pika.abc.AbstractQueue, exchange: aio_pika.abc.AbstractExchange):
        self.queue, self.exchange = queue, exchange
        self.seen: list[dict[str, Any]] = []

    async def wait_for(self, pred: Any, timeout: float = 5.0) -> dict[str, Any]:
        for event in self.seen:
            if pred(event):
                return event
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            message = await self.queue.get(fail=False)
            if message is None:
                await asyncio.sleep(0.02)
                continue
            await message.ack()
            event = orjson.loads(message.body)
            self.seen.append(event)
            if pred(event):
                return event
        raise AssertionError("event not seen")

    async def republish(self, event: dict[str, Any]) -> None:
        """Deliver an event again, as a relay replica or a redelivery would."""
        await self.exchange.publish(
            aio_pika.Message(orjson.dumps(event), message_id=event["id"]), routing_key=event["type"]
        )


@pytest.fixture
async def tap(system: System) -> AsyncIterator[Tap]:
    conn = await aio_pika.connect(AMQP_URL)
    try:
        ch = await conn.channel()
        exchange = await ch.get_exchange(f"{system.amqp_prefix}.events")
        queue = await ch.declare_queue("", exclusive=True, auto_delete=True)
        for key in ("customer.*", "link.*"):
            await queue.bind(exchange, routing_key=key)
        yield Tap(queue, exchange)
    finally:
        await conn.close()
