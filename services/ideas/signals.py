"""An idea's signals: the storage of record and delete (docs/ideas.md, Signals); the route's
transaction is signal_views.record.

The idea's `signal_count`, `last_signal_at`, `unique_source_count` and `average_sentiment` are
stored columns. A write locks the idea's row first, then changes its signal rows, then sets the
columns from those rows in a later statement: concurrent writes on one idea queue on the row
lock, and each recount sees every signal committed before it, so the figures stay exact.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import aiopg
import orjson

from libs.common import db
from libs.common.caller import Caller
from libs.common.errors import NotFound

from . import store
from .render import IDEA_JSON, SIGNAL_JSON

PUBLIC_DOMAINS_FILE = Path(__file__).parent / "public_mail_domains.txt"

# An idea's (`d.id`) figures from its signal rows.
FIGURES = """SELECT count(*)::int AS signal_rows, max(s.detected_at) AS last_signal_at,
         count(DISTINCT s.platform)::int AS unique_source_count,
         avg(s.sentiment_score) AS average_sentiment
    FROM ideas.signals s WHERE s.workspace_id = %(ws)s AND s.idea_id = d.id"""

# The figures of the ideas in `d` (id, delta: signals added or removed, at: when the write
# happened, null for now): `signal_count` moves by the delta (the automation API counts
# requests without a row), the rest from the rows.
RECOUNT = f"""UPDATE ideas.ideas i SET
    signal_count = greatest(i.signal_count + d.delta, 0), last_signal_at = f.last_signal_at,
    unique_source_count = f.unique_source_count, average_sentiment = f.average_sentiment,
    last_activity_at = greatest(i.last_activity_at, coalesce(d.at, now()))
  FROM jsonb_to_recordset(%(d)s::jsonb) AS d(id uuid, delta int, at timestamptz)
  CROSS JOIN LATERAL ({FIGURES}) f
  WHERE i.workspace_id = %(ws)s AND i.id = d.id"""

INSERT = """INSERT INTO ideas.signals AS s (workspace_id, id, idea_id, platform, user_id,
    user_name, user_email, content, similarity, sentiment, sentiment_score,
    auto_linked_customer_id, detected_at, created_at)
  SELECT %(ws)s, x.id, x.idea_id, x.platform, x.user_id, x.user_name, x.user_email, x.content,
         x.similarity, x.sentiment, x.sentiment_score, x.customer_id, x.detected_at,
         coalesce(x.recorded_at, clock_timestamp())
    FROM jsonb_to_recordset(%(rows)s::jsonb) AS x(id uuid, idea_id uuid, platform text,
         user_id text, user_name text, user_email text, content text, similarity float8,
         sentiment text, sentiment_score float8, customer_id uuid, detected_at timestamptz,
         recorded_at timestamptz)"""


@dataclass(slots=True)
class NewSignal:
    """A signal to record. `recorded_at`: when it was recorded (its `created_at` and the idea's
    activity time); None is now. `customer_id` is the customer match, set by `add`."""

    idea_id: uuid.UUID
    platform: str
    content: str | None = None
    user_id: str | None = None
    user_name: str | None = None
    user_email: str | None = None
    similarity: float = 1.0
    sentiment: str | None = None
    sentiment_score: float | None = None
    detected_at: datetime | None = None
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    recorded_at: datetime | None = None
    customer_id: uuid.UUID | None = None


async def insert(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, items: Sequence[NewSignal], *, answer: bool = False
) -> list[str]:
    """Insert the signals with their customer match (each item's `customer_id`; all e-mails in
    two queries), in one statement; with `answer`, their JSON. Their ideas' figures are the
    caller's (`add` recounts them)."""
    if not items:
        return []
    matches = await match_customers(cur, workspace_id, [s.user_email for s in items])
    now = datetime.now(UTC)
    for s in items:
        s.customer_id = matches.get(s.user_email) if s.user_email else None
        s.detected_at = s.detected_at or now
    await cur.execute(
        INSERT + (f" RETURNING {SIGNAL_JSON}::text" if answer else ""),
        {"ws": workspace_id, "rows": orjson.dumps(items).decode()},
    )
    return [str(r[0]) for r in await cur.fetchall()] if answer else []


async def add(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, items: Sequence[NewSignal], *, answer: bool = False
) -> tuple[list[str], dict[uuid.UUID, str]]:
    """Record the signals (the caller holds their ideas' rows locked): `insert`, then set their
    ideas' figures from the rows (`recount`). With `answer`, the signals' JSON and each idea's
    (by id)."""
    signals = await insert(cur, workspace_id, items, answer=answer)
    changes: dict[uuid.UUID, dict[str, Any]] = {}
    for s in items:
        change = changes.setdefault(s.idea_id, {"id": s.idea_id, "delta": 0, "at": None})
        change["delta"] += 1
        if s.recorded_at is not None and (change["at"] is None or s.recorded_at > change["at"]):
            change["at"] = s.recorded_at
    if not changes:
        return signals, {}
    return signals, await recount(cur, workspace_id, list(changes.values()), answer=answer)


async def figures(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_ids: Iterable[uuid.UUID]
) -> dict[uuid.UUID, dict[str, Any]]:
    """The figures `recount` writes, of ideas that are not written yet (whose signals are all
    rows): `signal_count`, `last_signal_at`, `unique_source_count`, `average_sentiment`, by
    idea id."""
    rows = await db.fetchall(
        cur,
        f"SELECT d.id, f.* FROM unnest(%(ids)s::uuid[]) AS d(id) CROSS JOIN LATERAL ({FIGURES}) f",
        {"ws": workspace_id, "ids": sorted(set(idea_ids))},
    )
    return {r.pop("id"): {"signal_count": r.pop("signal_rows"), **r} for r in rows}


async def recount(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    changes: list[dict[str, Any]],
    *,
    answer: bool = False,
) -> dict[uuid.UUID, str]:
    """Set the ideas' figures after their signals changed: each change is {"id", "delta" (signals
    added, or removed when negative), "at" (when; None is now)}. With `answer`, each idea's
    JSON by id."""
    await cur.execute(
        RECOUNT + (f" RETURNING i.id, {IDEA_JSON}::text" if answer else ""),
        {"ws": workspace_id, "d": orjson.dumps(changes).decode()},
    )
    return {r[0]: str(r[1]) for r in await cur.fetchall()} if answer else {}


@lru_cache(maxsize=1)
def public_domains() -> frozenset[str]:
    lines = PUBLIC_DOMAINS_FILE.read_text().splitlines()
    return frozenset(x.strip().lower() for x in lines if x.strip() and not x.startswith("#"))


def mail_domain(email: str) -> str | None:
    """The part after the last `@`, lower case, when it looks like a domain."""
    local, at, domain = email.strip().rpartition("@")
    domain = domain.lower().rstrip(".")
    if not at or not local or "." not in domain:
        return None
    return domain


async def match_customers(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, emails: Iterable[str | None]
) -> dict[str, uuid.UUID]:
    """Each e-mail's customer (keyed by the e-mail as given; unmatched ones are absent): the
    customer whose e-mail it is (ignoring case), else the one customer whose domain is the
    e-mail's when that is not a public mail domain. Two statements for any number."""
    keys = {e: e.strip().lower() for e in set(emails) if e and e.strip()}
    if not keys:
        return {}
    by_email = {
        r["email_key"]: r["customer_id"]
        for r in await db.fetchall(
            cur,
            "SELECT DISTINCT ON (email_key) email_key, customer_id FROM ideas.customer_contacts"
            " WHERE workspace_id = %s AND email_key = ANY(%s) ORDER BY email_key, customer_id",
            (workspace_id, sorted(set(keys.values()))),
        )
    }
    domains = {e: mail_domain(e) for e, key in keys.items() if key not in by_email}
    wanted = sorted({d for d in domains.values() if d and d not in public_domains()})
    by_domain = (
        {
            r["domain_key"]: r["customer_id"]
            for r in await db.fetchall(
                cur,
                "SELECT domain_key, (array_agg(customer_id))[1] AS customer_id"
                " FROM ideas.customer_contacts WHERE workspace_id = %s AND domain_key = ANY(%s)"
                " GROUP BY domain_key HAVING count(*) = 1",
                (workspace_id, wanted),
            )
        }
        if wanted
        else {}
    )
    found = {e: by_email.get(key) or by_domain.get(domains.get(e)) for e, key in keys.items()}
    return {e: uuid.UUID(str(c)) for e, c in found.items() if c is not None}


async def match_customer(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, email: str | None
) -> uuid.UUID | None:
    """The customer of one e-mail (`match_customers`), or None."""
    return (await match_customers(cur, workspace_id, [email])).get(email) if email else None


async def delete(
    cur: aiopg.Cursor, who: Caller, idea_id: uuid.UUID, signal_id: uuid.UUID
) -> dict[str, Any]:
    await store.lock_ideas(cur, who.workspace_id, [idea_id])
    found = await db.fetchval(
        cur,
        "DELETE FROM ideas.signals WHERE workspace_id = %s AND idea_id = %s AND id = %s"
        " RETURNING 1",
        (who.workspace_id, idea_id, signal_id),
    )
    if found is None:
        raise NotFound("Signal not found")
    await recount(cur, who.workspace_id, [{"id": idea_id, "delta": -1, "at": None}])
    return {"id": signal_id, "deleted": True}
