"""Read-only sub-resources of an idea: signals and decisions (paged), evidence, participants,
meetings, support tickets, and the vote breakdown. Rows are built as JSON inside PostgreSQL."""

from __future__ import annotations

import uuid
from typing import Any

import aiopg

from libs.common import db
from libs.common.errors import NotFound
from libs.common.pagination import decode_cursor, encode_cursor

SIGNAL_JSON = """json_build_object('id', s.id, 'platform', s.platform, 'userId', s.user_id,
 'userName', s.user_name, 'userEmail', s.user_email, 'content', s.content,
 'similarity', s.similarity, 'sentiment', s.sentiment, 'sentimentScore', s.sentiment_score,
 'autoLinkedCustomerId', s.auto_linked_customer_id, 'detectedAt', s.detected_at,
 'createdAt', s.created_at)::text"""
DECISION_JSON = """json_build_object('id', s.id, 'eventType', s.event_type,
 'closureCategory', s.closure_category, 'reason', s.reason, 'confidenceScore', s.confidence_score,
 'previousStatus', s.previous_status, 'newStatus', s.new_status, 'actorEmail', s.actor_email,
 'actorName', s.actor_name, 'source', s.source, 'relatedIdeaId', s.related_idea_id,
 'externalIssueId', s.external_issue_id, 'externalIssueUrl', s.external_issue_url,
 'metadata', s.metadata, 'createdAt', s.created_at)::text"""

# name -> (table, JSON of one row, ORDER BY)
PLAIN = {
    "evidence": ("ideas.evidence", """json_build_object('id', s.id, 'type', s.type,
        'title', s.title, 'url', s.url, 'content', s.content, 'createdAt', s.created_at)""",
                 "s.created_at DESC, s.id"),
    "participants": ("ideas.participants", """json_build_object('id', s.id, 'name', s.name,
        'email', s.email, 'role', s.role, 'decision', s.decision, 'decidedAt', s.decided_at)""",
                     "s.role, s.name, s.id"),
    "meetings": ("ideas.meetings", """json_build_object('id', s.id, 'title', s.title,
        'meetingDate', s.meeting_date, 'participants', to_json(s.participants),
        'excerpt', s.excerpt, 'relation', s.relation, 'transcriptUrl', s.transcript_url)""",
                 "s.meeting_date DESC, s.id"),
    "support_tickets": ("ideas.support_tickets", """json_build_object('id', s.id,
        'platform', s.platform, 'externalId', s.external_id, 'subject', s.subject,
        'status', s.status, 'priority', s.priority, 'customerName', s.customer_name,
        'customerEmail', s.customer_email, 'url', s.url, 'createdAt', s.created_at)""",
                        "s.created_at DESC, s.id"),
}
# name -> (table, JSON, time column, descending?)  signals newest first, decisions as a history
PAGED = {
    "signals": ("ideas.signals", SIGNAL_JSON, "detected_at", True),
    "decisions": ("ideas.decisions", DECISION_JSON, "created_at", False),
}


async def require_idea(cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID) -> None:
    if await db.fetchval(cur, "SELECT 1 FROM ideas.ideas WHERE workspace_id = %s AND id = %s",
                         (workspace_id, idea_id)) is None:
        raise NotFound("Idea not found")


async def plain_list(cur: aiopg.Cursor, name: str, workspace_id: uuid.UUID,
                     idea_id: uuid.UUID) -> str:
    """The JSON array text of an idea's rows of one sub-resource."""
    await require_idea(cur, workspace_id, idea_id)
    table, obj, order = PLAIN[name]
    text = await db.fetchval(
        cur, f"SELECT coalesce(json_agg({obj} ORDER BY {order}), '[]')::text FROM {table} s"
             " WHERE s.workspace_id = %s AND s.idea_id = %s", (workspace_id, idea_id))
    return str(text)


async def paged_list(cur: aiopg.Cursor, name: str, secret: tuple[str, ...], workspace_id: uuid.UUID,
                     idea_id: uuid.UUID, limit: int,
                     cursor: str | None) -> tuple[list[str], str | None, bool]:
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
        f" LIMIT {limit + 1}", params)
    rows = await cur.fetchall()
    has_more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if has_more:
        next_cursor = encode_cursor(secret, sc, [rows[-1][0].isoformat(), str(rows[-1][1])])
    return [r[2] for r in rows], next_cursor, has_more


async def vote_breakdown(cur: aiopg.Cursor, workspace_id: uuid.UUID,
                         idea_id: uuid.UUID) -> dict[str, Any]:
    row = await db.fetchone(
        cur, "SELECT vote_count, public_vote_count, request_count,"
             " (SELECT count(*) FILTER (WHERE value = 1) FROM ideas.votes v"
             "   WHERE v.workspace_id = i.workspace_id AND v.idea_id = i.id) AS up,"
             " (SELECT count(*) FILTER (WHERE value = -1) FROM ideas.votes v"
             "   WHERE v.workspace_id = i.workspace_id AND v.idea_id = i.id) AS down,"
             " (SELECT coalesce(json_agg(json_build_object('voter', v.voter, 'value', v.value,"
             "   'createdAt', v.created_at) ORDER BY v.created_at DESC), '[]')::text FROM"
             "   (SELECT * FROM ideas.votes v WHERE v.workspace_id = i.workspace_id"
             "     AND v.idea_id = i.id ORDER BY v.created_at DESC LIMIT 1000) v) AS votes"
             " FROM ideas.ideas i WHERE i.workspace_id = %s AND i.id = %s",
        (workspace_id, idea_id))
    if row is None:
        raise NotFound("Idea not found")
    from .render import fragment
    return {"voteCount": row["vote_count"], "upvotes": row["up"], "downvotes": row["down"],
            "publicVoteCount": row["public_vote_count"], "requestCount": row["request_count"],
            "votes": fragment(row["votes"])}
