"""Installing PostgreSQL and RabbitMQ from the distribution when they are missing."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from .common import DevenvError, is_root, log, run_tool

POLICY_RC_D = Path("/usr/sbin/policy-rc.d")
_done: set[str] = set()  # "update" once apt-get update has run in this process


@contextlib.contextmanager
def services_left_stopped() -> Iterator[None]:
    """Keep apt from starting the packages' own services while installing them.

    The distribution's PostgreSQL cluster would take port 5432 with password authentication
    over TCP, and the tooling starts its own private servers anyway. `policy-rc.d` answering
    101 is Debian's switch for exactly this; an existing one is left as it is.
    """
    if POLICY_RC_D.exists():
        yield
        return
    POLICY_RC_D.write_text("#!/bin/sh\n# temporary: scripts/devrun/packages.py\nexit 101\n")
    POLICY_RC_D.chmod(0o755)
    try:
        yield
    finally:
        POLICY_RC_D.unlink(missing_ok=True)


def apt_install(packages: list[str], reason: str) -> None:
    """Install Debian packages when root; otherwise say what to install."""
    if not is_root() or not shutil.which("apt-get"):
        raise DevenvError(
            f"{reason}; install {' '.join(packages)} "
            f"(e.g. sudo apt-get install -y {' '.join(packages)}) and try again"
        )
    log(f"{reason}: installing {', '.join(packages)} with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    with services_left_stopped():
        if "update" not in _done:
            if run_tool(["apt-get", "update"], env=env).returncode != 0:
                raise DevenvError("apt-get update failed")
            _done.add("update")
        install = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
        if run_tool(install, env=env).returncode != 0:
            raise DevenvError(f"apt-get install {' '.join(packages)} failed")
