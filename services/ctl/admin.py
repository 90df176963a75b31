"""Admin operations behind `ideasctl`: workspaces and keys in the gateway's schema."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg2
import psycopg2.extras

psycopg2.extras.register_uuid()

from libs.api.keys import PREFIXES, hash_key, new_key
from libs.api.plans import PLANS, RATE_PER_MINUTE
from libs.api.route import SCOPES


class AdminError(Exception):
    """A command cannot be carried out; the message says why."""


def create_workspace(
    conn: Any,
    name: str,
    plan: str = "starter",
    rate_limit: int | None = None,
    inbox_mode: str = "direct",
) -> dict[str, Any]:
    if not name.strip():
        raise AdminError("--name must not be empty")
    if plan not in PLANS:
        raise AdminError(f"--plan must be one of {', '.join(PLANS)}")
    if rate_limit is not None and rate_limit < 1:
        raise AdminError("--rate-limit must be a positive integer")
    if inbox_mode not in ("direct", "review"):
        raise AdminError("--inbox-mode must be direct or review")
    workspace_id = uuid.uuid4()
    with conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO gateway.workspaces (id, name, plan, rate_limit_per_minute, inbox_mode)"
            " VALUES (%s, %s, %s, %s, %s)",
            (workspace_id, name, plan, rate_limit, inbox_mode),
        )
    return {
        "id": str(workspace_id),
        "name": name,
        "plan": plan,
        "rateLimitPerMinute": rate_limit or RATE_PER_MINUTE[plan],
    }


def parse_scopes(text: str) -> list[str]:
    if text.strip() == "all":
        return list(SCOPES)
    scopes = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in scopes if s not in SCOPES]
    if not scopes or unknown:
        raise AdminError(f"--scopes must be 'all' or a comma-separated list of {', '.join(SCOPES)}")
    return sorted(set(scopes), key=SCOPES.index)


def create_key(
    conn: Any,
    workspace_id: str,
    name: str = "API key",
    scopes: str = "all",
    kind: str = "production",
) -> dict[str, Any]:
    if kind not in PREFIXES:
        raise AdminError("--kind must be production or staging")
    try:
        ws = uuid.UUID(workspace_id)
    except ValueError as err:
        raise AdminError("--workspace must be a workspace id (UUID)") from err
    scope_list = parse_scopes(scopes)
    key, key_id = new_key(kind), uuid.uuid4()
    with conn, conn.cursor() as cur:
        cur.execute("SELECT 1 FROM gateway.workspaces WHERE id = %s", (ws,))
        if cur.fetchone() is None:
            raise AdminError(f"workspace {workspace_id} not found")
        cur.execute(
            "INSERT INTO gateway.api_keys (id, workspace_id, name, kind, key_hash, key_hint, scopes)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                key_id,
                ws,
                name or "API key",
                kind,
                psycopg2.Binary(hash_key(key)),
                key[:9] + "…" + key[-4:],
                scope_list,
            ),
        )
    return {
        "id": str(key_id),
        "key": key,
        "kind": kind,
        "scopes": scope_list,
        "workspaceId": str(ws),
    }


def revoke_key(conn: Any, key_id: str) -> dict[str, Any]:
    try:
        kid = uuid.UUID(key_id)
    except ValueError as err:
        raise AdminError("--id must be a key id (UUID)") from err
    with conn, conn.cursor() as cur:
        cur.execute(
            "UPDATE gateway.api_keys SET revoked_at = coalesce(revoked_at, now())"
            " WHERE id = %s RETURNING id",
            (kid,),
        )
        if cur.fetchone() is None:
            raise AdminError(f"key {key_id} not found")
    return {"id": str(kid), "revoked": True}
