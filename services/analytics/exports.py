"""The four exports: their queries and their records (CONTRACT section 9).

Each export is a query (run through a server-side cursor by `stream`) and two ways to shape a
database row: a JSON record, and the flat cells of a CSV line under `columns`. Ideas come newest
first; decisions by `decidedAt` and signals by `detectedAt`, newest first; customers newest first.
Without `status`, deleted ideas (and the signals of deleted ideas) are left out.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson

from libs.common.errors import ValidationFailed

from libs.api.analytics.schemas import DatedExportQuery, ExportQuery, IdeasExportQuery, SignalsExportQuery

Record = dict[str, Any]


@dataclass(frozen=True)
class Export:
    kind: str
    sql: str
    params: dict[str, Any]
    columns: Sequence[str]
    record: Callable[[tuple[Any, ...]], Record]
    cells: Callable[[Record], list[Any]]


def _num(v: Decimal | float | int | None) -> float | None:
    return None if v is None else float(v)


def _flat(columns: Sequence[str]) -> Callable[[Record], list[Any]]:
    return lambda rec: [rec.get(c) for c in columns]


def _range(column: str, q: DatedExportQuery, where: list[str], params: dict[str, Any]) -> None:
    if q.start is not None:
        where.append(f"{column} >= %(start)s")
        params["start"] = q.start
    if q.end is not None:
        where.append(f"{column} <= %(end)s")
        params["end"] = q.end


# ---- ideas ----------------------------------------------------------------------------------

IDEA_SELECT = """i.id, i.number, i.title, i.summary, i.status, i.source, i.category, i.idea_type,
    i.url, i.destination, i.destination_issue_id, i.destination_issue_url, i.vote_count,
    i.public_vote_count, i.request_count, i.signal_count, i.rice_reach, i.rice_impact,
    i.rice_confidence, i.rice_effort, i.rice_score, i.rice_priority, i.rice_source,
    i.validation_score, i.validation_evidence_count, i.decision_reason, i.decided_at,
    i.closure_category, i.decision_owner_name, i.decision_deadline, i.total_customer_arr,
    i.last_activity_at, i.last_signal_at, i.unique_source_count, i.average_sentiment,
    i.work_item_status, i.shipped_at, i.product_id, i.actionable, i.created_at,
    i.roadmap_stage_id"""
TAGS_SELECT = """ARRAY(SELECT t.name FROM ideas.idea_tags it JOIN ideas.tags t ON t.id = it.tag_id
    WHERE it.workspace_id = i.workspace_id AND it.idea_id = i.id ORDER BY t.name)"""
CUSTOMERS_SELECT = """(SELECT count(*) FROM customers.idea_links l
    WHERE l.workspace_id = i.workspace_id AND l.idea_id = i.id)"""

IDEA_COLUMNS = (
    "id", "ideaServiceId", "title", "summary", "status", "source", "category", "ideaType", "url",
    "destination", "destinationIssueId", "destinationIssueUrl", "voteCount", "publicVoteCount",
    "requestCount", "signalCount", "riceReach", "riceImpact", "riceConfidence", "riceEffort",
    "riceScore", "ricePriority", "riceSource", "validationScore", "validationEvidenceCount",
    "decisionReason", "decidedAt", "closureCategory", "decisionOwnerName", "decisionDeadline",
    "totalCustomerARR", "lastActivityAt", "lastSignalAt", "uniqueSourceCount",
    "averageSentiment", "workItemStatus", "shippedAt", "productId", "actionable", "createdAt",
    "roadmapStageId",
)


def idea_record(r: tuple[Any, ...], tags: bool, customers: bool) -> Record:
    rec: Record = {
        "id": r[0], "ideaServiceId": f"IDEA-{r[1]}", "title": r[2], "summary": r[3],
        "status": r[4], "source": r[5], "category": r[6], "ideaType": r[7], "url": r[8],
        "destination": r[9], "destinationIssueId": r[10], "destinationIssueUrl": r[11],
        "voteCount": r[12], "publicVoteCount": r[13], "requestCount": r[14], "signalCount": r[15],
        "rice": {"reach": r[16], "impact": r[17], "confidence": r[18], "effort": r[19],
                 "score": r[20], "priority": r[21], "source": r[22]},
        "validation": {"score": r[23], "evidenceCount": r[24]},
        "decisionReason": r[25], "decidedAt": r[26], "closureCategory": r[27],
        "decisionOwnerName": r[28], "decisionDeadline": r[29], "totalCustomerARR": _num(r[30]),
        "lastActivityAt": r[31], "lastSignalAt": r[32], "uniqueSourceCount": r[33],
        "averageSentiment": r[34], "workItemStatus": r[35], "shippedAt": r[36],
        "productId": r[37], "actionable": r[38], "createdAt": r[39], "roadmapStageId": r[40],
    }
    extra = 41
    if tags:
        rec["tags"] = list(r[extra])
        extra += 1
    if customers:
        rec["customerCount"] = r[extra]
    return rec


def idea_cells(columns: Sequence[str]) -> Callable[[Record], list[Any]]:
    def cells(rec: Record) -> list[Any]:
        rice, val = rec["rice"], rec["validation"]
        flat = dict(rec, riceReach=rice["reach"], riceImpact=rice["impact"],
                    riceConfidence=rice["confidence"], riceEffort=rice["effort"],
                    riceScore=rice["score"], ricePriority=rice["priority"],
                    riceSource=rice["source"], validationScore=val["score"],
                    validationEvidenceCount=val["evidenceCount"])
        if "tags" in rec:
            flat["tags"] = ";".join(rec["tags"])
        return [flat.get(c) for c in columns]

    return cells


def ideas(ws: uuid.UUID, q: IdeasExportQuery) -> Export:
    where = ["i.workspace_id = %(ws)s"]
    params: dict[str, Any] = {"ws": ws, "limit": q.limit}
    if q.status is not None:
        where.append("i.status = %(status)s")
        params["status"] = q.status
    else:
        where.append("i.status <> 'deleted'")
    for name in ("category", "source"):
        if getattr(q, name) is not None:
            where.append(f"i.{name} = %({name})s")
            params[name] = getattr(q, name)
    _range("i.created_at", q, where, params)
    select = IDEA_SELECT + (", " + TAGS_SELECT if q.include_tags else "") + \
        (", " + CUSTOMERS_SELECT if q.include_customer_count else "")
    columns = IDEA_COLUMNS + (("tags",) if q.include_tags else ()) + \
        (("customerCount",) if q.include_customer_count else ())
    sql = (f"SELECT {select} FROM ideas.ideas i WHERE {' AND '.join(where)}"
           " ORDER BY i.created_at DESC, i.id DESC LIMIT %(limit)s")
    tags, customers = q.include_tags, q.include_customer_count
    return Export("ideas", sql, params, columns,
                  lambda r: idea_record(r, tags, customers), idea_cells(columns))


# ---- customers ------------------------------------------------------------------------------

CUSTOMER_COLUMNS = ("id", "name", "email", "domain", "arr", "mrr", "plan", "source",
                    "externalId", "crmCompanyId", "ideaCount", "metadata", "createdAt",
                    "updatedAt")


def customer_record(r: tuple[Any, ...]) -> Record:
    return {"id": r[0], "name": r[1], "email": r[2], "domain": r[3], "arr": _num(r[4]),
            "mrr": _num(r[5]), "plan": r[6], "source": r[7], "externalId": r[8],
            "crmCompanyId": r[9], "ideaCount": r[10],
            "metadata": None if r[11] is None else orjson.Fragment(r[11]),
            "createdAt": r[12], "updatedAt": r[13]}


def customer_cells(rec: Record) -> list[Any]:
    meta = rec["metadata"]
    flat = dict(rec, metadata=None if meta is None else orjson.dumps(meta).decode())
    return [flat[c] for c in CUSTOMER_COLUMNS]


def customers(ws: uuid.UUID, q: ExportQuery) -> Export:
    sql = """SELECT c.id, c.name, c.email, c.domain, c.arr, c.mrr, c.plan, c.source,
                    c.external_id, c.crm_company_id,
                    (SELECT count(*) FROM customers.idea_links l
                      WHERE l.workspace_id = c.workspace_id AND l.customer_id = c.id),
                    c.metadata::text, c.created_at, c.updated_at
               FROM customers.customers c WHERE c.workspace_id = %(ws)s
              ORDER BY c.created_at DESC, c.id DESC LIMIT %(limit)s"""
    return Export("customers", sql, {"ws": ws, "limit": q.limit}, CUSTOMER_COLUMNS,
                  customer_record, customer_cells)


# ---- decisions ------------------------------------------------------------------------------

DECISION_COLUMNS = ("id", "ideaServiceId", "title", "status", "decidedAt", "closureCategory",
                    "decisionReason", "decisionOwnerName")


def decision_record(r: tuple[Any, ...]) -> Record:
    return {"id": r[0], "ideaServiceId": f"IDEA-{r[1]}", "title": r[2], "status": r[3],
            "decidedAt": r[4], "closureCategory": r[5], "decisionReason": r[6],
            "decisionOwnerName": r[7]}


def decisions(ws: uuid.UUID, q: DatedExportQuery) -> Export:
    where = ["i.workspace_id = %(ws)s", "i.status <> 'deleted'", "i.decided_at IS NOT NULL"]
    params: dict[str, Any] = {"ws": ws, "limit": q.limit}
    _range("i.decided_at", q, where, params)
    sql = (f"""SELECT i.id, i.number, i.title, i.status, i.decided_at, i.closure_category,
                      i.decision_reason, i.decision_owner_name
                 FROM ideas.ideas i WHERE {' AND '.join(where)}
                ORDER BY i.decided_at DESC, i.id DESC LIMIT %(limit)s""")
    return Export("decisions", sql, params, DECISION_COLUMNS, decision_record,
                  _flat(DECISION_COLUMNS))


# ---- signals --------------------------------------------------------------------------------

SIGNAL_COLUMNS = ("id", "platform", "userId", "userName", "userEmail", "content", "similarity",
                  "sentiment", "sentimentScore", "autoLinkedCustomerId", "detectedAt",
                  "createdAt", "ideaId", "ideaServiceId", "ideaTitle")


def signal_record(r: tuple[Any, ...]) -> Record:
    return {"id": r[0], "platform": r[1], "userId": r[2], "userName": r[3], "userEmail": r[4],
            "content": r[5], "similarity": r[6], "sentiment": r[7], "sentimentScore": r[8],
            "autoLinkedCustomerId": None if r[9] is None else str(r[9]), "detectedAt": r[10],
            "createdAt": r[11], "ideaId": r[12], "ideaServiceId": f"IDEA-{r[13]}",
            "ideaTitle": r[14]}


def signals(ws: uuid.UUID, q: SignalsExportQuery) -> Export:
    where = ["s.workspace_id = %(ws)s", "i.status <> 'deleted'"]
    params: dict[str, Any] = {"ws": ws, "limit": q.limit}
    if q.platform is not None:
        where.append("s.platform = %(platform)s")
        params["platform"] = q.platform
    _range("s.detected_at", q, where, params)
    sql = (f"""SELECT s.id, s.platform, s.user_id, s.user_name, s.user_email, s.content,
                      s.similarity, s.sentiment, s.sentiment_score, s.auto_linked_customer_id,
                      s.detected_at, s.created_at, i.id, i.number, i.title
                 FROM ideas.signals s
                 JOIN ideas.ideas i ON i.id = s.idea_id AND i.workspace_id = s.workspace_id
                WHERE {' AND '.join(where)}
                ORDER BY s.detected_at DESC, s.id DESC LIMIT %(limit)s""")
    return Export("signals", sql, params, SIGNAL_COLUMNS, signal_record, _flat(SIGNAL_COLUMNS))


def check_range(q: DatedExportQuery) -> None:
    """`start` after `end` names nothing: a validation error, as for the reports."""
    if q.start is not None and q.end is not None and q.start > q.end:
        raise ValidationFailed("start must not be after end", field="start")
