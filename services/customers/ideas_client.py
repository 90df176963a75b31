"""Calls to the ideas service's internal routes: does an idea exist, and the Idea bodies."""

from __future__ import annotations

import uuid
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
