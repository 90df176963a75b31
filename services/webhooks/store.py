"""The delivery queue in PostgreSQL: insert, claim under a lease, record attempts in batches.

A delivery is due when it is `pending` and `next_attempt_at` has passed. A worker claims due
rows with `FOR UPDATE SKIP LOCKED` and stamps them with its lease (`lease`, `locked_until`),
so any number of dispatchers share the queue and each attempt runs once; a worker that dies
leaves a lease that expires, and the attempt is made again. An attempt's outcome is written
only under the lease that made it.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace

import aiopg
import orjson

from libs.common import db

NOTIFY_CHANNEL = "webhooks_deliveries"
LEASE_MARGIN_S = 10.0  # a lease lasts the attempt's timeout and this


@dataclass(frozen=True, kw_only=True)
class NewDelivery:
    id: uuid.UUID
    event_id: str
    workspace_id: str
    subscription_id: uuid.UUID
    event_type: str
    target_host: str
    body: bytes
    leased: bool = False  # written under the inserting replica's lease: its first attempt
    occurred_at: str | None = None  # the event's createdAt

    def leased_copy(self) -> NewDelivery:
        return replace(self, leased=True)


@dataclass(frozen=True, kw_only=True)
class Secrets:
    """What signs an attempt: the current secret and, during a rotation, the previous one
    until `previous_expires_at` (Unix seconds). The sender decides at signing time."""

    current: str
    previous: str | None = None
    previous_expires_at: float | None = None

    def valid(self, now: float) -> list[str]:
        """The secrets that sign at `now`, the current one first (at most two)."""
        if self.previous and self.previous_expires_at and now < self.previous_expires_at:
            return [self.current, self.previous]
        return [self.current]


@dataclass(frozen=True, kw_only=True)
class Claimed:
    id: uuid.UUID
    workspace_id: str
    subscription_id: uuid.UUID
    kind: str
    event_type: str
    target_url: str
    target_host: str
    secrets: Secrets
    body: bytes
    attempt_count: int
    lease: uuid.UUID
    schedule_base: int = 0  # attempt_count when the delivery was last redelivered
    claimed_at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """One finished attempt and what follows from it."""

    delivery_id: uuid.UUID
    subscription_id: uuid.UUID
    lease: uuid.UUID
    status: str  # the delivery's status after this attempt
    status_code: int | None
    error: str | None
    duration_ms: int
    signed_at: int
    retry_in_s: float | None  # when still pending
    gone: bool  # the receiver answered 410
    attempted_at: float = 0.0  # Unix time the attempt started


_INSERT = """
WITH ins AS (
    INSERT INTO webhooks.deliveries (id, workspace_id, subscription_id, event_id, event_type,
                                     target_host, body, next_attempt_at, locked_until, lease)
    SELECT v.id, v.ws, v.sub, v.event, v.etype, v.host, v.body,
           now() + make_interval(secs => %(delay)s),
           -- counted from now, not from the transaction's start: the attempt starts at commit
           CASE WHEN v.leased THEN clock_timestamp() + make_interval(secs => %(lease_s)s) END,
           CASE WHEN v.leased THEN %(lease)s::uuid END
    FROM unnest(%(id)s::uuid[], %(ws)s::uuid[], %(sub)s::uuid[], %(event)s::uuid[],
                %(etype)s::text[], %(host)s::text[], %(body)s::bytea[], %(leased)s::bool[],
                %(at)s::timestamptz[])
         AS v(id, ws, sub, event, etype, host, body, leased, at)
    -- the subscription may have been deleted or deactivated since it was cached, and an
    -- event that occurred while it was off is not for it, even now that it is on again
    JOIN webhooks.subscriptions s ON s.id = v.sub AND s.is_active
         AND NOT COALESCE(v.at >= s.deactivated_at AND v.at < s.reactivated_at, false)
    ON CONFLICT (subscription_id, event_id) DO NOTHING
    RETURNING id, subscription_id, target_host, lease IS NULL AS unleased
)
-- unleased rows of the hosts named wake the dispatchers at commit (one notification per host);
-- the subscription as this transaction sees it signs the attempts handed over
SELECT ins.id, CASE WHEN unleased AND ins.target_host = ANY(%(notify)s::text[])
                    THEN pg_notify(%(channel)s, ins.target_host) END,
       s.target_url, s.secret, s.previous_secret,
       extract(epoch FROM s.previous_secret_expires_at)::float8
FROM ins JOIN webhooks.subscriptions s ON s.id = ins.subscription_id
"""


async def insert_deliveries(
    cur: aiopg.Cursor,
    rows: list[NewDelivery],
    first_delay_s: float,
    lease: uuid.UUID,
    lease_s: float,
    notify: list[str],
) -> dict[uuid.UUID, tuple[str, Secrets]]:
    """One statement for all rows (a redelivered event adds nothing); the ids written, with
    their subscription's URL and secrets as of this statement. Unleased rows of the `notify`
    hosts NOTIFY the dispatchers at commit."""
    await cur.execute(
        _INSERT,
        {
            "delay": first_delay_s,
            "lease_s": lease_s,
            "lease": lease,
            "channel": NOTIFY_CHANNEL,
            "notify": notify,
            "id": [r.id for r in rows],
            "ws": [r.workspace_id for r in rows],
            "sub": [r.subscription_id for r in rows],
            "event": [r.event_id for r in rows],
            "etype": [r.event_type for r in rows],
            "host": [r.target_host for r in rows],
            "body": [r.body for r in rows],
            "leased": [r.leased for r in rows],
            "at": [r.occurred_at for r in rows],
        },
    )
    return {
        r[0]: (r[2], Secrets(current=r[3], previous=r[4], previous_expires_at=r[5]))
        for r in await cur.fetchall()
    }


# Hosts and workspaces with no free share are left out of the window; within it, each
# workspace's k-th due row comes before any workspace's (k+1)-th (round robin), so a workspace
# with a long backlog cannot push the others' rows back.
_CLAIM = """
WITH cand AS (
    SELECT id, next_attempt_at,
           row_number() OVER (PARTITION BY target_host ORDER BY next_attempt_at, id) AS rn_host,
           (%(free)s::jsonb ->> target_host)::int AS free_host,
           row_number() OVER (PARTITION BY workspace_id ORDER BY next_attempt_at, id) AS rn_ws,
           (%(free_ws)s::jsonb ->> workspace_id::text)::int AS free_ws
    FROM (SELECT id, target_host, workspace_id, next_attempt_at FROM webhooks.deliveries
          WHERE status = 'pending' AND next_attempt_at <= now()
            AND (locked_until IS NULL OR locked_until < now())
            AND NOT (target_host = ANY(%(busy)s::text[]))
            AND NOT (workspace_id = ANY(%(busy_ws)s::uuid[]))
          ORDER BY next_attempt_at LIMIT %(scan)s) c
), pick AS (
    SELECT d.id FROM webhooks.deliveries d JOIN cand ON cand.id = d.id
    WHERE cand.rn_host <= COALESCE(cand.free_host, %(per_host)s)
      AND cand.rn_ws <= COALESCE(cand.free_ws, %(per_ws)s)
      AND d.status = 'pending' AND (d.locked_until IS NULL OR d.locked_until < now())
    ORDER BY cand.rn_ws, cand.next_attempt_at
    LIMIT %(n)s
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE webhooks.deliveries d
SET locked_until = now() + make_interval(secs => %(lease_s)s), lease = %(lease)s
FROM pick, webhooks.subscriptions s
WHERE d.id = pick.id AND s.id = d.subscription_id
RETURNING d.id, d.workspace_id, d.subscription_id, s.kind, d.event_type, s.target_url,
          d.target_host, s.secret, s.previous_secret,
          extract(epoch FROM s.previous_secret_expires_at)::float8, d.body, d.attempt_count,
          d.schedule_base
"""


async def claim(
    cur: aiopg.Cursor,
    n: int,
    free: dict[str, int],
    per_host: int,
    free_ws: dict[str, int],
    per_ws: int,
    lease_s: float,
) -> list[Claimed]:
    """Lease up to `n` due deliveries, at most `free[host]` (else `per_host`) per target host
    and `free_ws[workspace]` (else `per_ws`) per workspace, fairly across workspaces."""
    lease = uuid.uuid4()
    busy = [h for h, f in free.items() if f <= 0]
    busy_ws = [w for w, f in free_ws.items() if f <= 0]
    await cur.execute(
        _CLAIM,
        {
            "busy": busy,
            "free": orjson.dumps(free).decode(),
            "per_host": per_host,
            "busy_ws": busy_ws,
            "free_ws": orjson.dumps(free_ws).decode(),
            "per_ws": per_ws,
            "n": n,
            "scan": max(n * 4, 200),
            "lease_s": lease_s,
            "lease": lease,
        },
    )
    rows = await cur.fetchall()
    return [
        Claimed(
            id=r[0],
            workspace_id=str(r[1]),
            subscription_id=r[2],
            kind=r[3],
            event_type=r[4],
            target_url=r[5],
            target_host=r[6],
            secrets=Secrets(current=r[7], previous=r[8], previous_expires_at=r[9]),
            body=bytes(r[10]),
            attempt_count=r[11],
            lease=lease,
            schedule_base=r[12],
        )
        for r in rows
    ]


async def current(cur: aiopg.Cursor, sub_id: uuid.UUID) -> tuple[str, Secrets] | None:
    """An active subscription's URL and secrets now (None once deleted or inactive)."""
    await cur.execute(
        "SELECT target_url, secret, previous_secret,"
        " extract(epoch FROM previous_secret_expires_at)::float8"
        " FROM webhooks.subscriptions WHERE id = %s AND is_active",
        (sub_id,),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return row[0], Secrets(current=row[1], previous=row[2], previous_expires_at=row[3])


_RECORD = """
WITH v AS (
    SELECT * FROM jsonb_to_recordset(%s::jsonb)
         AS v(id uuid, sub uuid, lease uuid, status text, code int, error text, ms int,
              retry_in float8, signed_at bigint, started float8, ord int)
), upd AS (
    UPDATE webhooks.deliveries d
    SET status = v.status, attempt_count = d.attempt_count + 1, status_code = v.code,
        error = v.error, duration_ms = v.ms,
        delivered_at = CASE WHEN v.status = 'delivered' THEN now() END,
        next_attempt_at = now() + make_interval(secs => v.retry_in),
        locked_until = NULL, lease = NULL
    FROM v
    WHERE d.id = v.id AND d.lease = v.lease AND d.status = 'pending'
    RETURNING d.id, d.workspace_id, d.attempt_count, v.sub, v.status, v.code, v.error, v.ms,
              v.signed_at, v.started, v.ord
), ended AS (
    -- the delivery ended meanwhile (its subscription paused or deactivated): the attempt is
    -- not counted, but its lease is given back, so the delivery can be redelivered at once
    UPDATE webhooks.deliveries d SET locked_until = NULL, lease = NULL
    FROM v WHERE d.id = v.id AND d.lease = v.lease AND d.status <> 'pending'
), ins AS (
    INSERT INTO webhooks.attempts (delivery_id, workspace_id, attempt, status_code, error,
                                   duration_ms, signed_at, attempted_at)
    SELECT id, workspace_id, attempt_count, code, error, ms, signed_at, to_timestamp(started)
    FROM upd
), per AS (
    SELECT sub, status, error, ord,
           max(ord) FILTER (WHERE status = 'delivered') OVER (PARTITION BY sub) AS last_ok
    FROM upd
), stats AS (
    -- per subscription, in completion order: a success resets the failure count, failures
    -- after the last success add to it, the last failure's error is kept
    SELECT sub, last_ok IS NOT NULL AS reset,
           count(*) FILTER (WHERE status <> 'delivered' AND ord > COALESCE(last_ok, -1)) AS fails,
           (array_agg(error ORDER BY ord DESC) FILTER (WHERE status <> 'delivered'))[1] AS error
    FROM per GROUP BY sub, last_ok
), locked AS (
    -- in id order, so that writers of several replicas do not deadlock
    SELECT s.id FROM webhooks.subscriptions s WHERE s.id IN (SELECT sub FROM stats)
    ORDER BY s.id FOR NO KEY UPDATE
), subs AS (
    UPDATE webhooks.subscriptions s
    SET failure_count = CASE WHEN st.reset THEN st.fails ELSE s.failure_count + st.fails END,
        last_delivered_at = CASE WHEN st.reset THEN now() ELSE s.last_delivered_at END,
        last_failed_at = CASE WHEN st.error IS NOT NULL THEN now() ELSE s.last_failed_at END,
        last_error = COALESCE(st.error, s.last_error)
    FROM stats st JOIN locked l ON l.id = st.sub
    WHERE s.id = st.sub
)
SELECT id FROM upd
"""


async def record(cur: aiopg.Cursor, outcomes: list[Outcome]) -> set[uuid.UUID]:
    """Write the attempts made under a still-valid lease and their subscriptions' counters,
    in one statement; return the delivery ids written."""
    # One JSON parameter: orjson writes it far faster than psycopg2 adapts ten arrays.
    batch = orjson.dumps(
        [
            {
                "id": x.delivery_id,
                "sub": x.subscription_id,
                "lease": x.lease,
                "status": x.status,
                "code": x.status_code,
                "error": x.error,
                "ms": x.duration_ms,
                "retry_in": x.retry_in_s,
                "signed_at": x.signed_at,
                "started": x.attempted_at,
                "ord": i,
            }
            for i, x in enumerate(outcomes)
        ]
    )
    await cur.execute(_RECORD, (batch.decode(),))
    return {r[0] for r in await cur.fetchall()}


async def deactivate(
    cur: aiopg.Cursor, gone: list[uuid.UUID], failed: list[uuid.UUID], disable_after_s: int
) -> list[uuid.UUID]:
    """Apply docs/webhooks.md: 410 deactivates (a hook is removed); so does a failed
    delivery when nothing succeeded for `disable_after_s`. Their pending deliveries end."""
    await cur.execute(
        "DELETE FROM webhooks.subscriptions WHERE id = ANY(%s) AND kind = 'automation'", (gone,)
    )
    rows = await db.fetchall(
        cur,
        "UPDATE webhooks.subscriptions SET is_active = false, updated_at = now(),"
        " deactivated_at = now()"
        " WHERE is_active AND (id = ANY(%s) OR (id = ANY(%s) AND"
        "  COALESCE(last_delivered_at, created_at) <= now() - make_interval(secs => %s)))"
        " RETURNING id",
        (gone, failed, disable_after_s),
    )
    off = [r["id"] for r in rows]
    if off:
        await cur.execute(
            "UPDATE webhooks.deliveries SET status = 'failed', next_attempt_at = NULL,"
            " error = COALESCE(error, 'subscription deactivated')"
            " WHERE subscription_id = ANY(%s) AND status = 'pending'",
            (off,),
        )
    return off


async def release(cur: aiopg.Cursor, leases: list[uuid.UUID]) -> None:
    """Give back leases whose attempts did not finish (shutdown), so they run again at once."""
    await cur.execute(
        "UPDATE webhooks.deliveries SET locked_until = NULL, lease = NULL"
        " WHERE lease = ANY(%s) AND status = 'pending'",
        (leases,),
    )
