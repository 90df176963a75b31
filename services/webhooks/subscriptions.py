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
_COLUMNS = ("id, name, target_url, events, secret, is_active, failure_count, last_delivered_at,"
            " last_failed_at, last_error, created_at, updated_at")


def new_secret() -> str:
    return "whsec_" + "".join(secrets.choice(_ALPHABET) for _ in range(40))


def masked(secret: str) -> str:
    return mask_secret(secret)


def to_api(row: db.Row, *, reveal: bool = False) -> dict[str, Any]:
    return {
        "id": row["id"], "name": row["name"], "targetUrl": row["target_url"],
        "events": row["events"],
        "secret": row["secret"] if reveal else masked(row["secret"]),
        "isActive": row["is_active"], "failureCount": row["failure_count"],
        "lastDeliveredAt": row["last_delivered_at"], "lastFailedAt": row["last_failed_at"],
        "lastError": row["last_error"], "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def delivery_to_api(row: db.Row) -> dict[str, Any]:
    return {
        "id": row["id"], "eventId": str(row["event_id"]), "eventType": row["event_type"],
        "status": row["status"], "statusCode": row["status_code"],
        "attemptCount": row["attempt_count"], "error": row["error"],
        "durationMs": row["duration_ms"], "deliveredAt": row["delivered_at"],
        "createdAt": row["created_at"],
    }


async def lock_workspace(cur: aiopg.Cursor, workspace_id: uuid.UUID, kind: str) -> None:
    """Serialize creations of one workspace so that the count limit holds under concurrency."""
    await cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                      (f"webhooks:{kind}:{workspace_id}",))


async def count(cur: aiopg.Cursor, workspace_id: uuid.UUID, kind: str) -> int:
    return int(await db.fetchval(
        cur, "SELECT count(*) FROM webhooks.subscriptions WHERE workspace_id = %s AND kind = %s",
        (workspace_id, kind)))


async def insert(cur: aiopg.Cursor, workspace_id: uuid.UUID, kind: str, name: str | None,
                 target_url: str, events: list[str]) -> db.Row:
    row = await db.fetchone(
        cur, f"INSERT INTO webhooks.subscriptions (id, workspace_id, kind, name, target_url,"
             f" events, secret) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}",
        (uuid.uuid4(), workspace_id, kind, name, target_url, events, new_secret()))
    assert row is not None
    await changed(cur, workspace_id)
    return row


async def changed(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> None:
    """Tell every replica's target cache, at commit, that this workspace's subscriptions changed."""
    await cur.execute("SELECT pg_notify(%s, %s)", (CHANGED_CHANNEL, str(workspace_id)))


async def list_main(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> list[db.Row]:
    return await db.fetchall(
        cur, f"SELECT {_COLUMNS} FROM webhooks.subscriptions"
             " WHERE workspace_id = %s AND kind = 'main' ORDER BY created_at, id",
        (workspace_id,))


async def get(cur: aiopg.Cursor, workspace_id: uuid.UUID, sub_id: uuid.UUID,
              kind: str) -> db.Row | None:
    return await db.fetchone(
        cur, f"SELECT {_COLUMNS} FROM webhooks.subscriptions"
             " WHERE workspace_id = %s AND id = %s AND kind = %s",
        (workspace_id, sub_id, kind))


async def recent_deliveries(cur: aiopg.Cursor, sub_id: uuid.UUID, limit: int = 20) -> list[db.Row]:
    return await db.fetchall(
        cur, "SELECT id, event_id, event_type, status, status_code, attempt_count, error,"
             " duration_ms, delivered_at, created_at FROM webhooks.deliveries"
             " WHERE subscription_id = %s ORDER BY created_at DESC, id DESC LIMIT %s",
        (sub_id, limit))


async def delete(cur: aiopg.Cursor, workspace_id: uuid.UUID, sub_id: uuid.UUID,
                 kind: str) -> bool:
    """Remove a subscription; its deliveries (pending ones included) go with it.

    Deliveries first: the dispatcher's writer locks a delivery, then its subscription, and
    taking them in the same order here keeps the two from deadlocking."""
    await cur.execute(
        "DELETE FROM webhooks.deliveries d USING webhooks.subscriptions s"
        " WHERE d.subscription_id = s.id AND s.workspace_id = %s AND s.id = %s AND s.kind = %s",
        (workspace_id, sub_id, kind))
    await cur.execute(
        "DELETE FROM webhooks.subscriptions WHERE workspace_id = %s AND id = %s AND kind = %s",
        (workspace_id, sub_id, kind))
    if not cur.rowcount:
        return False
    await changed(cur, workspace_id)
    return True


async def active_targets(cur: aiopg.Cursor, workspace_id: str) -> list[db.Row]:
    """Every active subscription of the workspace, with what deliveries to it need."""
    return await db.fetchall(
        cur, "SELECT id, kind, target_url, secret, events FROM webhooks.subscriptions"
             " WHERE workspace_id = %s AND is_active", (workspace_id,))
