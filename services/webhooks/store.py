"""The delivery queue in PostgreSQL: insert, claim under a lease, record attempts in batches.

A delivery is due when it is `pending` and `next_attempt_at` has passed. A worker claims due
rows with `FOR UPDATE SKIP LOCKED` and stamps them with its lease (`lease`, `locked_until`),
so any number of dispatchers share the queue and each attempt runs once; a worker that dies
leaves a lease that expires, and the attempt is made again. An attempt's outcome is written
only under the lease that made it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass


import aiopg
import orjson

from libs.common import db

NOTIFY_CHANNEL = "webhooks_deliveries"


@dataclass(frozen=True)
class NewDelivery:
    id: uuid.UUID
    subscription_id: uuid.UUID
    event_type: str
    target_host: str
    body: bytes


@dataclass(frozen=True)
class Claimed:
    id: uuid.UUID
    subscription_id: uuid.UUID
    kind: str
    event_type: str
    target_url: str
    target_host: str
    secret: str
    body: bytes
    attempt_count: int
    lease: uuid.UUID


@dataclass(frozen=True)
class Outcome:
    """One finished attempt and what follows from it."""

    delivery_id: uuid.UUID
    subscription_id: uuid.UUID
    lease: uuid.UUID
    status: str                 # the delivery's status after this attempt
    status_code: int | None
    error: str | None
    duration_ms: int
    signed_at: int
    retry_in_s: float | None    # when still pending
    gone: bool                  # the receiver answered 410


async def insert_deliveries(cur: aiopg.Cursor, workspace_id: str, event_id: str,
                            rows: list[NewDelivery], first_delay_s: float) -> None:
    await cur.execute(
        "INSERT INTO webhooks.deliveries (id, workspace_id, subscription_id, event_id,"
        " event_type, target_host, body, next_attempt_at)"
        " SELECT v.id, %s, v.sub, %s, v.etype, v.host, v.body,"
        "        now() + make_interval(secs => %s)"
        " FROM unnest(%s::uuid[], %s::uuid[], %s::text[], %s::text[], %s::bytea[])"
        "      AS v(id, sub, etype, host, body)"
        " ON CONFLICT (subscription_id, event_id) DO NOTHING",
        (workspace_id, event_id, first_delay_s, [r.id for r in rows],
         [r.subscription_id for r in rows], [r.event_type for r in rows],
         [r.target_host for r in rows], [r.body for r in rows]))
    await cur.execute(f"NOTIFY {NOTIFY_CHANNEL}")  # sent at commit: the first attempt is immediate


_CLAIM = """
WITH cand AS (
    SELECT id, target_host,
           row_number() OVER (PARTITION BY target_host ORDER BY next_attempt_at, id) AS rn
    FROM (SELECT id, target_host, next_attempt_at FROM webhooks.deliveries
          WHERE status = 'pending' AND next_attempt_at <= now()
            AND (locked_until IS NULL OR locked_until < now())
            AND NOT (target_host = ANY(%(busy)s::text[]))
          ORDER BY next_attempt_at LIMIT %(scan)s) c
), pick AS (
    SELECT d.id FROM webhooks.deliveries d JOIN cand ON cand.id = d.id
    WHERE cand.rn <= COALESCE((%(free)s::jsonb ->> cand.target_host)::int, %(per_host)s)
      AND d.status = 'pending' AND (d.locked_until IS NULL OR d.locked_until < now())
    ORDER BY d.next_attempt_at
    LIMIT %(n)s
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE webhooks.deliveries d
SET locked_until = now() + make_interval(secs => %(lease_s)s), lease = %(lease)s
FROM pick, webhooks.subscriptions s
WHERE d.id = pick.id AND s.id = d.subscription_id
RETURNING d.id, d.subscription_id, s.kind, d.event_type, s.target_url, d.target_host, s.secret,
          d.body, d.attempt_count
"""


async def claim(cur: aiopg.Cursor, n: int, free: dict[str, int], per_host: int,
                lease_s: float) -> list[Claimed]:
    """Lease up to `n` due deliveries, at most `free[host]` (else `per_host`) per target host."""
    lease = uuid.uuid4()
    busy = [h for h, f in free.items() if f <= 0]
    await cur.execute(_CLAIM, {
        "busy": busy, "free": orjson.dumps(free).decode(), "per_host": per_host, "n": n,
        "scan": max(n * 4, 200), "lease_s": lease_s, "lease": lease})
    rows = await cur.fetchall()
    return [Claimed(r[0], r[1], r[2], r[3], r[4], r[5], r[6], bytes(r[7]), r[8], lease)
            for r in rows]


_COMPLETE = """
WITH v AS (
    SELECT * FROM unnest(%s::uuid[], %s::uuid[], %s::text[], %s::int[], %s::text[], %s::int[],
                         %s::float8[], %s::bigint[])
         AS v(id, lease, status, code, error, ms, retry_in, signed_at)
), upd AS (
    UPDATE webhooks.deliveries d
    SET status = v.status, attempt_count = d.attempt_count + 1, status_code = v.code,
        error = v.error, duration_ms = v.ms,
        delivered_at = CASE WHEN v.status = 'delivered' THEN now() END,
        next_attempt_at = now() + make_interval(secs => v.retry_in),
        locked_until = NULL, lease = NULL
    FROM v
    WHERE d.id = v.id AND d.lease = v.lease AND d.status = 'pending'
    RETURNING d.id, d.workspace_id, d.attempt_count, v.code, v.error, v.ms, v.signed_at
)
INSERT INTO webhooks.attempts (delivery_id, workspace_id, attempt, status_code, error,
                               duration_ms, signed_at)
SELECT id, workspace_id, attempt_count, code, error, ms, signed_at FROM upd
RETURNING delivery_id
"""


async def record(cur: aiopg.Cursor, outcomes: list[Outcome]) -> set[uuid.UUID]:
    """Write the attempts made under a still-valid lease; return their delivery ids."""
    o = outcomes
    await cur.execute(_COMPLETE, (
        [x.delivery_id for x in o], [x.lease for x in o], [x.status for x in o],
        [x.status_code for x in o], [x.error for x in o], [x.duration_ms for x in o],
        [x.retry_in_s for x in o], [x.signed_at for x in o]))
    return {r[0] for r in await cur.fetchall()}


_SUB_STATS = """
UPDATE webhooks.subscriptions s
SET failure_count = CASE WHEN v.reset THEN v.fails ELSE s.failure_count + v.fails END,
    last_delivered_at = CASE WHEN v.reset THEN now() ELSE s.last_delivered_at END,
    last_failed_at = CASE WHEN v.error IS NOT NULL THEN now() ELSE s.last_failed_at END,
    last_error = COALESCE(v.error, s.last_error)
FROM unnest(%s::uuid[], %s::bool[], %s::int[], %s::text[]) AS v(id, reset, fails, error)
WHERE s.id = v.id
"""


def subscription_stats(outcomes: list[Outcome]) -> dict[uuid.UUID, tuple[bool, int, str | None]]:
    """Per subscription: (a success resets, failures after the last success, last error)."""
    stats: dict[uuid.UUID, tuple[bool, int, str | None]] = {}
    for x in outcomes:  # in completion order
        reset, fails, error = stats.get(x.subscription_id, (False, 0, None))
        if x.status == "delivered":
            stats[x.subscription_id] = (True, 0, error)
        else:
            stats[x.subscription_id] = (reset, fails + 1, x.error)
    return stats


async def update_subscriptions(cur: aiopg.Cursor, outcomes: list[Outcome]) -> None:
    stats = sorted(subscription_stats(outcomes).items())  # one lock order for every writer
    await cur.execute(_SUB_STATS, ([k for k, _ in stats], [v[0] for _, v in stats],
                                   [v[1] for _, v in stats], [v[2] for _, v in stats]))


async def deactivate(cur: aiopg.Cursor, gone: list[uuid.UUID], failed: list[uuid.UUID],
                     disable_after_s: int) -> list[uuid.UUID]:
    """Apply CONTRACT section 6: 410 deactivates (a hook is removed); so does a failed
    delivery when nothing succeeded for `disable_after_s`. Their pending deliveries end."""
    await cur.execute("DELETE FROM webhooks.subscriptions WHERE id = ANY(%s) AND kind = 'automation'",
                      (gone,))
    rows = await db.fetchall(
        cur, "UPDATE webhooks.subscriptions SET is_active = false, updated_at = now()"
             " WHERE is_active AND (id = ANY(%s) OR (id = ANY(%s) AND"
             "  COALESCE(last_delivered_at, created_at) <= now() - make_interval(secs => %s)))"
             " RETURNING id", (gone, failed, disable_after_s))
    off = [r["id"] for r in rows]
    if off:
        await cur.execute(
            "UPDATE webhooks.deliveries SET status = 'failed', next_attempt_at = NULL,"
            " error = COALESCE(error, 'subscription deactivated')"
            " WHERE subscription_id = ANY(%s) AND status = 'pending'", (off,))
    return off


async def release(cur: aiopg.Cursor, leases: list[uuid.UUID]) -> None:
    """Give back leases whose attempts did not finish (shutdown), so they run again at once."""
    await cur.execute("UPDATE webhooks.deliveries SET locked_until = NULL, lease = NULL"
                      " WHERE lease = ANY(%s) AND status = 'pending'", (leases,))


