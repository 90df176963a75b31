"""`ideasctl` commands of the customers area: rebuild the ideas service's customer projection.

`ideasctl customers rebuild-projection [--workspace ID]` recomputes, from the customers
service's tables, the ideas service's copy of customer ARR and links and every idea's
`totalCustomerARR` and customer count. For repair (a lost queue, a restored backup); running it
while events flow is safe.
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from libs.common.settings import Settings
from services.ideas.projection import rebuild

from .admin import AdminError
from .database import connect


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("customers", help="customers").add_subparsers(dest="action", required=True)
    r = p.add_parser(
        "rebuild-projection",
        help="recompute ideas' customer ARR and counts from the customers tables",
    )
    r.add_argument("--workspace", help="only this workspace (default: all)")


def run(args: argparse.Namespace, settings: Settings) -> dict[str, Any] | None:
    if args.command != "customers" or args.action != "rebuild-projection":
        return None
    try:
        workspace = str(uuid.UUID(args.workspace)) if args.workspace else None
    except ValueError as err:
        raise AdminError("--workspace must be a workspace id (UUID)") from err
    with connect(settings) as conn:
        counts = rebuild(conn, workspace)
    return {"rebuilt": True, "workspaceId": workspace, **counts}
