"""A private PostgreSQL cluster and a private RabbitMQ node, for drills that stop and start them.

The machine's own servers are never touched: each private server has its own data directory
under a temporary directory, its own ports, and (RabbitMQ) its own node name, epmd, Erlang
cookie and no plugins. When root, PostgreSQL runs as the `postgres` account (it refuses root),
as `scripts/devrun/pgcluster.py` does for `make run`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg2

from scripts.devrun import pgcluster, rabbitmq
from scripts.devrun.targets import AmqpTarget
from services.ctl.migrate import migrate
from tests.support.processes import free_port


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class PrivatePostgres:
    """`initdb` once, then `start`, `stop` (fast shutdown) and `start` again at will."""

    def __init__(self) -> None:
        bindir = pgcluster.find_bindir()
        if bindir is None:
            raise RuntimeError("no PostgreSQL server binaries (initdb, pg_ctl) found")
        self.bindir = bindir
        self.account = pgcluster.server_account()
        self.port = free_port()
        self.home = Path(tempfile.mkdtemp(prefix="ims-drill-pg-", dir="/var/tmp"))
        self.data = self.home / "data"
        self._as = pgcluster.as_account(self.account)
        if self.account is not None:
            os.chown(self.home, self.account.pw_uid, self.account.pw_gid)
        subprocess.run(
            [
                self.bindir / "initdb",
                "-D",
                self.data,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            cwd=self.home,
            check=True,
            capture_output=True,
            timeout=120,
            **self._as,
        )
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(
                f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.home}'\nfsync = off\n"
                "synchronous_commit = off\nfull_page_writes = off\n"
                "max_connections = 200\nshared_buffers = 64MB\n"
            )

    def url(self, dbname: str = "ideas") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [self.bindir / "pg_ctl", "-D", self.data, *args],
            cwd=self.home,
            check=True,
            capture_output=True,
            timeout=120,
            **self._as,
        )

    def start(self) -> None:
        self._pg_ctl("-l", str(self.home / "server.log"), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._pg_ctl("-m", mode, "-w", "-t", "60", "stop")

    def create_database(self, dbname: str = "ideas") -> str:
        """A migrated database; its URL."""
        conn = psycopg2.connect(self.url("postgres"))
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{dbname}"')
        conn.close()
        url = self.url(dbname)
        migrate(url)
        return url

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass  # not running
        shutil.rmtree(self.home, ignore_errors=True)


_CONFIG = """default_user = guest
default_pass = guest
default_vhost = /
loopback_users = none
"""


class PrivateRabbit:
    """A private RabbitMQ node: `start`, `stop` (the whole node, as an outage) and `start`
    again; durable queues and persistent messages survive, as on a real broker restart."""

    def __init__(self) -> None:
        server, epmd = rabbitmq.find_server(), rabbitmq.find_epmd()
        if server is None or epmd is None:
            raise RuntimeError("no RabbitMQ server (or epmd) found")
        self.server, self.epmd = server, epmd
        self.port, self.dist_port, self.epmd_port = free_port(), free_port(), free_port()
        self.home = Path(tempfile.mkdtemp(prefix="ims-drill-mq-"))
        for name in ("home", "mnesia", "log", "conf.d"):
            (self.home / name).mkdir()
        (self.home / "rabbitmq.conf").write_text(_CONFIG)
        (self.home / "advanced.config").write_text("[].\n")
        (self.home / "enabled_plugins").write_text("[].\n")
        (self.home / "rabbitmq-env.conf").write_text("# settings come from the environment\n")
        self.nodename = f"imsdrill{self.port}@localhost"
        self._epmd: subprocess.Popen[bytes] | None = None
        self._node: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/"

    def _env(self) -> dict[str, str]:
        target = AmqpTarget.parse(self.url)
        return rabbitmq.node_env(
            self.home, target, self.epmd_port, self.dist_port, nodename=self.nodename
        )

    def _spawn(self, cmd: list[Any], log: str) -> subprocess.Popen[bytes]:
        with open(self.home / log, "ab") as out:
            return subprocess.Popen(
                [str(c) for c in cmd],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._env(),
                cwd=self.home,
                start_new_session=True,
            )

    def start(self, timeout: float = 120.0) -> None:
        if self._epmd is None or self._epmd.poll() is not None:
            self._epmd = self._spawn(
                [self.epmd, "-port", self.epmd_port, "-address", "127.0.0.1"], "epmd.log"
            )
        self._node = self._spawn([self.server], "server.log")
        deadline = time.monotonic() + timeout
        while not self._accepts_login():
            if self._node.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the private RabbitMQ did not start; see {self.home}/log")
            time.sleep(0.3)

    def _accepts_login(self) -> bool:
        if not _port_open(self.port):
            return False
        from scripts.devrun import amqp

        try:
            amqp.check("127.0.0.1", self.port, "guest", "guest", "/", tls=False)
        except (OSError, amqp.AmqpError):
            return False
        return True

    def stop(self) -> None:
        """The whole node goes down (SIGTERM to its process group), as in an outage."""
        for proc in (self._node,):
            if proc is not None and proc.poll() is None:
                _stop_group(proc, 60)
        deadline = time.monotonic() + 30
        while _port_open(self.port) and time.monotonic() < deadline:
            time.sleep(0.2)

    def destroy(self) -> None:
        self.stop()
        if self._epmd is not None and self._epmd.poll() is None:
            _stop_group(self._epmd, 10)
        shutil.rmtree(self.home, ignore_errors=True)


def _stop_group(proc: subprocess.Popen[bytes], timeout: float) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    try:  # children left in the group (the Erlang VM's helpers)
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
