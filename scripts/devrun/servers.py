"""PostgreSQL and RabbitMQ together: ensure, release, stop, status."""

from __future__ import annotations

import os
from typing import Any

from . import leases, pgcluster, postgres, rabbitmq
from .common import log, read_state, remove_state, run_dir
from .targets import AmqpTarget, PgTarget, export_lines, resolve_urls


def ensure(holder: int | None) -> dict[str, str]:
    """Make both servers answer at their URLs (see the package docstring); the URLs used.

    Holds a lease for process `holder` (None: manual, kept until `stop`). When this fails,
    whatever it started is stopped again unless another live lease uses it.
    """
    urls = resolve_urls(os.environ)
    pg, mq = PgTarget.parse(urls["DATABASE_URL"]), AmqpTarget.parse(urls["AMQP_URL"])
    with leases.locked():
        added = leases.add(holder)
        started: list[str] = []
        try:
            postgres.ensure(pg, started)
            rabbitmq.ensure(mq, started)
        except BaseException:
            if added:
                leases.remove(leases.name_of(holder))
            if started and not leases.live():
                stop_private_servers()
            raise
        (run_dir() / "env").write_text(export_lines(urls))
    return urls


def stop_private_servers() -> None:
    """Stop the private servers recorded under .run/ (never anything else)."""
    rabbitmq.stop_private()
    remove_state(rabbitmq.NAME)
    pgcluster.stop_private()
    remove_state(pgcluster.NAME)


def release(holder: int) -> None:
    """Drop the lease of `holder`; the last one to go stops the private servers."""
    with leases.locked():
        leases.remove(leases.name_of(holder))
        others = leases.live()
        if not others:
            stop_private_servers()
        elif read_state(pgcluster.NAME) or read_state(rabbitmq.NAME):
            log(f"private servers left running for: {', '.join(others)}")


def stop() -> None:
    """Stop the private servers whoever uses them, and forget every lease."""
    with leases.locked():
        leases.clear()
        stop_private_servers()


def status() -> dict[str, Any]:
    return {
        "postgres": pgcluster.describe(),
        "rabbitmq": rabbitmq.describe(),
        "leases": leases.live(),
    }
