"""`ideasctl seed` and `ideasctl demo` (CONTRACT section 2)."""

from __future__ import annotations

import argparse
import uuid
from typing import Any

import psycopg2

from libs.common.settings import Settings
from services.ctl import admin

from .seed import seed


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser("seed", help="realistic, deterministic data for one workspace")
    s.add_argument("--workspace", required=True)
    s.add_argument("--ideas", type=int, default=200)
    s.add_argument("--customers", type=int, default=50)
    s.add_argument("--seed", type=int, default=1)
    d = sub.add_parser("demo", help="a seeded 'Demo' workspace (plan pro) and an all-scope key")
    d.add_argument("--ideas", type=int, default=200)
    d.add_argument("--customers", type=int, default=50)


def _connect(settings: Settings) -> Any:
    return psycopg2.connect(settings.database_url, options="-c timezone=UTC")


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


def run(args: argparse.Namespace, settings: Settings) -> dict[str, Any] | None:
    if args.command not in ("seed", "demo"):
        return None
    if args.ideas < 0 or args.customers < 0:
        raise admin.AdminError("--ideas and --customers must be >= 0")
    conn = _connect(settings)
    try:
        if args.command == "seed":
            return seed(conn, _check_workspace(conn, args.workspace), args.ideas,
                        args.customers, args.seed)
        ws = admin.create_workspace(conn, "Demo", "pro")
        seed(conn, ws["id"], args.ideas, args.customers, 1)
        key = admin.create_key(conn, ws["id"], "Demo key", "all")
    finally:
        conn.close()
    return {"workspaceId": ws["id"], "key": key["key"],
            "baseUrl": f"http://{settings.gateway_host}:{settings.gateway_port}"}
