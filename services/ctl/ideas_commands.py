"""`ideasctl seed` and `ideasctl demo` (docs/running.md), and `ideasctl analytics
rebuild-rollups`, which recomputes the analytics rollups (ideas migration 0300) from the rows."""

from __future__ import annotations

import argparse
import time
import uuid
from typing import Any

from services.gateway.settings import GatewaySettings as Settings

from . import admin
from .database import connect
from .seed import seed


def add_parsers(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("seed", help="realistic, deterministic data for one workspace")
    s.add_argument("--workspace", required=True)
    s.add_argument("--ideas", type=int, default=200)
    s.add_argument("--customers", type=int, default=50)
    s.add_argument("--seed", type=int, default=1)
    d = sub.add_parser("demo", help="a seeded 'Demo' workspace (plan pro) and an all-scope key")
    d.add_argument("--ideas", type=int, default=200)
    d.add_argument("--customers", type=int, default=50)
    a = sub.add_parser("analytics", help="analytics rollups").add_subparsers(
        dest="action", required=True
    )
    r = a.add_parser(
        "rebuild-rollups",
        help="recompute the rollups of the summary and signals reports from ideas and signals",
    )
    r.add_argument("--workspace", help="one workspace (default: every workspace)")


def _check_workspace(conn: Any, workspace: str) -> str:
    try:
        ws = uuid.UUID(workspace)
    except ValueError as err:
        raise admin.AdminError("--workspace must be a workspace id (UUID)") from err
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM gateway.workspaces WHERE id = %s", (ws,))
        if cur.fetchone() is None:
            raise admin.AdminError(f"workspace {workspace} not found")
    return str(ws)


ROLLUP_TABLES = ("idea_months", "signal_days", "signal_idea_days", "signal_firsts")


def rebuild_rollups(conn: Any, workspace: str | None) -> dict[str, Any]:
    """One transaction: readers see the old rollups or the new, never a half-built one."""
    started = time.monotonic()
    with conn, conn.cursor() as cur:
        cur.execute("SELECT ideas.rebuild_rollups(%s)", (workspace,))
        rows = {}
        for table in ROLLUP_TABLES:
            cur.execute(
                f"SELECT count(*) FROM ideas.{table}"
                " WHERE %(ws)s::uuid IS NULL OR workspace_id = %(ws)s",
                {"ws": workspace},
            )
            rows[table] = cur.fetchone()[0]
    return {"workspaceId": workspace, "rows": rows, "seconds": round(time.monotonic() - started, 1)}


def run(args: argparse.Namespace, settings: Settings) -> dict[str, Any] | None:
    if args.command == "analytics":
        with connect(settings) as conn:
            workspace = _check_workspace(conn, args.workspace) if args.workspace else None
            return rebuild_rollups(conn, workspace)
    if args.command not in ("seed", "demo"):
        return None
    if args.ideas < 0 or args.customers < 0:
        raise admin.AdminError("--ideas and --customers must be >= 0")
    with connect(settings) as conn:
        if args.command == "seed":
            return seed(
                conn, _check_workspace(conn, args.workspace), args.ideas, args.customers, args.seed
            )
        ws = admin.create_workspace(conn, "Demo", "pro")
        seed(conn, ws["id"], args.ideas, args.customers, 1)
        key = admin.create_key(conn, ws["id"], "Demo key", "all")
    return {
        "workspaceId": ws["id"],
        "key": key["key"],
        "baseUrl": f"http://{settings.gateway_host}:{settings.gateway_port}",
    }
