"""An idea's signals through the API: record and delete (docs/ideas.md, Signals).

The idea's `signal_count`, `last_signal_at`, `unique_source_count` and `average_sentiment` are
stored columns. A write locks the idea's row first, then changes its signal rows, then sets the
columns from those rows in a later statement: concurrent writes on one idea queue on the row
lock, and each recount sees every signal committed before it, so the figures stay exact.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import aiopg

from libs.api.ideas.requests import CreateSignalRequest
from libs.common import db
from libs.common.caller import Caller
from libs.common.errors import NotFound
from libs.common.messaging import add_event

from . import ops, store
from .render import IDEA_JSON, SIGNAL_JSON, fragment

PUBLIC_DOMAINS_FILE = Path(__file__).parent / "public_mail_domains.txt"

RECOUNT = f"""UPDATE ideas.ideas i SET
    signal_count = greatest(i.signal_count + %(delta)s, 0),
    last_signal_at = (SELECT max(detected_at) FROM ideas.signals s
                       WHERE s.workspace_id = i.workspace_id AND s.idea_id = i.id),
    unique_source_count = (SELECT count(DISTINCT platform) FROM ideas.signals s
                            WHERE s.workspace_id = i.workspace_id AND s.idea_id = i.id),
    average_sentiment = (SELECT avg(sentiment_score) FROM ideas.signals s
                          WHERE s.workspace_id = i.workspace_id AND s.idea_id = i.id),
    last_activity_at = now()
  WHERE i.workspace_id = %(ws)s AND i.id = %(id)s
  RETURNING {IDEA_JSON}::text"""


async def create(
    cur: aiopg.Cursor,
    who: Caller,
    idea_id: uuid.UUID,
    body: CreateSignalRequest,
    sentiment: str | None,
    sentiment_score: float | None,
) -> str:
    """The new signal's JSON; the idea's figures follow and `idea.signal_detected` is emitted.
    A customer matched by the e-mail is asked to be linked (`signal.matched`)."""
    await store.lock_ideas(cur, who.workspace_id, [idea_id])
    customer_id = await match_customer(cur, who.workspace_id, body.userEmail)
    await cur.execute(
        "INSERT INTO ideas.signals AS s (workspace_id, id, idea_id, platform, user_id, user_name,"
        " user_email, content, similarity, sentiment, sentiment_score, auto_linked_customer_id,"
        " detected_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        f" RETURNING {SIGNAL_JSON}::text",
        (
            who.workspace_id,
            uuid.uuid4(),
            idea_id,
            body.platform,
            body.userId,
            body.userName,
            body.userEmail,
            body.content,
            body.similarity,
            sentiment,
            sentiment_score,
            customer_id,
            body.detectedAt or datetime.now(UTC),
        ),
    )
    signal = str((await cur.fetchone())[0])
    idea = await _recount(cur, who, idea_id, 1)
    await ops.emit(cur, who, "idea.signal_detected", idea, signal=fragment(signal))
    if customer_id is not None:
        # Internal: the customers service links the pair as POST /ideas/{id}/customers would
        # (no conflict when linked already); its link.created feeds totalCustomerARR.
        await add_event(
            cur,
            "ideas",
            "signal.matched",
            who.workspace_id,
            {"ideaId": str(idea_id), "customerId": str(customer_id)},
            who.request_id,
        )
    return signal


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


async def match_customer(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, email: str | None
) -> uuid.UUID | None:
    """The customer whose e-mail is `email` (ignoring case), else the one customer whose domain
    is the e-mail's when that is not a public mail domain; None otherwise."""
    if not email or not email.strip():
        return None
    found = await db.fetchval(
        cur,
        "SELECT customer_id FROM ideas.customer_contacts WHERE workspace_id = %s"
        " AND email_key = lower(%s) ORDER BY customer_id LIMIT 1",
        (workspace_id, email.strip()),
    )
    if found is not None:
        return uuid.UUID(str(found))
    domain = mail_domain(email)
    if domain is None or domain in public_domains():
        return None
    rows = await db.fetchall(
        cur,
        "SELECT customer_id FROM ideas.customer_contacts WHERE workspace_id = %s"
        " AND domain_key = %s LIMIT 2",
        (workspace_id, domain),
    )
    return uuid.UUID(str(rows[0]["customer_id"])) if len(rows) == 1 else None


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
    await _recount(cur, who, idea_id, -1)
    return {"id": signal_id, "deleted": True}


async def _recount(cur: aiopg.Cursor, who: Caller, idea_id: uuid.UUID, delta: int) -> str:
    await cur.execute(RECOUNT, {"delta": delta, "ws": who.workspace_id, "id": idea_id})
    return str((await cur.fetchone())[0])
