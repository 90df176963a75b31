"""`ideasctl` commands of similar ideas (docs/similar.md).

`ideasctl similar rebuild [--workspace ID]` embeds every idea's title and summary again and
writes `ideas.embeddings`; the running ideas processes pick the rows up within a second. For
ideas written by SQL (`ideasctl seed`, restores), a lost queue, or a new model.
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from libs.common.settings import Settings, SettingsError
from services.ideas.embedding import make_embedder
from services.ideas.settings import IdeasSettings
from services.ideas.similar import rebuild

from .admin import AdminError
from .database import connect


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("similar", help="similar ideas").add_subparsers(dest="action", required=True)
    r = p.add_parser("rebuild", help="compute every idea's embedding again")
    r.add_argument("--workspace", help="only this workspace (default: all)")


def run(args: argparse.Namespace, settings: Settings) -> dict[str, Any] | None:
    if args.command != "similar" or args.action != "rebuild":
        return None
    try:
        workspace = str(uuid.UUID(args.workspace)) if args.workspace else None
    except ValueError as err:
        raise AdminError("--workspace must be a workspace id (UUID)") from err
    try:  # the model the ideas service runs, read as it reads it
        model = IdeasSettings.from_env(require_secrets=False).similar_model
    except SettingsError as err:
        raise AdminError(str(err)) from err
    with connect(settings) as conn:
        counts = rebuild(conn, workspace, embedder=make_embedder(model))
    return {"rebuilt": True, "workspaceId": workspace, **counts}
