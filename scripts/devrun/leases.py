"""Who is using the private servers, and the lock that serialises ensure, release and stop.

A lease is one process using the servers: a `make run` (the supervisor) or a `make test`
(`devenv.py exec`), named by its pid, or `manual` for a bare `devenv.py ensure`. The last
lease to go stops the private servers: a `make run` ending in one terminal does not take the
database from a `make test` in another, and a run that was killed outright does not keep them
up for ever (its process is gone, so its lease no longer counts).
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from .common import log, process_alive, process_start_time, run_dir

MANUAL = "manual"


@contextlib.contextmanager
def locked() -> Iterator[None]:
    """Hold the tooling's lock: two runs must not both start a private server."""
    path = run_dir() / "devenv.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("waiting for another run to finish setting up or stopping the servers")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _dir() -> Path:
    return run_dir() / "leases"


def name_of(holder: int | None) -> str:
    return str(holder) if holder else MANUAL


def add(holder: int | None) -> bool:
    """Record a lease for process `holder` (None: manual); False if it was there already."""
    path = _dir() / name_of(holder)
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((process_start_time(holder) or "") if holder else "")
    return True


def remove(name: str) -> None:
    (_dir() / name).unlink(missing_ok=True)


def _holder_alive(path: Path) -> bool:
    if path.name == MANUAL:
        return True
    try:
        pid = int(path.name)
    except ValueError:
        return False
    return process_alive(pid, path.read_text().strip() or None)


def live() -> list[str]:
    """The leases whose holders still run; those of vanished processes are dropped."""
    if not _dir().is_dir():
        return []
    names = []
    for path in sorted(_dir().iterdir()):
        if _holder_alive(path):
            names.append(path.name)
        else:
            path.unlink(missing_ok=True)
    return names


def clear() -> None:
    for name in live():
        remove(name)
