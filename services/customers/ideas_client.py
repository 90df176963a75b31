"""Calls to the peers' internal routes: does an idea exist, the Idea bodies, what the ideas
service holds about end users (votes, ideas, signals, comments) and its erasure, and the
webhooks service's redaction of a person from the delivery log."""

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


async def user_data(request: web.Request, user_id: uuid.UUID, email: str | None) -> Any:
    """What the ideas service holds about the user: `{"votes", "ideas", "signals"}`."""
    return await request.app[PEERS].data(
        caller(request), "ideas", "POST", f"/internal/users/{user_id}/export", json={"email": email}
    )


async def erase_user(request: web.Request, user_id: uuid.UUID, email: str | None) -> Any:
    """Erase the user's votes, authorship and signal contacts: `{"votesRemoved", ...}`."""
    return await request.app[PEERS].data(
        caller(request), "ideas", "POST", f"/internal/users/{user_id}/erase", json={"email": email}
    )


async def _comments(request: web.Request, method: str, user_id: uuid.UUID) -> Any:
    """The comments interface of the ideas service (`GET` / `DELETE /internal/users/{userId}
    /comments`, docs/customers.md, Erasure and export). It answers any user of the workspace,
    one without comments as `[]` or `{"removed": 0}`, so no 404 means "none": the route never
    answers 404 for a well-formed user id, and a 404 could only come from an ideas service
    that lacks the route (one mid-upgrade, or a wrong peer address). Taking that for "no
    comments" would export an incomplete copy and report an erasure that left the comments
    behind, so any answer but 200 is 503 (`Peers.data` without `missing`) and the caller
    retries."""
    return await request.app[PEERS].data(
        caller(request), "ideas", method, f"/internal/users/{user_id}/comments"
    )


async def user_comments(request: web.Request, user_id: uuid.UUID) -> list[Any]:
    """The user's comments (Comment objects, oldest first)."""
    return list(await _comments(request, "GET", user_id))


async def erase_comments(request: web.Request, user_id: uuid.UUID) -> int:
    """Remove the user's comments (replies to them stay); how many."""
    return int((await _comments(request, "DELETE", user_id))["removed"])


async def redact_deliveries(request: web.Request, email: str | None, name: str | None) -> int:
    """The webhooks service rewrites the stored payloads that carry the e-mail or the name."""
    data = await request.app[PEERS].data(
        caller(request),
        "webhooks",
        "POST",
        "/internal/erasure",
        json={"email": email, "name": name},
    )
    return int(data["redacted"])
