"""Stopping and starting the real broker and database under a running system.

RabbitMQ: `rabbitmqctl stop_app` / `start_app` stops the broker application (connections drop,
durable queues and persistent messages survive) without stopping the Erlang node.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from urllib.parse import urlsplit

AMQP_URL = os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _rabbitmqctl(action: str) -> None:
    subprocess.run(["rabbitmqctl", action], check=True, capture_output=True, timeout=60)


async def stop_broker() -> None:
    await asyncio.to_thread(_rabbitmqctl, "stop_app")


async def start_broker(timeout: float = 60.0) -> None:
    await asyncio.to_thread(_rabbitmqctl, "start_app")
    u = urlsplit(AMQP_URL)
    deadline = time.monotonic() + timeout
    while not _port_open(u.hostname or "127.0.0.1", u.port or 5672):
        if time.monotonic() > deadline:
            raise TimeoutError("RabbitMQ did not come back")
        await asyncio.sleep(0.2)
