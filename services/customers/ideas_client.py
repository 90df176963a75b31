"""Calls to the ideas service's internal routes: does an idea exist, the Idea bodies, and what
the ideas service holds about end users (their votes)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from libs.common.web import PEERS, caller


async def get_idea(request: web.Request, idea_id: uuid.UUID) -> dict[str, Any]:
    """The idea (deleted ones too) if it is in the caller's workspace, else 404."""
    return await request.app[PEERS].data(
        caller(request), "ideas", "GET", f"/internal/ideas/{idea_id}", missing="Idea not found"
    )


async def lookup(request: web.Request, ids: list[uuid.UUID]) -> list[dict[str, Any]]:
    """The ideas of the caller's workspace with these ids, in the given order."""
    if not ids:
        return []
    return await request.app[PEERS].data(
        caller(request),
        "ideas",
        "POST",
        "/internal/ideas/lookup",
        json={"ids": [str(i) for i in ids]},
    )


async def vote_counts(request: web.Request, user_ids: Sequence[uuid.UUID]) -> dict[str, int]:
    """Each user's `voteCount`: the ideas the user votes +1 on now (0 when none)."""
    if not user_ids:
        return {}
    counts = await request.app[PEERS].data(
        caller(request),
        "ideas",
        "POST",
        "/internal/users/vote-counts",
        json={"ids": [str(i) for i in user_ids]},
    )
    return {str(i): int(counts.get(str(i), 0)) for i in user_ids}
