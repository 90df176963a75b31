"""Storage of subscriptions (main API and automation hooks) and their recent deliveries."""

from __future__ import annotations

import secrets
import string
import uuid
from typing import Any

import aiopg

from libs.common import db
from libs.common.masking import mask_secret

MAIN, AUTOMATION = "main", "automation"
CHANGED_CHANNEL = "webhooks_subscriptions"  # payload: the workspace id; see fanout.TargetCache
NEW_IDEA = "new_idea"
_ALPHABET = string.ascii_letters + string.digits
_COLUMNS = (
    "id, name, target_url, events, secret, is_active, failure_count, last_delivered_at,"
    " last_failed_at, last_error, created_at, updated_at"
)


def new_secret() -> str:
    """`whsec_` + 40 base62 characters: a multiple of 4, all in the base64 alphabet, so the
    part after the prefix is also a valid base64 key for Standard Webhooks libraries."""
    return "whsec_" + "".join(secrets.choice(_ALPHABET) for _ in range(40))


def masked(secret: str) -> str:
    return mask_secret(secret)


def to_api(row: db.Row, *, reveal: bool = False) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "targetUrl": row["target_url"],
        "events": row["events"],
        "secret": row["secret"] if reveal else masked(row["secret"]),
        "isActive": row["is_active"],
        "failureCount": row["failure_count"],
        "lastDeliveredAt": row["last_delivered_at"],
        "lastFailedAt": row["last_failed_at"],
        "lastError": row["last_error"],
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def delivery_to_api(row: db.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "eventId": str(row["event_id"]),
        "eventType": row["event_type"],
        "status": row["status"],
        "statusCode": row["status_code"],
        "attemptCount": row["attempt_count"],
        "error": row["error"],
        "durationMs": row["duration_ms"],
        "deliveredAt": row["delivered_at"],
        "createdAt": row["created_at"],
    }


async def lock_workspace(cur: aiopg.Cursor, workspace_id: uuid.UUID, kind: str) -> None:
    """Serialize creations of one workspace so that the count limit holds under concurrency."""
    await cur.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
        (f"webhooks:{kind}:{workspace_id}",),
    )


async def count(cur: aiopg.Cursor, workspace_id: uuid.UUID, kind: str) -> int:
    return int(
        await db.fetchval(
            cur,
            "SELECT count(*) FROM webhooks.subscriptions WHERE workspace_id = %s AND kind = %s",
            (workspace_id, kind),
        )
    )


async def insert(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    kind: str,
    name: str | None,
    target_url: str,
    events: list[str],
) -> db.Row:
    row = await db.fetchone(
        cur,
        f"INSERT INTO webhooks.subscriptions (id, workspace_id, kind, name, target_url,"
        f" events, secret) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}",
        (uuid.uuid4(), workspace_id, kind, name, target_url, events, new_secret()),
    )
    assert row is not None
    await changed(cur, workspace_id)
    return row


async def changed(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> None:
    """Tell every replica's target cache, at commit, that this workspace's subscriptions changed."""
    await cur.execute("SELECT pg_notify(%s, %s)", (CHANGED_CHANNEL, str(workspace_id)))


async def list_main(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> list[db.Row]:
    return await db.fetchall(
        cur,
        f"SELECT {_COLUMNS} FROM webhooks.subscriptions"
        " WHERE workspace_id = %s AND kind = 'main' ORDER BY created_at, id",
        (workspace_id,),
    )


async def get(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, sub_id: uuid.UUID, kind: str
) -> db.Row | None:
    return await db.fetchone(
        cur,
        f"SELECT {_COLUMNS} FROM webhooks.subscriptions"
        " WHERE workspace_id = %s AND id = %s AND kind = %s",
        (workspace_id, sub_id, kind),
    )


async def get_for_signing(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, sub_id: uuid.UUID
) -> db.Row | None:
    """A main subscription's URL and the secrets that sign for it now."""
    return await db.fetchone(
        cur,
        "SELECT target_url, secret, previous_secret,"
        " extract(epoch FROM previous_secret_expires_at)::float8 AS previous_expires_at"
        " FROM webhooks.subscriptions WHERE workspace_id = %s AND id = %s AND kind = 'main'",
        (workspace_id, sub_id),
    )


async def recent_deliveries(cur: aiopg.Cursor, sub_id: uuid.UUID, limit: int = 20) -> list[db.Row]:
    return await db.fetchall(
        cur,
        "SELECT id, event_id, event_type, status, status_code, attempt_count, error,"
        " duration_ms, delivered_at, created_at FROM webhooks.deliveries"
        " WHERE subscription_id = %s ORDER BY created_at DESC, id DESC LIMIT %s",
        (sub_id, limit),
    )


async def update(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    sub_id: uuid.UUID,
    changes: dict[str, Any],
    target_host: str | None,
) -> db.Row | None:
    """Apply a PATCH (`changes` in column names); None when not found. Pausing ends the
    pending deliveries (as a deactivation does); a new URL moves them to its host's share."""
    sets, params = ["updated_at = now()"], []
    for column in ("name", "target_url", "events", "is_active"):
        if column in changes:
            sets.append(f"{column} = %s")
            params.append(changes[column])
    if changes.get("is_active") is True:
        sets.append("failure_count = 0")
        sets.append("reactivated_at = CASE WHEN is_active THEN reactivated_at ELSE now() END")
    elif changes.get("is_active") is False:
        sets.append("deactivated_at = CASE WHEN is_active THEN now() ELSE deactivated_at END")
    row = await db.fetchone(
        cur,
        f"UPDATE webhooks.subscriptions SET {', '.join(sets)}"
        f" WHERE workspace_id = %s AND id = %s AND kind = 'main' RETURNING {_COLUMNS}",
        (*params, workspace_id, sub_id),
    )
    if row is None:
        return None
    if changes.get("is_active") is False:
        await cur.execute(
            "UPDATE webhooks.deliveries SET status = 'failed', next_attempt_at = NULL,"
            " error = COALESCE(error, 'subscription deactivated')"
            " WHERE workspace_id = %s AND subscription_id = %s AND status = 'pending'",
            (workspace_id, sub_id),
        )
    if target_host is not None:
        await cur.execute(
            "UPDATE webhooks.deliveries SET target_host = %s"
            " WHERE workspace_id = %s AND subscription_id = %s AND status = 'pending'",
            (target_host, workspace_id, sub_id),
        )
    await changed(cur, workspace_id)
    return row


async def rotate(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, sub_id: uuid.UUID, expires_in_s: int
) -> db.Row | None:
    """A new secret; the current one becomes the previous one until it expires (an older
    previous secret is dropped: at most two sign)."""
    row = await db.fetchone(
        cur,
        "UPDATE webhooks.subscriptions SET previous_secret = secret,"
        " previous_secret_expires_at = now() + make_interval(secs => %s), secret = %s,"
        f" updated_at = now() WHERE workspace_id = %s AND id = %s AND kind = 'main'"
        f" RETURNING {_COLUMNS}",
        (expires_in_s, new_secret(), workspace_id, sub_id),
    )
    if row is not None:
        await changed(cur, workspace_id)
    return row


async def delete(cur: aiopg.Cursor, workspace_id: uuid.UUID, sub_id: uuid.UUID, kind: str) -> bool:
    """Remove a subscription; its deliveries (pending ones included) go with it.

    Deliveries first: the dispatcher's writer locks a delivery, then its subscription, and
    taking them in the same order here keeps the two from deadlocking."""
    await cur.execute(
        "DELETE FROM webhooks.deliveries d USING webhooks.subscriptions s"
        " WHERE d.subscription_id = s.id AND s.workspace_id = %s AND s.id = %s AND s.kind = %s",
        (workspace_id, sub_id, kind),
    )
    await cur.execute(
        "DELETE FROM webhooks.subscriptions WHERE workspace_id = %s AND id = %s AND kind = %s",
        (workspace_id, sub_id, kind),
    )
    if not cur.rowcount:
        return False
    await changed(cur, workspace_id)
    return True


async def active_targets(cur: aiopg.Cursor, workspace_id: str) -> list[db.Row]:
    """Every active subscription of the workspace, with what deliveries to it need."""
    return await db.fetchall(
        cur,
        "SELECT id, kind, target_url, secret, events FROM webhooks.subscriptions"
        " WHERE workspace_id = %s AND is_active",
        (workspace_id,),
    )
