"""Paths under .run/, logging and small process helpers shared by the run tooling."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class DevenvError(Exception):
    """A problem the user has to fix; the message says what and, where it can, how."""


def run_dir() -> Path:
    """Private servers, leases and generated files live here (IMS_RUN_DIR overrides `.run/`)."""
    return Path(os.environ.get("IMS_RUN_DIR") or ROOT / ".run").absolute()


def _first_ephemeral_port() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    # As servers bind: every address, SO_REUSEADDR.
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


def free_ports(count: int, avoid: set[int], what: str = "a server") -> list[int]:
    """`count` distinct free ports below the ephemeral range, none of them in `avoid`.

    A port the kernel hands out (bind to port 0) is one it may give the next outgoing
    connection of any process, or the next bind(0) of any caller, before the server binds it.
    """
    pool = list(range(10000, _first_ephemeral_port())) or list(range(10000, 65536))
    random.shuffle(pool)
    ports: list[int] = []
    for port in pool:
        if port not in avoid and _bindable(port):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise DevenvError(f"no free port for {what}")


def log(message: str) -> None:
    # stderr: `devenv.py ensure` keeps stdout for the `export ...` lines a shell may eval.
    print(f"devenv: {message}", file=sys.stderr, flush=True)


def is_root() -> bool:
    return os.geteuid() == 0


def _proc_stat(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces: count the fields after its closing ')'.
    return stat.rsplit(")", 1)[1].split()


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of `pid`: tells it apart from a later process given the same id."""
    fields = _proc_stat(pid)
    return fields[19] if fields else None  # field 22 of /proc/PID/stat


def process_alive(pid: int, start_time: str | None = None) -> bool:
    """Whether `pid` runs and, when `start_time` is given, is still the process recorded."""
    fields = _proc_stat(pid)
    if fields is not None and fields[0] == "Z":
        reap(pid)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, it just belongs to another account (the postgres one)
    if start_time is None or fields is None:
        return True
    return fields[19] == start_time


def reap(pid: int) -> None:
    """Collect `pid` if it is our own exited child, so that it stops looking alive."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def state_path(name: str) -> Path:
    return run_dir() / f"{name}.json"


def read_state(name: str) -> dict[str, Any] | None:
    """The record of a private server this tooling started, if any."""
    try:
        data = json.loads(state_path(name).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_state(name: str, data: dict[str, Any]) -> None:
    path = state_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def remove_state(name: str) -> None:
    state_path(name).unlink(missing_ok=True)


def tail(path: Path, lines: int = 15) -> str:
    """The end of a log file, to put into an error message."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def run_tool(cmd: list[Any], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a helper program; its output goes to stderr unless captured."""
    if not kwargs.get("capture_output"):
        kwargs.setdefault("stdout", sys.stderr)
        kwargs.setdefault("stderr", sys.stderr)
    return subprocess.run([str(part) for part in cmd], text=True, check=False, **kwargs)


def tcp_open(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether anything accepts TCP connections at host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


Probe = Callable[[], tuple[str, "str | None"]]


def settle(probe: Probe, wait_s: float) -> str:
    """The state a probe reports once it reports no problem, retrying for up to `wait_s`.

    A server that is starting or restarting refuses connections for a moment; a problem
    that outlasts the wait is raised as it stands.
    """
    deadline = time.monotonic() + wait_s
    while True:
        state, problem = probe()
        if problem is None:
            return state
        if time.monotonic() >= deadline:
            raise DevenvError(problem)
        time.sleep(0.5)


def _group_exists(pgid: int) -> bool:
    reap(pgid)  # the group leader may be our own exited child
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _group_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _group_exists(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def stop_group(pgid: int, what: str, timeout: float) -> None:
    """SIGTERM a process group started in its own session; SIGKILL what outlives `timeout`."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        if sig == signal.SIGKILL:
            log(f"{what} did not stop within {timeout:.0f}s: killing it")
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        if _group_gone(pgid, wait):
            return
    log(f"{what} (process group {pgid}) is still there after SIGKILL")
