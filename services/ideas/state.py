"""Per-workspace state (idea counter, default roadmap stages), created lazily and race-free.

Workspaces are created in the gateway's schema; this service learns of one on its first request.
`ensure_workspace` inserts the counter row with ON CONFLICT DO NOTHING (so concurrent first
requests, or several replicas, agree) in its own transaction and, only when that row is new,
the three default stages; it remembers the workspace in memory once that committed. A
workspace the service has seen before keeps the stages it has (a deleted default stage does
not come back when another process meets the workspace).
"""

from __future__ import annotations

import uuid
from typing import Any

import aiopg

from libs.common import db

DEFAULT_STAGES = (
    ("Now", "now", "#22c55e", 0, True),
    ("Next", "next", "#3b82f6", 1, False),
    ("Later", "later", "#a855f7", 2, False),
)

_READY: set[uuid.UUID] = set()

STATE_SQL = (
    "INSERT INTO ideas.workspace_state (workspace_id) VALUES (%s)"
    " ON CONFLICT (workspace_id) DO NOTHING"
)
STAGE_SQL = (
    "INSERT INTO ideas.roadmap_stages (workspace_id, id, name, slug, color, position,"
    " is_default) VALUES (%s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (workspace_id, slug) DO NOTHING"
)


def stage_rows(workspace_id: uuid.UUID) -> list[tuple[Any, ...]]:
    return [
        (workspace_id, uuid.uuid4(), name, slug, color, pos, default)
        for name, slug, color, pos, default in DEFAULT_STAGES
    ]


async def create_state(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> None:
    # A concurrent first insert makes this one wait for its commit, then do nothing.
    if await db.fetchval(cur, STATE_SQL + " RETURNING 1", (workspace_id,)) is None:
        return
    for row in stage_rows(workspace_id):
        await cur.execute(STAGE_SQL, row)


async def ensure_workspace(pool: aiopg.Pool, workspace_id: uuid.UUID) -> None:
    if workspace_id in _READY:
        return
    async with db.transaction(pool) as cur:
        await create_state(cur, workspace_id)
    _READY.add(workspace_id)


async def next_numbers(cur: aiopg.Cursor, workspace_id: uuid.UUID, n: int) -> int:
    """Reserve `n` idea numbers; return the first. The row lock serializes creates per workspace
    only until commit, and numbers are never reused (a rolled-back reservation is undone too)."""
    first: int = await db.fetchval(
        cur,
        "UPDATE ideas.workspace_state SET next_idea_number = next_idea_number + %s"
        " WHERE workspace_id = %s RETURNING next_idea_number - %s",
        (n, workspace_id, n),
    )
    return first
