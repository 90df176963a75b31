"""Read-only sub-resources of an idea: signals and decisions (paged), evidence, participants,
meetings, support tickets, and the vote breakdown. Rows are built as JSON inside PostgreSQL, in
the one form of libs/common/render.py: row_to_json (compact, keys in the SELECT list's order,
which is the OpenAPI document's) and date-times through ims_json_ts."""

from __future__ import annotations

import uuid
from typing import Any

import aiopg
import orjson

from libs.common import db
from libs.common.errors import NotFound
from libs.common.pagination import decode_cursor, page_tail
from libs.common.render import dumps, fragment

from .render import SIGNAL_JSON

# A decision of the history, over `ideas.decisions s`. Its `metadata` is jsonb, whose text has
# spaces and sorted keys: `paged_list` re-renders a decisions page with the one serializer.
DECISION_JSON = """(SELECT row_to_json(d) FROM (SELECT s.id, s.event_type AS "eventType",
 s.closure_category AS "closureCategory", s.reason, s.confidence_score AS "confidenceScore",
 s.previous_status AS "previousStatus", s.new_status AS "newStatus",
 s.actor_email AS "actorEmail", s.actor_name AS "actorName", s.source,
 s.related_idea_id AS "relatedIdeaId", s.external_issue_id AS "externalIssueId",
 s.external_issue_url AS "externalIssueUrl", s.metadata,
 ims_json_ts(s.created_at) AS "createdAt") d)::text"""

# name -> (table, the public fields of one row `s` as a SELECT list, ORDER BY); each row is
# turned into compact JSON by row_to_json, its keys in this order.
PLAIN = {
    "evidence": (
        "ideas.evidence",
        '''s.id, s.type, s.title, s.url, s.content,
        ims_json_ts(s.created_at) AS "createdAt"''',
        "s.created_at DESC, s.id",
    ),
    "participants": (
        "ideas.participants",
        '''s.id, s.name, s.email, s.role, s.decision,
        ims_json_ts(s.decided_at) AS "decidedAt"''',
        "s.role, s.name, s.id",
    ),
    "meetings": (
        "ideas.meetings",
        '''s.id, s.title, ims_json_ts(s.meeting_date) AS "meetingDate",
        s.participants, s.excerpt, s.relation, s.transcript_url AS "transcriptUrl"''',
        "s.meeting_date DESC, s.id",
    ),
    "support_tickets": (
        "ideas.support_tickets",
        '''s.id, s.platform,
        s.external_id AS "externalId", s.subject, s.status, s.priority,
        s.customer_name AS "customerName", s.customer_email AS "customerEmail", s.url,
        ims_json_ts(s.created_at) AS "createdAt"''',
        "s.created_at DESC, s.id",
    ),
}
# name -> (table, JSON, time column, descending?)  signals newest first, decisions as a history
PAGED = {
    "signals": ("ideas.signals", f"{SIGNAL_JSON}::text", "detected_at", True),
    "decisions": ("ideas.decisions", DECISION_JSON, "created_at", False),
}


async def require_idea(cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID) -> None:
    if (
        await db.fetchval(
            cur,
            "SELECT 1 FROM ideas.ideas WHERE workspace_id = %s AND id = %s",
            (workspace_id, idea_id),
        )
        is None
    ):
        raise NotFound("Idea not found")


async def plain_list(
    cur: aiopg.Cursor, name: str, workspace_id: uuid.UUID, idea_id: uuid.UUID
) -> list[str]:
    """The JSON text of each of an idea's rows of one sub-resource, in order."""
    await require_idea(cur, workspace_id, idea_id)
    table, fields, order = PLAIN[name]
    await cur.execute(
        f"SELECT row_to_json(x)::text FROM (SELECT {fields} FROM {table} s"
        f" WHERE s.workspace_id = %s AND s.idea_id = %s ORDER BY {order}) x",
        (workspace_id, idea_id),
    )
    return [r[0] for r in await cur.fetchall()]


async def paged_list(
    cur: aiopg.Cursor,
    name: str,
    secret: tuple[str, ...],
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    limit: int,
    cursor: str | None,
) -> tuple[list[str], str | None, bool]:
    await require_idea(cur, workspace_id, idea_id)
    table, obj, col, desc = PAGED[name]
    sc = {"ws": str(workspace_id), "idea": str(idea_id), "list": name}
    after, params = "", [workspace_id, idea_id]
    if cursor:
        values = decode_cursor(secret, cursor, sc)
        op = "<" if desc else ">"
        after = f" AND (s.{col}, s.id) {op} (%s::timestamptz, %s::uuid)"
        params += values[:2]
    direction = "DESC" if desc else "ASC"
    await cur.execute(
        f"SELECT s.{col}, s.id, {obj} FROM {table} s WHERE s.workspace_id = %s"
        f" AND s.idea_id = %s{after} ORDER BY s.{col} {direction}, s.id {direction}"
        f" LIMIT {limit + 1}",
        params,
    )
    rows, next_cursor, has_more = page_tail(
        await cur.fetchall(), limit, secret, sc, lambda r: [r[0].isoformat(), str(r[1])]
    )
    texts = [r[2] for r in rows]
    if name == "decisions":
        texts = [dumps(orjson.loads(t)).decode() for t in texts]
    return texts, next_cursor, has_more


async def vote_breakdown(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID
) -> dict[str, Any]:
    row = await db.fetchone(
        cur,
        "SELECT vote_count, public_vote_count, request_count,"
        " (SELECT count(*) FILTER (WHERE value = 1) FROM ideas.votes v"
        "   WHERE v.workspace_id = i.workspace_id AND v.idea_id = i.id) AS up,"
        " (SELECT count(*) FILTER (WHERE value = -1) FROM ideas.votes v"
        "   WHERE v.workspace_id = i.workspace_id AND v.idea_id = i.id) AS down,"
        " array_to_json(ARRAY(SELECT row_to_json(x) FROM (SELECT v.voter, v.value,"
        '   ims_json_ts(v.created_at) AS "createdAt", v.user_id AS "userId" FROM ideas.votes v'
        "   WHERE v.workspace_id = i.workspace_id AND v.idea_id = i.id"
        "   ORDER BY v.created_at DESC, v.voter LIMIT 1000) x))::text AS votes"
        " FROM ideas.ideas i WHERE i.workspace_id = %s AND i.id = %s",
        (workspace_id, idea_id),
    )
    if row is None:
        raise NotFound("Idea not found")
    return {
        "voteCount": row["vote_count"],
        "upvotes": row["up"],
        "downvotes": row["down"],
        "publicVoteCount": row["public_vote_count"],
        "requestCount": row["request_count"],
        "votes": fragment(row["votes"]),
    }
