"""Fault drills, Jepsen-style: a steady write load with webhook receivers attached, a fault,
and afterwards the history checked.

`Drills` runs every process of the system on a private PostgreSQL cluster and a private
RabbitMQ node (tests/support/private.py), so stopping them touches nothing else on the
machine; two gateways, so that a killed gateway leaves one to answer. Each drill:

1. starts a load of idea creations through the gateways (a few workers, each request with a
   client timeout of `REQUEST_TIMEOUT_S`), and polls every process's /readyz;
2. applies the fault (stop and start RabbitMQ, restart PostgreSQL, SIGKILL a process and start
   it again, a receiver that hangs), then waits for every /readyz to answer 200 again;
3. keeps the load up a little, stops it, and waits for the deliveries to settle.

Its outcome: the answers by status, requests that got no answer (refused connections, which
only a killed gateway's own clients may see) or ran past the timeout (never allowed), whether
each readiness went red and came back green, and, from the database as ground truth, every
idea committed in the workspace against the `idea.created` deliveries the receiver got: lost
(must be 0) and duplicates (reported: delivery is at least once).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import psycopg2

from tests.support.api import make_key, make_workspace
from tests.support.private import PrivatePostgres, PrivateRabbit
from tests.support.processes import SERVICES, System
from tests.webhooks.support import PartSystem, Receiver

REQUEST_TIMEOUT_S = 10.0
# A request still unanswered this long is about to be a hang: every process is sent SIGUSR1 then
# (once a drill), which logs each of its asyncio tasks with its stack (libs/common/web/serving.py),
# so that the process logs under .run/test-logs/ say what it was waiting on.
HANG_DUMP_S = 6.0
WRITERS = 4
WRITE_PAUSE_S = 0.02
SETTLE_S = 90.0


@dataclass
class Outcome:
    drill: str
    seconds: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)
    no_answer: int = 0  # connection refused or reset: the process itself was gone
    over_timeout: int = 0  # never allowed
    max_latency_ms: float = 0.0
    went_red: list[str] = field(default_factory=list)
    red_at_end: list[str] = field(default_factory=list)
    committed: int = 0
    delivered: int = 0
    lost: int = 0
    duplicates: int = 0
    notes: list[str] = field(default_factory=list)

    def problems(self, may_refuse: bool = False, must_go_red: tuple[str, ...] = ()) -> list[str]:
        bad = [s for s in self.statuses if not (s.startswith("2") or s == "503")]
        out = []
        if bad:
            out.append(f"answers other than 2xx or 503: { {s: self.statuses[s] for s in bad} }")
        if self.over_timeout:
            out.append(f"{self.over_timeout} requests ran past {REQUEST_TIMEOUT_S} s")
        if self.no_answer and not may_refuse:
            out.append(f"{self.no_answer} requests got no answer")
        if self.lost:
            out.append(f"{self.lost} committed events never delivered")
        if self.red_at_end:
            out.append(f"readiness still red at the end: {self.red_at_end}")
        missing = [p for p in must_go_red if not any(r.startswith(p) for r in self.went_red)]
        if missing:
            out.append(f"readiness never went red for {missing}")
        if not self.committed:
            out.append("nothing was committed")
        return out

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Drills:
    """The private servers, the system, a workspace with a receiver; one drill at a time."""

    def __init__(
        self, replicas: dict[str, int] | None = None, services: tuple[str, ...] | None = None
    ) -> None:
        """Every service (two gateways by default), or only `services` (one process each)."""
        self.replicas = replicas or {"gateway": 2}
        self.services = services
        self.pg: PrivatePostgres | None = None
        self.mq: PrivateRabbit | None = None
        self.system: System | None = None
        self.receiver = Receiver()
        self.path = Receiver.new_path()
        self.key = ""
        self.workspace_id = ""
        self.http: aiohttp.ClientSession | None = None
        self.seen_while_down: dict[str, tuple[int, dict[str, str], Any]] = {}

    async def __aenter__(self) -> Drills:
        try:
            await self._start()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def _start(self) -> None:
        self.pg = PrivatePostgres()
        self.mq = PrivateRabbit()
        await asyncio.gather(asyncio.to_thread(self.pg.start), asyncio.to_thread(self.mq.start))
        url = await asyncio.to_thread(self.pg.create_database)
        await self.receiver.start()
        kind: Any = System
        kw: dict[str, Any] = {"replicas": self.replicas}
        if self.services is not None:
            kind, kw = PartSystem, {"services": self.services}
        self.system = kind(
            url,
            f"imsdrill{secrets.token_hex(4)}",
            **kw,
            env_overrides={
                "AMQP_URL": self.mq.url,
                "WEBHOOK_RETRY_SCHEDULE": "0,1,1,2,5",
                "WEBHOOK_TIMEOUT_S": "2",
                "LOG_LEVEL": "info",
            },
        )
        self.system.start()
        await self.system.wait_ready(timeout=60)
        ws = make_workspace(url, rate_limit=10_000_000)
        self.workspace_id, self.key = ws["id"], make_key(url, ws["id"])["key"]
        self.http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S))
        r = await self.call(
            "POST",
            "/api/v1/webhooks",
            {"targetUrl": self.receiver.url(self.path), "events": ["idea.created"]},
        )
        assert r == 200, r

    async def __aexit__(self, *_: Any) -> None:
        if self.http is not None:
            await self.http.close()
        if self.system is not None and self.system.procs:
            await asyncio.to_thread(self.system.stop)
        await self.receiver.stop()
        if self.mq is not None:
            await asyncio.to_thread(self.mq.destroy)
        if self.pg is not None:
            await asyncio.to_thread(self.pg.destroy)

    async def call(self, method: str, path: str, body: Any = None, gateway: int = 0) -> int:
        assert self.http is not None and self.system is not None
        base = self.system.gateway_urls()[gateway]
        async with self.http.request(
            method, base + path, json=body, headers={"Authorization": f"Bearer {self.key}"}
        ) as r:
            await r.read()
            return r.status

    # ---- the pieces of a drill ---------------------------------------------------------

    async def _write(self, stop: asyncio.Event, out: Outcome, latencies: list[float]) -> None:
        statuses: Counter[str] = Counter()
        n = 0
        in_flight: dict[int, float] = {}

        async def worker(w: int) -> None:
            nonlocal n
            while not stop.is_set():
                n += 1
                started = in_flight[w] = time.monotonic()
                try:
                    status = await self.call(
                        "POST",
                        "/api/v1/ideas",
                        {"title": f"drill {w} {n}"},
                        gateway=n % 2 if len(self.system.gateway_urls()) > 1 else 0,
                    )  # type: ignore[union-attr]
                    statuses[str(status)] += 1
                except TimeoutError:
                    out.over_timeout += 1
                except aiohttp.ClientError:
                    out.no_answer += 1
                    await asyncio.sleep(0.05)
                del in_flight[w]
                latencies.append(time.monotonic() - started)
                await asyncio.sleep(WRITE_PAUSE_S)

        async def watchdog() -> None:
            while not stop.is_set():
                await asyncio.sleep(0.5)
                oldest = min(in_flight.values(), default=time.monotonic())
                if time.monotonic() - oldest > HANG_DUMP_S:
                    self.dump_tasks()
                    out.notes.append(f"a request unanswered after {HANG_DUMP_S} s: tasks dumped")
                    return

        dog = asyncio.create_task(watchdog())
        try:
            await asyncio.gather(*(worker(w) for w in range(WRITERS)))
        finally:
            dog.cancel()
        out.statuses = dict(statuses)

    def dump_tasks(self) -> None:
        """SIGUSR1 to every process: each logs its asyncio tasks with their stacks."""
        assert self.system is not None
        for procs in self.system.procs.values():
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGUSR1)

    def _endpoints(self) -> list[tuple[str, str]]:
        assert self.system is not None
        return [
            (f"{svc}-{i}", f"http://127.0.0.1:{self.system.ports[svc][i]}/readyz")
            for svc in SERVICES
            for i in range(len(self.system.procs.get(svc, [])))
        ]

    async def _ready(self, url: str) -> bool:
        assert self.http is not None
        try:
            async with self.http.get(url, timeout=aiohttp.ClientTimeout(total=2)) as r:
                await r.read()
                return r.status == 200
        except (TimeoutError, aiohttp.ClientError):
            return False

    async def _watch(self, stop: asyncio.Event, red: set[str]) -> None:
        while not stop.is_set():
            states = await asyncio.gather(*(self._ready(u) for _, u in self._endpoints()))
            red.update(
                name for (name, _), ok in zip(self._endpoints(), states, strict=True) if not ok
            )
            await asyncio.sleep(0.1)

    async def wait_green(self, timeout: float = 90.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            states = await asyncio.gather(*(self._ready(u) for _, u in self._endpoints()))
            red = [name for (name, _), ok in zip(self._endpoints(), states, strict=True) if not ok]
            if not red or time.monotonic() > deadline:
                return red
            await asyncio.sleep(0.2)

    def _committed(self) -> set[str]:
        assert self.system is not None
        conn = psycopg2.connect(self.system.database_url)
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT id::text FROM ideas.ideas WHERE workspace_id = %s", (self.workspace_id,)
                )
                return {r[0] for r in cur.fetchall()}
        finally:
            conn.close()

    def _delivered(self) -> list[str]:
        return [r.json["data"]["idea"]["id"] for r in self.receiver.at(self.path)]

    async def run(
        self,
        name: str,
        fault: Callable[[], Awaitable[None]],
        before_s: float = 1.5,
        after_s: float = 2.0,
    ) -> Outcome:
        """Load, the fault, green again, load a little more, then settle and count."""
        out = Outcome(name)
        started = time.monotonic()
        stop_load, stop_watch = asyncio.Event(), asyncio.Event()
        red: set[str] = set()
        latencies: list[float] = []
        seen_before = len(self.receiver.at(self.path))
        committed_before = await asyncio.to_thread(self._committed)
        load = asyncio.create_task(self._write(stop_load, out, latencies))
        watch = asyncio.create_task(self._watch(stop_watch, red))
        try:
            await asyncio.sleep(before_s)
            await fault()
            out.red_at_end = await self.wait_green()
            await asyncio.sleep(after_s)
        finally:
            stop_load.set()
            await load
            stop_watch.set()
            await watch
        out.went_red = sorted(red)
        out.max_latency_ms = round(max(latencies, default=0) * 1000, 1)
        committed = await asyncio.to_thread(self._committed) - committed_before
        out.committed = len(committed)
        deadline = time.monotonic() + SETTLE_S
        while True:
            delivered = self._delivered()[seen_before:]
            missing = committed - set(delivered)
            if not missing or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        out.delivered = len(set(delivered) & committed)
        out.lost = len(missing)
        counts = Counter(d for d in delivered if d in committed)
        out.duplicates = sum(c - 1 for c in counts.values())
        out.seconds = round(time.monotonic() - started, 1)
        return out

    # ---- the faults ----------------------------------------------------------------------

    async def restart_postgres(self) -> None:
        assert self.pg is not None and self.http is not None and self.system is not None
        await asyncio.to_thread(self.pg.stop, "fast")
        await asyncio.sleep(1.0)  # down long enough for every process to notice
        # What a client and a probe see meanwhile: a read through the gateway, the ideas
        # service's readiness.
        async with self.http.get(
            self.system.base_url + "/api/v1/ideas", headers={"Authorization": f"Bearer {self.key}"}
        ) as r:
            self.seen_while_down["read"] = (r.status, dict(r.headers), await r.json())
        async with self.http.get(self.system.service_url("ideas") + "/readyz") as r:
            self.seen_while_down["ready"] = (r.status, dict(r.headers), await r.json())
        await asyncio.sleep(1.0)
        await asyncio.to_thread(self.pg.start)

    async def restart_rabbitmq(self) -> None:
        assert self.mq is not None
        await asyncio.to_thread(self.mq.stop)
        await asyncio.sleep(2.0)
        await asyncio.to_thread(self.mq.start)

    def kill(self, svc: str, i: int = 0) -> Callable[[], Awaitable[None]]:
        async def fault() -> None:
            assert self.system is not None
            await asyncio.to_thread(self.system.stop_one, svc, i, signal.SIGKILL)
            await asyncio.sleep(0.5)
            self.system.start_one(svc, i)
            deadline = time.monotonic() + 60
            while not self.system.serving(svc, i):
                assert time.monotonic() < deadline, f"{svc}-{i} did not start again"
                await asyncio.sleep(0.1)

        return fault

    async def hanging_receiver(self) -> None:
        """A second subscription whose receiver never answers, for a while; then removed."""
        hang = Receiver.new_path()
        self.receiver.answer(hang, "hang")
        assert self.http is not None and self.system is not None
        base = self.system.gateway_urls()[0]
        h = {"Authorization": f"Bearer {self.key}"}
        async with self.http.post(
            base + "/api/v1/webhooks",
            headers=h,
            json={"targetUrl": self.receiver.url(hang), "events": ["idea.created"]},
        ) as r:
            sub = (await r.json())["data"]
        await asyncio.sleep(6.0)
        async with self.http.delete(base + f"/api/v1/webhooks/{sub['id']}", headers=h) as r:
            await r.read()
        with contextlib.suppress(KeyError):
            del self.receiver.plans[hang]
