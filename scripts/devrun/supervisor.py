"""Running the processes: prefixed output, readiness, restarts and an orderly stop.

Restart policy: a process that exits while nothing is stopping is started again, after 1 s if
it had run for QUICK_EXIT_S or more, else after 2, 4, 8, then 16 s for its 1st to 4th quick
exit in a row. At the GIVE_UP_AFTER-th quick exit in a row the supervisor gives up, stops
everything and exits 1: a process that cannot start at all (a port taken, a bad setting)
would otherwise loop for ever and hide the cause.

Stop: on SIGINT or SIGTERM every process group gets SIGTERM; what still runs after
STOP_TIMEOUT_S gets SIGKILL. A second signal kills at once.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import BinaryIO
from urllib.parse import urlsplit

from .layout import Process

SELF = "supervise"
QUICK_EXIT_S = 30.0
BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0)
GIVE_UP_AFTER = 5
STOP_TIMEOUT_S = 20.0
READY_WARN_S = 60.0
LINE_LIMIT = 1 << 20


PUMP_CHUNK = 1 << 16


def restart_delay(quick_exits: int) -> float | None:
    """Seconds to wait before a restart after `quick_exits` quick exits in a row; None: give up."""
    if quick_exits >= GIVE_UP_AFTER:
        return None
    return BACKOFF_S[min(quick_exits, len(BACKOFF_S) - 1)]


def describe_exit(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with status {code}"


class Output:
    """One stream for every process, each line prefixed with the name of its process."""

    def __init__(self, stream: BinaryIO, names: list[str]) -> None:
        self._stream = stream
        self._width = max(len(name) for name in [SELF, *names])

    def line(self, name: str, data: bytes) -> None:
        prefix = f"{name:<{self._width}} | ".encode()
        self._stream.write(prefix + data + (b"" if data.endswith(b"\n") else b"\n"))
        self._stream.flush()

    def lines(self, name: str, lines: list[bytes]) -> None:
        """Several whole lines (without their newline) of one process, in one write."""
        prefix = f"{name:<{self._width}} | ".encode()
        self._stream.write(b"".join(prefix + data + b"\n" for data in lines))
        self._stream.flush()

    def note(self, text: str) -> None:
        self.line(SELF, text.encode())

    def plain(self, text: str) -> None:
        self._stream.write(text.encode() + b"\n")
        self._stream.flush()


def banner(base_url: str, demo: Mapping[str, object] | None) -> list[str]:
    rule = "-" * 72
    lines = [rule, f"Idea Management Service is ready at {base_url}"]
    key = demo.get("key") if demo else None
    if key:
        lines.append(f"Demo API key: {key}")
        lines.append(
            f"Try: curl -s -H 'Authorization: Bearer {key}' '{base_url}/api/v1/ideas?limit=5'"
        )
    lines += ["Ctrl-C stops everything.", rule]
    return lines


def busy_ports(processes: list[Process]) -> list[str]:
    """The listeners already taken, say by another `make run`; found before anything starts."""
    busy = []
    for process in processes:
        for host, port in process.listeners():
            try:
                info = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)
                family, kind, _, _, address = info[0]
                with socket.socket(family, kind) as sock:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind(address)
            except OSError:
                busy.append(f"{process.name} ({host}:{port})")
    return busy


def _die_with_parent_prefix() -> list[str]:
    # The kernel sends SIGTERM to a child should the supervisor die without stopping it
    # (SIGKILL, a crash): no process outlives `make run`. setpriv sets that and execs.
    tool = shutil.which("setpriv")
    if tool is None:
        return []
    help_text = subprocess.run([tool, "--help"], check=False, capture_output=True, text=True).stdout
    return [tool, "--pdeathsig", "TERM", "--"] if "--pdeathsig" in help_text else []


async def http_status(url: str, timeout: float = 2.0) -> int | None:
    """The status of GET `url`, None when nothing answers in time."""
    parts = urlsplit(url)
    request = f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n"
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
            try:
                writer.write(request.encode())
                status_line = await reader.readline()
            finally:
                writer.close()
                with suppress(OSError):
                    await writer.wait_closed()
    except (OSError, TimeoutError):
        return None
    fields = status_line.split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


@dataclass
class Child:
    process: Process
    proc: asyncio.subprocess.Process | None = None
    pump: asyncio.Task[None] | None = None
    started_at: float = 0.0
    quick_exits: int = 0


class Supervisor:
    def __init__(
        self,
        processes: list[Process],
        env: Mapping[str, str],
        output: Output,
        ready_lines: list[str],
    ) -> None:
        self.children = [Child(process) for process in processes]
        self.env = dict(env)
        self.output = output
        self.ready_lines = ready_lines
        self.failed = False
        self._signals = 0
        self._prefix = _die_with_parent_prefix()

    async def run(self) -> int:
        """Run until a signal (0) or giving up on a process (1)."""
        self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._on_signal, sig)
        keepers = [asyncio.create_task(self._keep(child)) for child in self.children]
        announcer = asyncio.create_task(self._announce_when_ready())
        await self._stop.wait()
        announcer.cancel()
        await self._stop_all(keepers)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        return 1 if self.failed else 0

    def _on_signal(self, sig: int) -> None:
        self._signals += 1
        if self._signals == 1:
            self.output.note(f"{signal.Signals(sig).name}: stopping every process")
            self._stop.set()
        else:
            self.output.note("second signal: killing every process now")
            self._signal_all(signal.SIGKILL)

    def _give_up(self, reason: str) -> None:
        self.output.note(f"{reason}: stopping everything")
        self.failed = True
        self._stop.set()

    # --- one process ------------------------------------------------------------------------

    async def _keep(self, child: Child) -> None:
        """Run one process, restarting it by the policy above, until the stop."""
        while not self._stop.is_set():
            if not await self._start(child):
                return
            assert child.proc is not None
            code = await child.proc.wait()
            await self._drain(child)
            # Anything it started in its group goes with it, so a restart finds its port free.
            self._signal_group(child, signal.SIGKILL)
            if self._stop.is_set():
                return
            delay = self._after_exit(child, code)
            if delay is None:
                return
            with suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)

    async def _start(self, child: Child) -> bool:
        env = {"PYTHONUNBUFFERED": "1", **self.env, **child.process.env}
        try:
            child.proc = await asyncio.create_subprocess_exec(
                *self._prefix,
                *child.process.argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                # Its own process group: a Ctrl-C at the terminal reaches only the supervisor,
                # which then stops the processes itself, in order.
                start_new_session=True,
                limit=LINE_LIMIT,
            )
        except OSError as err:
            self._give_up(f"cannot start {child.process.name} ({child.process.argv[0]}): {err}")
            return False
        child.started_at = time.monotonic()
        child.pump = asyncio.create_task(self._pump(child))
        if self._stop.is_set():  # the stop began while it was being started
            self._signal_group(child, signal.SIGTERM)
        return True

    async def _pump(self, child: Child) -> None:
        # Whatever the pipe holds at once, written in one go: one read, one write and one flush
        # for many lines under load, instead of one of each a line (a sixth of a core at 1,000
        # lines a second).
        assert child.proc is not None and child.proc.stdout is not None
        reader = child.proc.stdout
        rest = b""
        while True:
            chunk = await reader.read(PUMP_CHUNK)
            if not chunk:  # the end: the last line may have had no newline
                if rest:
                    self.output.lines(child.process.name, [rest])
                return
            *whole, rest = (rest + chunk).split(b"\n")
            if len(rest) >= PUMP_CHUNK:  # a huge line: pass it on in pieces
                whole.append(rest)
                rest = b""
            if whole:
                self.output.lines(child.process.name, whole)

    async def _drain(self, child: Child) -> None:
        # Output may still be in the pipe; something it left running may hold the pipe open.
        if child.pump is not None:
            with suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(child.pump, 2)

    def _after_exit(self, child: Child, code: int) -> float | None:
        ran = time.monotonic() - child.started_at
        child.quick_exits = child.quick_exits + 1 if ran < QUICK_EXIT_S else 0
        what = f"{child.process.name} {describe_exit(code)} after {ran:.1f}s"
        delay = restart_delay(child.quick_exits)
        if delay is None:
            self._give_up(f"{what}, its {GIVE_UP_AFTER}th quick exit in a row")
        else:
            self.output.note(f"{what}; restarting it in {delay:.0f}s")
        return delay

    # --- all of them ------------------------------------------------------------------------

    def _signal_group(self, child: Child, sig: int) -> None:
        if child.proc is None:
            return
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(child.proc.pid, sig)

    def _signal_all(self, sig: int) -> None:
        for child in self.children:
            self._signal_group(child, sig)

    async def _stop_all(self, keepers: list[asyncio.Task[None]]) -> None:
        self._signal_all(signal.SIGTERM)
        _, pending = await asyncio.wait(keepers, timeout=STOP_TIMEOUT_S)
        if pending:
            running = [
                c.process.name for c in self.children if c.proc and c.proc.returncode is None
            ]
            self.output.note(
                f"still running after {STOP_TIMEOUT_S:.0f}s, killed: {', '.join(running)}"
            )
            self._signal_all(signal.SIGKILL)
            await asyncio.wait(pending, timeout=10)
        self.output.note("every process has stopped")

    async def _announce_when_ready(self) -> None:
        """Print the banner once every process answers GET /readyz with 200."""
        started = time.monotonic()
        waiting = list(self.children)
        warned = False
        while waiting:
            answers = await asyncio.gather(*(self._ready(child) for child in waiting))
            waiting = [child for child, ready in zip(waiting, answers, strict=True) if not ready]
            if waiting and not warned and time.monotonic() - started > READY_WARN_S:
                names = ", ".join(child.process.name for child in waiting)
                self.output.note(f"not ready after {READY_WARN_S:.0f}s: {names} (GET /readyz)")
                warned = True
            if waiting:
                await asyncio.sleep(0.5)
        for line in self.ready_lines:
            self.output.plain(line)

    async def _ready(self, child: Child) -> bool:
        if child.proc is None or child.proc.returncode is not None:
            return False
        return await http_status(child.process.ready_url) == 200
