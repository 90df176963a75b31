"""PostgreSQL: check DATABASE_URL and create its database; a private cluster if nothing answers."""

from __future__ import annotations

import os
import shutil
import subprocess

from . import pgcluster
from .common import DevenvError, log, run_tool, settle, tcp_open
from .packages import apt_install
from .targets import PgTarget

CREATE_DATABASE = """SELECT format('CREATE DATABASE %I', :'db')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db') \\gexec
"""


def find_psql() -> str | None:
    on_path = shutil.which("psql")
    if on_path:
        return on_path
    bindir = pgcluster.find_bindir()
    return str(bindir / "psql") if bindir else None


def psql(tool: str, url: str, sql: str, variables: dict[str, str] | None = None) -> tuple[int, str]:
    """Run SQL through psql; (exit status, error output)."""
    cmd = [tool, "-X", "-q", "-A", "-t", "-w", "-v", "ON_ERROR_STOP=1", "-d", url]
    for name, value in (variables or {}).items():
        cmd += ["-v", f"{name}={value}"]
    env = dict(os.environ, PGCONNECT_TIMEOUT="5")
    try:
        result = run_tool(cmd, input=sql, capture_output=True, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        return 1, "psql timed out"
    return result.returncode, result.stderr.strip()


def probe(target: PgTarget, tool: str) -> tuple[str, str | None]:
    """('ready' | 'no-database' | 'down' | 'refused', problem or None)."""
    if not tcp_open(target.host, target.port):
        return "down", None
    status, error = psql(tool, target.url, "SELECT 1")
    if status == 0:
        return "ready", None
    admin_status, admin_error = psql(tool, target.with_database("postgres"), "SELECT 1")
    if admin_status == 0:
        return "no-database", None
    where = f"{target.host}:{target.port}"
    return (
        "refused",
        f"PostgreSQL at {where} answers, but psql cannot use it: {error or admin_error}",
    )


def create_database(target: PgTarget, tool: str) -> None:
    status, error = psql(
        tool, target.with_database("postgres"), CREATE_DATABASE, {"db": target.database}
    )
    # "already exists": another run created it in the meantime, which is just as good.
    if status != 0 and "already exists" not in error:
        raise DevenvError(f"could not create the database {target.database!r}: {error}")
    log(f"created the database {target.database!r}")


def ensure(target: PgTarget, started: list[str]) -> None:
    """Make DATABASE_URL answer with its database, starting a private cluster if needed."""
    tool = find_psql()
    if tool is None:
        # With nothing answering a server is needed anyway, and its package brings psql.
        package = "postgresql-client" if tcp_open(target.host, target.port) else "postgresql"
        apt_install([package], "psql is needed to check PostgreSQL and create the database")
        tool = find_psql()
        if tool is None:
            raise DevenvError("psql is still missing after installing it")
    state = settle(lambda: probe(target, tool), wait_s=10)
    if state == "down":
        pgcluster.start_private(target)
        started.append(pgcluster.NAME)
        state = settle(lambda: probe(target, tool), wait_s=30)
    if state == "no-database":
        create_database(target, tool)
        state = settle(lambda: probe(target, tool), wait_s=5)
    if state != "ready":
        raise DevenvError(f"PostgreSQL at {target.host}:{target.port} is not usable ({state})")
