"""Ports of the test systems: never one port for two services, and a service counts as ready
only when it is the process listening on its port (once, two services of one system were
handed the same port by bind(0); the second failed to bind while the first answered its
readiness checks)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.support.processes import free_port, listens


def test_free_ports_are_never_handed_out_twice_and_lie_below_the_ephemeral_range() -> None:
    first_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    assert all(10000 <= p < first_ephemeral for p in ports)


def test_listens_tells_the_process_that_holds_the_port() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        assert not listens(os.getpid(), port)  # bound, not listening yet
        sock.listen()
        assert listens(os.getpid(), port)
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            assert not listens(other.pid, port)
        finally:
            other.kill()
            other.wait()
    assert not listens(os.getpid(), port)
