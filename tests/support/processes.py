"""Real processes for end-to-end tests: every service on free ports, its own database and queues."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import psycopg2

from scripts.devrun.common import free_ports
from services.ctl.migrate import migrate

ROOT = Path(__file__).resolve().parents[2]
SERVICES = (
    "gateway",
    "ideas",
    "customers",
    "webhooks",
    "analytics",
    "mcp",
    "similar",
    "similar-embedder",
)
# The processes that are not a package's own entry point (`python -m services.<name>`).
MODULES = {"similar-embedder": "services.similar.embedder"}
# Processes no one calls (no `<NAME>_URLS`), with the variable of the port of their probes.
WORKERS = {"similar-embedder": "EMBEDDER_PORT"}


# Where an older source tree (the bench runs some) has a process under another module.
MODULES_BEFORE = {"similar": "services.ideas.similar_server"}


def module_of(svc: str, root: Path | None = None) -> str:
    """The module `python -m` runs for a process of SERVICES (in the source tree `root`)."""
    module = MODULES.get(svc, f"services.{svc}")
    if root is not None and svc in MODULES_BEFORE and not _has_module(root, module):
        return MODULES_BEFORE[svc]
    return module


def _has_module(root: Path, module: str) -> bool:
    path = root / module.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__main__.py").exists()


BASE_DSN = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/ideas")
AMQP_URL = os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
LOG_DIR = ROOT / ".run" / "test-logs"


def tcp_sockets() -> Iterator[list[str]]:
    """Each TCP socket the kernel lists (/proc/net/tcp and tcp6), as its columns: [1] the
    local address, [2] the remote one, [3] the state (01 established, 0A listening), [5] the
    timer and [9] the inode."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                yield line.split()


def open_files(pid: int) -> set[str]:
    """What process `pid`'s descriptors point at (a socket as `socket:[inode]`)."""
    out = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                out.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return out


def listens(pid: int, port: int) -> bool:
    """Whether process `pid` holds a listening TCP socket on `port` (Linux /proc)."""
    hex_port = f":{port:04X}"
    inodes = {
        f"socket:[{cols[9]}]"
        for cols in tcp_sockets()
        if cols[1].endswith(hex_port) and cols[3] == "0A"  # 0A: LISTEN
    }
    return bool(inodes & open_files(pid))


_handed_out: set[int] = set()


def free_port() -> int:
    """A free port below the kernel's ephemeral range, never the same twice in one run: a port
    from bind(0) can be handed again to the next caller (two services of one System got the
    same port) or to an outgoing connection before the service binds it."""
    port = free_ports(1, avoid=_handed_out, what="a service")[0]
    _handed_out.add(port)
    return port


def dsn_for(dbname: str) -> str:
    params = psycopg2.extensions.parse_dsn(BASE_DSN)
    params["dbname"] = dbname
    return " ".join(f"{k}={v}" for k, v in params.items())


def url_dsn_for(dbname: str) -> str:
    base, _, _ = BASE_DSN.rpartition("/")
    return f"{base}/{dbname}"


def create_database() -> str:
    """A fresh, migrated database for one test run; returns its URL."""
    name = f"ims_test_{secrets.token_hex(4)}"
    url = url_dsn_for(name)
    migrate(url)
    return url


def drop_database(url: str) -> None:
    name = url.rpartition("/")[2]
    conn = psycopg2.connect(dsn_for("postgres"))
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    conn.close()


@dataclass
class System:
    """One set of running processes (optionally several replicas of each) sharing a database."""

    database_url: str
    amqp_prefix: str
    env_overrides: dict[str, str] = field(default_factory=dict)
    replicas: dict[str, int] = field(default_factory=dict)
    ports: dict[str, list[int]] = field(default_factory=dict)
    metrics_ports: dict[str, list[int]] = field(default_factory=dict)  # internal metrics listeners
    procs: dict[str, list[subprocess.Popen[bytes]]] = field(default_factory=dict)
    internal_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    cursor_secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    root: Path = ROOT  # the source tree the processes run from (the bench runs older ones too)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['gateway'][0]}"

    def gateway_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{p}" for p in self.ports["gateway"]]

    def service_url(self, service: str, i: int = 0) -> str:
        return f"http://127.0.0.1:{self.ports[service][i]}"

    def metrics_url(self, service: str, i: int = 0) -> str:
        """Where process i of `service` serves /metrics (the gateway: its internal listener)."""
        ports = self.metrics_ports.get(service) or self.ports[service]
        return f"http://127.0.0.1:{ports[i]}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "DATABASE_URL": self.database_url,
                "AMQP_URL": AMQP_URL,
                "AMQP_PREFIX": self.amqp_prefix,
                "INTERNAL_TOKEN": self.internal_token,
                "CURSOR_SECRET": self.cursor_secret,
                "LOG_FORMAT": "json",
                "WEBHOOK_ALLOW_PRIVATE_TARGETS": "1",
                "WEBHOOK_ALLOW_HTTP": "1",
                "SHUTDOWN_TIMEOUT_S": "5",
                "PYTHONUNBUFFERED": "1",
            }
        )
        for svc in SERVICES[1:]:
            if svc in WORKERS:
                continue
            env[f"{svc.upper()}_URLS"] = ",".join(f"http://127.0.0.1:{p}" for p in self.ports[svc])
        env.update(self.env_overrides)
        return env

    def runs(self, svc: str) -> bool:
        """Whether the source tree has the process (an older tree the bench runs may not)."""
        return _has_module(self.root, module_of(svc, self.root))

    def start(self) -> None:
        for svc in SERVICES:
            count = self.replicas.get(svc, 1) if self.runs(svc) else 0
            self.ports[svc] = [free_port() for _ in range(count)]
        for svc in SERVICES:
            for i in range(len(self.ports[svc])):
                self.start_one(svc, i)

    def start_one(self, svc: str, i: int) -> None:
        env = self.env()
        port = str(self.ports[svc][i])
        env[WORKERS.get(svc, "GATEWAY_PORT" if svc == "gateway" else f"{svc.upper()}_PORT")] = port
        if svc == "gateway":  # its internal metrics listener, kept across restarts
            metrics = self.metrics_ports.setdefault("gateway", [])
            while len(metrics) <= i:
                metrics.append(free_port())
            env["GATEWAY_METRICS_PORT"] = str(metrics[i])
        # here, not in start(): systems of a part of the services start them one by one, and on
        # a clean clone the first may be such a one
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        log = open(LOG_DIR / f"{self.amqp_prefix}-{svc}-{i}.log", "ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", module_of(svc, self.root)],
            cwd=self.root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        self.procs.setdefault(svc, [])
        if len(self.procs[svc]) > i:
            self.procs[svc][i] = proc
        else:
            self.procs[svc].append(proc)

    def serving(self, svc: str, i: int) -> bool:
        """Whether the process itself listens on its port: a /readyz answer alone could come
        from another process on the same port."""
        return listens(self.procs[svc][i].pid, self.ports[svc][i])

    async def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as session:
            for svc, ports in self.ports.items():
                for i, port in enumerate(ports):
                    while True:
                        code = self.procs[svc][i].poll()
                        if code is not None:
                            raise RuntimeError(f"{svc} on {port} exited with {code}; see {LOG_DIR}")
                        try:
                            async with session.get(f"http://127.0.0.1:{port}/readyz") as r:
                                if r.status == 200 and self.serving(svc, i):
                                    break
                        except aiohttp.ClientError:
                            pass
                        if time.monotonic() > deadline:
                            raise TimeoutError(f"{svc} on {port} not ready; see {LOG_DIR}")
                        await asyncio.sleep(0.1)

    def stop_one(
        self, svc: str, i: int = 0, sig: int = signal.SIGTERM, timeout: float = 15.0
    ) -> int:
        proc = self.procs[svc][i]
        if proc.poll() is None:
            proc.send_signal(sig)
        return proc.wait(timeout=timeout)

    def stop(self) -> dict[str, list[int]]:
        """SIGTERM everything; return the exit codes (0 is a clean shutdown)."""
        for procs in self.procs.values():
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
        codes: dict[str, list[int]] = {}
        for svc, procs in self.procs.items():
            for p in procs:
                try:
                    codes.setdefault(svc, []).append(p.wait(timeout=20))
                except subprocess.TimeoutExpired:
                    p.send_signal(signal.SIGUSR1)  # the process logs what it is waiting on
                    time.sleep(0.5)
                    p.kill()
                    codes.setdefault(svc, []).append(p.wait())
        return codes


async def delete_queues(prefix: str) -> None:
    """Remove a test run's queues and exchanges from the broker."""
    import aio_pika

    from libs.api.topology import QUEUES

    conn = await aio_pika.connect(AMQP_URL)
    try:
        ch = await conn.channel()
        for consumer in QUEUES:
            for name in (f"{prefix}.{consumer}", f"{prefix}.{consumer}.dead"):
                await ch.queue_delete(name)
        for name in (f"{prefix}.events", f"{prefix}.dead"):
            await ch.exchange_delete(name)
    finally:
        await conn.close()
