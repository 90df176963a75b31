"""`ideasctl` commands of similar ideas (docs/similar.md).

`ideasctl similar rebuild [--workspace ID]` first copies the ideas the similar service does not
know from the ideas service's schema into its own (`similar.ideas`: ideas that existed before
the service, or were written by SQL, e.g. `ideasctl seed`, which emits no events), then embeds
every idea of the copy again with the model `SIMILAR_MODEL` names and writes
`similar.embeddings`; the running search processes pick the rows up within a second. For the
first start of the service over existing ideas, ideas written by SQL, a lost queue, or a new
model.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Iterator
from typing import Any

from libs.common.settings import Settings, SettingsError
from services.similar.embedding import make_embedder
from services.similar.settings import SimilarSettings
from services.similar.store import backfill, rebuild

from .admin import AdminError
from .database import connect

# The admin CLI may read any service's schema (docs/architecture.md): the ideas as the ideas
# service holds them, the state the similar service keeps of each.
IDEAS_SQL = (
    "SELECT workspace_id, id, title, summary, status, merged_into_id FROM ideas.ideas"
    " WHERE %(ws)s::uuid IS NULL OR workspace_id = %(ws)s ORDER BY workspace_id, id"
)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("similar", help="similar ideas").add_subparsers(dest="action", required=True)
    r = p.add_parser("rebuild", help="copy the ideas the similar service lacks, embed every idea")
    r.add_argument("--workspace", help="only this workspace (default: all)")


def ideas_of(conn: Any, workspace: str | None) -> Iterator[tuple[Any, ...]]:
    """The ideas of the ideas service's schema, read with a server-side cursor."""
    with conn.cursor(name="similar_backfill") as cur:
        cur.itersize = 1000
        cur.execute(IDEAS_SQL, {"ws": workspace})
        yield from cur


def run(args: argparse.Namespace, settings: Settings) -> dict[str, Any] | None:
    if args.command != "similar" or args.action != "rebuild":
        return None
    try:
        workspace = str(uuid.UUID(args.workspace)) if args.workspace else None
    except ValueError as err:
        raise AdminError("--workspace must be a workspace id (UUID)") from err
    try:  # the model the similar service runs, read as it reads it
        model = SimilarSettings.from_env(require_secrets=False).similar_model
    except SettingsError as err:
        raise AdminError(str(err)) from err
    with connect(settings) as reader, connect(settings) as conn:
        copied = backfill(conn, ideas_of(reader, workspace))
        counts = rebuild(conn, workspace, embedder=make_embedder(model))
    return {"rebuilt": True, "workspaceId": workspace, "copied": copied, **counts}
