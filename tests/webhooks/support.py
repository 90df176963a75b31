"""Helpers for webhook tests: real receivers (HTTP or HTTPS), event publishing, waiting."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import signal
import ssl
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
import psycopg2
from aiohttp import web

from libs.common.messaging import event_body
from tests.support.processes import SERVICES, System, free_port


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class Receiver:
    """An aiohttp server that records every request and answers as told, per path."""

    ssl_context: ssl.SSLContext | None = None
    received: list[Received] = field(default_factory=list)
    plans: dict[str, list[Any]] = field(default_factory=dict)
    port: int = 0
    _runner: web.AppRunner | None = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> Receiver:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=0.1
        )
        await self._runner.setup()
        self.port = free_port()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self.ssl_context)
        await site.start()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, path: str | None = None, host: str = "127.0.0.1") -> str:
        scheme = "https" if self.ssl_context else "http"
        return f"{scheme}://{host}:{self.port}{path or self.new_path()}"

    @staticmethod
    def new_path() -> str:
        return f"/hook/{uuid.uuid4().hex}"

    def answer(self, path: str, *steps: Any) -> None:
        """Statuses (or "hang") to answer at `path` in turn; the last one repeats."""
        self.plans[path] = list(steps)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.received.append(Received(request.path, dict(request.headers), body, time.time()))
        self._arrived.set()
        plan = self.plans.get(request.path, [200])
        step = plan.pop(0) if len(plan) > 1 else plan[0]
        if step == "hang":
            await asyncio.sleep(3600)
        if isinstance(step, tuple):  # (status, headers)
            return web.Response(status=step[0], headers=step[1])
        return web.Response(status=int(step), text="ok" if step < 300 else "nope")

    def at(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]

    async def wait(self, path: str, n: int = 1, timeout: float = 15.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.at(path)) < n:
            left = deadline - time.monotonic()
            assert left > 0, f"{path}: {len(self.at(path))} of {n} requests arrived"
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), timeout=min(left, 0.5))
            except TimeoutError:
                pass
        return self.at(path)


class Silent:
    """A TCP server that accepts every connection and never reads or answers."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.accepted = 0
        self.open = 0
        self.peak = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> Silent:
        self.server = await asyncio.start_server(self._accept, self.host, 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.open += 1
        self.peak = max(self.peak, self.open)
        self.writers.append(writer)
        try:
            while await reader.read(65536):  # read only to notice the close
                pass
        finally:
            self.open -= 1

    async def stop(self) -> None:
        self.server.close()
        for w in self.writers:
            w.close()
        await self.server.wait_closed()

    def url(self, host: str | None = None, path: str = "/hook") -> str:
        host = host or (f"[{self.host}]" if ":" in self.host else self.host)
        return f"http://{host}:{self.port}{path}"


def verify(secret: str, r: Received) -> bool:
    """The documented recipe: HMAC-SHA256 over timestamp + "." + raw body, hex, constant time;
    one of the comma-separated digests (two during a rotation) must match."""
    mac = hmac.new(
        secret.encode(), r.headers["X-Service-Timestamp"].encode() + b"." + r.body, hashlib.sha256
    ).hexdigest()
    return any(hmac.compare_digest(mac, s) for s in r.headers["X-Service-Signature"].split(","))


def sample_idea(**over: Any) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    idea = {
        "id": str(uuid.uuid4()),
        "ideaServiceId": "IDEA-1",
        "title": "Dark mode",
        "summary": "Please add a dark theme",
        "status": "new",
        "source": "slack",
        "category": "feature",
        "url": "https://example.com/t/1",
        "voteCount": 0,
        "signalCount": 0,
        "authorName": "Ada",
        "createdAt": now,
    }
    idea.update(over)
    return idea


def publish_events(database_url: str, events: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    """Put (type, workspace id, data) events through the outbox, as a service would."""
    conn = psycopg2.connect(database_url)
    ids = []
    try:
        with conn, conn.cursor() as cur:
            for event_type, workspace_id, data in events:
                event_id = uuid.uuid4()
                cur.execute(
                    "INSERT INTO webhooks.outbox (event_id, event_type, workspace_id, body)"
                    " VALUES (%s, %s, %s, %s)",
                    (
                        str(event_id),
                        event_type,
                        workspace_id,
                        event_body(event_id, event_type, uuid.UUID(workspace_id), data),
                    ),
                )
                ids.append(str(event_id))
            cur.execute("NOTIFY webhooks_outbox")
    finally:
        conn.close()
    return ids


def publish(database_url: str, event_type: str, workspace_id: str, data: dict[str, Any]) -> str:
    return publish_events(database_url, [(event_type, workspace_id, data)])[0]


class PartSystem(System):
    """A System running only the named services (the gateway always), for other settings."""

    def __init__(
        self, *args: Any, services: tuple[str, ...] = ("gateway", "webhooks"), **kw: Any
    ) -> None:
        super().__init__(*args, **kw)
        self.only = services

    def start(self) -> None:
        for svc in SERVICES:
            self.ports[svc] = [free_port()]
        for svc in self.only:
            self.start_one(svc, 0)

    async def wait_ready(self, timeout: float = 30.0) -> None:
        everything = self.ports
        self.ports = {s: p for s, p in everything.items() if s in self.only}
        try:
            await super().wait_ready(timeout)
        finally:
            self.ports = everything

    def kill(self, svc: str) -> None:
        self.stop_one(svc, 0, signal.SIGKILL)


async def start_part_system(
    env: dict[str, str], services: tuple[str, ...] = ("gateway", "webhooks")
) -> PartSystem:
    """A fresh database and a system of `services` with the given settings."""
    import secrets as _secrets

    from tests.support.processes import create_database

    url = await asyncio.to_thread(create_database)
    base = {"WEBHOOK_RETRY_SCHEDULE": "0,1,1", "WEBHOOK_TIMEOUT_S": "2"}
    sys_ = PartSystem(
        url, f"imstest{_secrets.token_hex(4)}", env_overrides={**base, **env}, services=services
    )
    sys_.start()
    await sys_.wait_ready()
    return sys_


async def stop_part_system(sys_: PartSystem) -> None:
    from tests.support.processes import delete_queues, drop_database

    codes = sys_.stop()
    await delete_queues(sys_.amqp_prefix)
    await asyncio.to_thread(drop_database, sys_.database_url)
    # Each of its processes must stop cleanly on SIGTERM.
    assert codes == {svc: [0] for svc in sys_.only}, codes


def workspace_api(sys_: System, http: Any, openapi: Any) -> tuple[str, Any]:
    """A new workspace of `sys_` and an API client with an all-scope key."""
    from tests.support.api import Api, make_key, make_workspace

    ws = make_workspace(sys_.database_url)
    key = make_key(sys_.database_url, ws["id"])
    return ws["id"], Api(http, sys_.base_url, key["key"], openapi)


def legacy_subscription(
    database_url: str,
    workspace_id: str,
    target_url: str,
    events: tuple[str, ...] = ("idea.created",),
) -> str:
    """A subscription written straight to the table, as one created before today's URL rules
    would be: the dispatcher must cope with whatever an old row holds."""
    sub_id = str(uuid.uuid4())
    conn = psycopg2.connect(database_url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute(
                "INSERT INTO webhooks.subscriptions (id, workspace_id, kind, target_url,"
                " events, secret) VALUES (%s, %s, 'main', %s, %s, %s)",
                (sub_id, workspace_id, target_url, list(events), "whsec_" + "a" * 40),
            )
            cur.execute("SELECT pg_notify('webhooks_subscriptions', %s)", (workspace_id,))
    finally:
        conn.close()
    return sub_id


def verify_standard(secret: str, r: Received) -> bool:
    """Standard Webhooks verification by the `standardwebhooks` package, with the secret as
    given (an independent implementation of the scheme)."""
    from standardwebhooks.webhooks import Webhook, WebhookVerificationError

    try:
        Webhook(secret).verify(r.body, r.headers)
    except WebhookVerificationError:
        return False
    return True


def hex_signatures(r: Received) -> list[str]:
    return r.headers["X-Service-Signature"].split(",")


def verify_hex(secret: str, r: Received, signature: str) -> bool:
    mac = hmac.new(
        secret.encode(), r.headers["X-Service-Timestamp"].encode() + b"." + r.body, hashlib.sha256
    ).hexdigest()
    return hmac.compare_digest(mac, signature)
