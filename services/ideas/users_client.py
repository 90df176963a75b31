"""The end users a request names, asked of the customers service, which owns them
(`POST /internal/users/lookup`): a synchronous read, so a user created a moment ago is known
(docs/ideas.md, End users). Never called inside a transaction."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from aiohttp import web

from libs.common.errors import NotFound
from libs.common.web import PEERS, caller


async def require(
    request: web.Request, ids: Iterable[uuid.UUID]
) -> dict[uuid.UUID, dict[str, Any]]:
    """The caller's users of these ids (`id`, `name`, `email`, `customerId`); 404 when one is
    not a user of the workspace."""
    wanted = sorted(set(ids), key=str)
    if not wanted:
        return {}
    rows = await request.app[PEERS].data(
        caller(request),
        "customers",
        "POST",
        "/internal/users/lookup",
        json={"ids": [str(i) for i in wanted]},
    )
    found = {uuid.UUID(r["id"]): r for r in rows}
    if any(i not in found for i in wanted):
        raise NotFound("User not found")
    return found
