"""`PATCH /workspace`: the gateway owns `gateway.workspaces`, so it writes the row itself
(docs/gateway.md, "The workspace's settings").

The change is made in one UPDATE; a slug another workspace has (ignoring case) fails on the
unique index `workspaces_slug_unique` and answers 409 `conflict`, so two concurrent claims of
one slug give one 200 and one 409. Then this gateway's cached keys of the workspace expire at
once and the caller's key is looked up again: the answer, and every later request through
this gateway, carry the new settings in the caller headers. Other gateways keep their cached
keys for at most `KEY_CACHE_TTL_S`. The answer itself is the ideas service's `GET /workspace`
for the updated caller (the idea counts are that service's).
"""

from __future__ import annotations

import uuid

import aiopg
import psycopg2
from aiohttp import web

from libs.api.gateway.routes import UpdateWorkspaceRequest
from libs.api.route import API
from libs.common import db
from libs.common.errors import Conflict, NotFound, ValidationFailed
from libs.common.validation import validate_json

from .auth import KeyInfo, KeyStore, bearer_token, key_digest
from .proxy import read_body

COLUMNS = {
    "name": "name",
    "defaultDestination": "default_destination",
    "inboxMode": "inbox_mode",
    "publicSubmissionEnabled": "public_submission_enabled",
    "slug": "slug",
}
SLUG_TAKEN = "Another workspace already has this slug"
# The request's headers that describe its body: the GET sent on for the answer has none.
_BODY_HEADERS = frozenset({"content-length", "content-type", "content-encoding", "expect"})


async def write(pool: aiopg.Pool, workspace_id: uuid.UUID, body: UpdateWorkspaceRequest) -> None:
    sets = {COLUMNS[name]: getattr(body, name) for name in body.model_fields_set}
    assign = ", ".join(f"{col} = %s" for col in sets)  # names are ours, never the client's
    try:
        async with db.transaction(pool) as cur:
            found = await db.fetchval(
                cur,
                f"UPDATE gateway.workspaces SET {assign} WHERE id = %s RETURNING 1",
                (*sets.values(), workspace_id),
            )
    except psycopg2.Error as err:
        if db.is_unique_violation(err, "workspaces_slug_unique"):
            raise Conflict(SLUG_TAKEN, field="slug") from None
        raise
    if found is None:
        raise NotFound("Workspace not found")


async def apply_update(
    request: web.Request, pool: aiopg.Pool, keys: KeyStore, info: KeyInfo, body_timeout_s: float
) -> tuple[web.Request, KeyInfo]:
    """Validate and write the change; return the `GET /workspace` to send on for the answer,
    and the caller's key as it is now."""
    # A clone is only possible before the body is read.
    view = request.clone(
        method="GET",
        rel_url=f"{API}/workspace",
        headers={k: v for k, v in request.headers.items() if k.lower() not in _BODY_HEADERS},
    )
    raw = await read_body(request, body_timeout_s)
    if raw is None or not raw.strip():
        raise ValidationFailed("Request body is required", field="body")
    body = validate_json(raw, UpdateWorkspaceRequest)
    await write(pool, info.workspace_id, body)
    keys.forget_workspace(info.workspace_id)
    fresh = await keys.lookup(key_digest(bearer_token(request.headers.get("Authorization"))))
    return view, fresh
