"""The public Idea shape, built two ways that must agree.

`IDEA_JSON` builds it inside PostgreSQL (`json_build_object`), so lists and reads embed the text
as an orjson fragment without converting rows in Python. `render_idea` builds it from a row dict
(`SELECT * FROM ideas.ideas`), for code that holds a row (events of other services, tests).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson

# json_build_object takes at most 100 arguments: the idea's 36 pairs fit.
IDEA_JSON = """json_build_object(
 'id', i.id, 'ideaServiceId', 'IDEA-' || i.number, 'title', i.title, 'summary', i.summary,
 'status', i.status, 'source', i.source, 'category', i.category, 'ideaType', i.idea_type,
 'url', i.url, 'destination', i.destination, 'destinationIssueId', i.destination_issue_id,
 'destinationIssueUrl', i.destination_issue_url, 'voteCount', i.vote_count,
 'publicVoteCount', i.public_vote_count, 'requestCount', i.request_count,
 'signalCount', i.signal_count,
 'rice', json_build_object('reach', i.rice_reach, 'impact', i.rice_impact,
   'confidence', i.rice_confidence, 'effort', i.rice_effort, 'score', i.rice_score,
   'priority', i.rice_priority, 'source', i.rice_source),
 'validation', json_build_object('score', i.validation_score,
   'evidenceCount', i.validation_evidence_count),
 'decisionReason', i.decision_reason, 'decidedAt', i.decided_at,
 'closureCategory', i.closure_category, 'decisionOwnerName', i.decision_owner_name,
 'decisionDeadline', i.decision_deadline, 'totalCustomerARR', i.total_customer_arr,
 'lastActivityAt', i.last_activity_at, 'lastSignalAt', i.last_signal_at,
 'uniqueSourceCount', i.unique_source_count, 'averageSentiment', i.average_sentiment,
 'workItemStatus', i.work_item_status, 'shippedAt', i.shipped_at, 'productId', i.product_id,
 'actionable', i.actionable, 'createdAt', i.created_at, 'roadmapStageId', i.roadmap_stage_id)"""

# IdeaDetail's extra fields, merged into the idea object (jsonb concatenation keeps it one value).
DETAIL_JSON = f"""({IDEA_JSON}::jsonb || jsonb_build_object(
 'tags', coalesce((SELECT jsonb_agg(jsonb_build_object('id', t.id, 'name', t.name,
                   'color', t.color) ORDER BY t.name, t.id)
             FROM ideas.idea_tags it JOIN ideas.tags t ON t.id = it.tag_id
            WHERE it.workspace_id = i.workspace_id AND it.idea_id = i.id), '[]'::jsonb),
 'externalWorkItem', CASE WHEN i.destination IS NOT NULL AND i.destination_issue_id IS NOT NULL
     THEN jsonb_build_object('system', i.destination, 'issueId', i.destination_issue_id,
          'issueUrl', i.destination_issue_url, 'status', i.work_item_status) END,
 'sourceUserId', i.author_id, 'sourceUserName', i.author_name, 'rawInput', i.raw_input))"""


def _ts(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _num(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def render_idea(row: dict[str, Any]) -> dict[str, Any]:
    """The public Idea JSON object of an `ideas.ideas` row (column names as keys)."""
    return {
        "id": str(row["id"]), "ideaServiceId": f"IDEA-{row['number']}",
        "title": row["title"], "summary": row["summary"], "status": row["status"],
        "source": row["source"], "category": row["category"], "ideaType": row["idea_type"],
        "url": row["url"], "destination": row["destination"],
        "destinationIssueId": row["destination_issue_id"],
        "destinationIssueUrl": row["destination_issue_url"],
        "voteCount": row["vote_count"], "publicVoteCount": row["public_vote_count"],
        "requestCount": row["request_count"], "signalCount": row["signal_count"],
        "rice": {"reach": row["rice_reach"], "impact": row["rice_impact"],
                 "confidence": row["rice_confidence"], "effort": row["rice_effort"],
                 "score": row["rice_score"], "priority": row["rice_priority"],
                 "source": row["rice_source"]},
        "validation": {"score": row["validation_score"],
                       "evidenceCount": row["validation_evidence_count"]},
        "decisionReason": row["decision_reason"], "decidedAt": _ts(row["decided_at"]),
        "closureCategory": row["closure_category"],
        "decisionOwnerName": row["decision_owner_name"],
        "decisionDeadline": _ts(row["decision_deadline"]),
        "totalCustomerARR": _num(row["total_customer_arr"]),
        "lastActivityAt": _ts(row["last_activity_at"]), "lastSignalAt": _ts(row["last_signal_at"]),
        "uniqueSourceCount": row["unique_source_count"],
        "averageSentiment": row["average_sentiment"], "workItemStatus": row["work_item_status"],
        "shippedAt": _ts(row["shipped_at"]), "productId": _str(row["product_id"]),
        "actionable": row["actionable"], "createdAt": _ts(row["created_at"]),
        "roadmapStageId": _str(row["roadmap_stage_id"]),
    }


def fragment(text: str | None) -> orjson.Fragment | None:
    """JSON text from PostgreSQL, embedded in a response or event without re-parsing."""
    return None if text is None else orjson.Fragment(text)
