"""The delivery log of a subscription: keyset pages, one delivery with its attempts, redelivery.

Every query names the workspace and the subscription; a delivery of another subscription or
workspace is not found.
"""

from __future__ import annotations

import uuid
from typing import Any

import aiopg
import orjson

from libs.common import db
from libs.common.errors import Conflict, NotFound
from libs.common.pagination import Secrets, decode_cursor, page_tail

from .store import NOTIFY_CHANNEL
from .subscriptions import delivery_to_api

_DELIVERY = (
    "d.id, d.event_id, d.event_type, d.status, d.status_code, d.attempt_count, d.error,"
    " d.duration_ms, d.delivered_at, d.created_at"
)


async def page(
    cur: aiopg.Cursor,
    secret: Secrets,
    workspace_id: uuid.UUID,
    sub_id: uuid.UUID,
    limit: int,
    cursor: str | None,
    status: str | None,
    event_type: str | None,
) -> tuple[list[dict[str, Any]], str | None, bool]:
    """Newest first (created_at, then id); the next page starts after the cursor's row."""
    scope = {
        "ws": str(workspace_id),
        "sub": str(sub_id),
        "status": status,
        "event_type": event_type,
    }
    where = ["d.workspace_id = %s", "d.subscription_id = %s"]
    params: list[Any] = [workspace_id, sub_id]
    if status is not None:
        where.append("d.status = %s")
        params.append(status)
    if event_type is not None:
        where.append("d.event_type = %s")
        params.append(event_type)
    if cursor:
        at, last_id = decode_cursor(secret, cursor, scope)[:2]
        where.append("(d.created_at, d.id) < (%s::timestamptz, %s::uuid)")
        params += [at, last_id]
    rows = await db.fetchall(
        cur,
        f"SELECT {_DELIVERY} FROM webhooks.deliveries d WHERE {' AND '.join(where)}"
        f" ORDER BY d.created_at DESC, d.id DESC LIMIT %s",
        (*params, limit + 1),
    )
    rows, next_cursor, has_more = page_tail(
        rows, limit, secret, scope, lambda r: [r["created_at"].isoformat(), str(r["id"])]
    )
    return [delivery_to_api(r) for r in rows], next_cursor, has_more


async def detail(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, sub_id: uuid.UUID, delivery_id: uuid.UUID
) -> dict[str, Any]:
    row = await db.fetchone(
        cur,
        f"SELECT {_DELIVERY}, d.next_attempt_at, d.body FROM webhooks.deliveries d"
        " WHERE d.workspace_id = %s AND d.subscription_id = %s AND d.id = %s",
        (workspace_id, sub_id, delivery_id),
    )
    if row is None:
        raise NotFound("Delivery not found")
    attempts = await db.fetchall(
        cur,
        "SELECT attempt, status_code, error, duration_ms,"
        " COALESCE(attempted_at, created_at) AS attempted_at FROM webhooks.attempts"
        " WHERE workspace_id = %s AND delivery_id = %s ORDER BY attempt, id",
        (workspace_id, delivery_id),
    )
    out = delivery_to_api(row)
    out["nextAttemptAt"] = row["next_attempt_at"] if row["status"] == "pending" else None
    # The stored bytes are the JSON sent; they go out as they are, not re-encoded.
    out["payload"] = orjson.Fragment(bytes(row["body"]))
    out["attempts"] = [
        {
            "attempt": a["attempt"],
            "statusCode": a["status_code"],
            "error": a["error"],
            "durationMs": a["duration_ms"],
            "attemptedAt": a["attempted_at"],
        }
        for a in attempts
    ]
    return out


async def redeliver(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, sub_id: uuid.UUID, delivery_id: uuid.UUID
) -> dict[str, Any]:
    """A finished delivery of an active subscription becomes pending, due now, with the whole
    schedule ahead; 409 while it is pending (or an attempt of it may still be in flight)."""
    active = await db.fetchval(
        cur,
        "SELECT is_active FROM webhooks.subscriptions"
        " WHERE workspace_id = %s AND id = %s AND kind = 'main' FOR SHARE",
        (workspace_id, sub_id),
    )
    if active is None:
        raise NotFound("Webhook subscription not found")
    row = await db.fetchone(
        cur,
        "SELECT status, locked_until > now() AS leased FROM webhooks.deliveries"
        " WHERE workspace_id = %s AND subscription_id = %s AND id = %s FOR UPDATE",
        (workspace_id, sub_id, delivery_id),
    )
    if row is None:
        raise NotFound("Delivery not found")
    if not active:
        raise Conflict("The subscription is inactive: reactivate it first")
    if row["status"] == "pending" or row["leased"]:
        raise Conflict("The delivery is pending: it is attempted on its schedule")
    updated = await db.fetchone(
        cur,
        f"UPDATE webhooks.deliveries d SET status = 'pending', next_attempt_at = now(),"
        f" schedule_base = attempt_count, delivered_at = NULL, locked_until = NULL,"
        f" lease = NULL WHERE d.id = %s RETURNING {_DELIVERY}, d.target_host",
        (delivery_id,),
    )
    assert updated is not None
    await cur.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, updated["target_host"]))
    return delivery_to_api(updated)
