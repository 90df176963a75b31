"""Shared by the ideas tests: a tap on the events exchange."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aio_pika
import orjson
import pytest

from tests.support.processes import AMQP_URL, System


class Tap:
    """A private queue bound to the events exchange, filtered to one workspace."""

    def __init__(self, queue: aio_pika.abc.AbstractQueue, workspace_id: str) -> None:
        self.queue, self.workspace_id = queue, workspace_id

    async def take(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        deadline = asyncio.get_running_loop().time() + timeout
        while len(out) < n:
            assert asyncio.get_running_loop().time() < deadline, f"got only {out}"
            msg = await self.queue.get(no_ack=True, fail=False)
            if msg is None:
                await asyncio.sleep(0.05)
                continue
            event = orjson.loads(msg.body)
            assert msg.routing_key == event["type"]
            if event["workspaceId"] == self.workspace_id:
                out.append(event)
        return out


@pytest.fixture
async def tap(system: System, ws: Any) -> AsyncIterator[Tap]:
    conn = await aio_pika.connect_robust(AMQP_URL)
    channel = await conn.channel()
    exchange = await channel.get_exchange(f"{system.amqp_prefix}.events")
    queue = await channel.declare_queue(exclusive=True, auto_delete=True)
    await queue.bind(exchange, routing_key="idea.*")
    yield Tap(queue, ws.id)
    await conn.close()
