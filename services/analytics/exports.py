"""The four exports: their queries and their records (docs/analytics.md).

Each export is a query (run through a server-side cursor by `stream`) whose rows are
`(record, extra)`: `record` the JSON text of a record, built in SQL in the one form of
libs/common/render.py, and `extra` the JSON text of members appended to it, or NULL. Ideas and
customers are the Idea and CustomerFull of their owners' functions (`ideas.idea_json`,
`customers.customer_json`), signals the owner's Signal (`ideas.signal_json`) plus their idea's
context: the same form as everywhere else. A JSON export is those texts joined; a CSV line holds
the same record's fields, flat (`cells`).

Ideas come newest first; decisions by `decidedAt` and signals by `detectedAt`, newest first;
customers newest first. Without `status`, deleted ideas (and the signals of deleted ideas) are
left out.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from libs.api.analytics.schemas import (
    DatedExportQuery,
    ExportQuery,
    IdeasExportQuery,
    SignalsExportQuery,
)
from libs.api.base import flat_members
from libs.api.ideas.schemas import Idea
from libs.common.errors import ValidationFailed
from libs.common.render import dumps

Record = dict[str, Any]


@dataclass(frozen=True)
class Export:
    kind: str
    sql: str
    params: dict[str, Any]
    columns: Sequence[str]
    cells: Callable[[Record], list[Any]]


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

TAG_NAMES = """(SELECT array_to_json(ARRAY(SELECT t.name FROM ideas.idea_tags it
    JOIN ideas.tags t ON t.workspace_id = it.workspace_id AND t.id = it.tag_id
    WHERE it.workspace_id = i.workspace_id AND it.idea_id = i.id ORDER BY t.name)))"""
CUSTOMER_COUNT = """(SELECT count(*) FROM customers.idea_links l
    WHERE l.workspace_id = i.workspace_id AND l.idea_id = i.id)"""

# The Idea's members, nested ones flat (`rice.reach` is `riceReach`): the model's, in its order.
IDEA_PATHS = flat_members(Idea)
IDEA_COLUMNS = tuple(IDEA_PATHS)


def _at(rec: Record, path: tuple[str, ...]) -> Any:
    value: Any = rec
    for key in path:
        value = None if value is None else value[key]
    return value


def idea_cells(columns: Sequence[str]) -> Callable[[Record], list[Any]]:
    def cells(rec: Record) -> list[Any]:
        flat = dict(rec)
        flat.update((c, _at(rec, path)) for c, path in IDEA_PATHS.items() if len(path) > 1)
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
    # The members the export adds to each Idea, after the Idea's own.
    extra = [f'{TAG_NAMES} AS "tags"'] if q.include_tags else []
    extra += [f'{CUSTOMER_COUNT} AS "customerCount"'] if q.include_customer_count else []
    added = f"(SELECT row_to_json(x) FROM (SELECT {', '.join(extra)}) x)::text" if extra else "NULL"
    columns = (
        IDEA_COLUMNS
        + (("tags",) if q.include_tags else ())
        + (("customerCount",) if q.include_customer_count else ())
    )
    sql = (
        f"SELECT ideas.idea_json(i)::text, {added} FROM ideas.ideas i"
        f" WHERE {' AND '.join(where)} ORDER BY i.created_at DESC, i.id DESC LIMIT %(limit)s"
    )
    return Export("ideas", sql, params, columns, idea_cells(columns))


# ---- customers ------------------------------------------------------------------------------

CUSTOMER_COLUMNS = (
    "id",
    "name",
    "email",
    "domain",
    "arr",
    "mrr",
    "plan",
    "source",
    "externalId",
    "crmCompanyId",
    "ideaCount",
    "metadata",
    "createdAt",
    "updatedAt",
)


def customer_cells(rec: Record) -> list[Any]:
    meta = rec["metadata"]
    flat = dict(rec, metadata=None if meta is None else dumps(meta).decode())
    return [flat[c] for c in CUSTOMER_COLUMNS]


def customers(ws: uuid.UUID, q: ExportQuery) -> Export:
    sql = """SELECT customers.customer_json(c, (SELECT count(*) FROM customers.idea_links l
                      WHERE l.workspace_id = c.workspace_id AND l.customer_id = c.id))::text,
                    NULL
               FROM customers.customers c WHERE c.workspace_id = %(ws)s
              ORDER BY c.created_at DESC, c.id DESC LIMIT %(limit)s"""
    return Export("customers", sql, {"ws": ws, "limit": q.limit}, CUSTOMER_COLUMNS, customer_cells)


# ---- decisions ------------------------------------------------------------------------------

DECISION_COLUMNS = (
    "id",
    "ideaServiceId",
    "title",
    "status",
    "decidedAt",
    "closureCategory",
    "decisionReason",
    "decisionOwnerName",
)


def decisions(ws: uuid.UUID, q: DatedExportQuery) -> Export:
    where = ["i.workspace_id = %(ws)s", "i.status <> 'deleted'", "i.decided_at IS NOT NULL"]
    params: dict[str, Any] = {"ws": ws, "limit": q.limit}
    _range("i.decided_at", q, where, params)
    sql = f"""SELECT row_to_json(x)::text, NULL FROM (
                 SELECT i.id, 'IDEA-' || i.number AS "ideaServiceId", i.title, i.status,
                        ims_json_ts(i.decided_at) AS "decidedAt",
                        i.closure_category AS "closureCategory",
                        i.decision_reason AS "decisionReason",
                        i.decision_owner_name AS "decisionOwnerName"
                   FROM ideas.ideas i WHERE {" AND ".join(where)}
                  ORDER BY i.decided_at DESC, i.id DESC LIMIT %(limit)s) x"""
    return Export("decisions", sql, params, DECISION_COLUMNS, _flat(DECISION_COLUMNS))


# ---- signals --------------------------------------------------------------------------------

SIGNAL_COLUMNS = (
    "id",
    "platform",
    "userId",
    "userName",
    "userEmail",
    "content",
    "similarity",
    "sentiment",
    "sentimentScore",
    "autoLinkedCustomerId",
    "detectedAt",
    "createdAt",
    "ideaId",
    "ideaServiceId",
    "ideaTitle",
)


def signals(ws: uuid.UUID, q: SignalsExportQuery) -> Export:
    where = ["s.workspace_id = %(ws)s", "i.status <> 'deleted'"]
    params: dict[str, Any] = {"ws": ws, "limit": q.limit}
    if q.platform is not None:
        where.append("s.platform = %(platform)s")
        params["platform"] = q.platform
    _range("s.detected_at", q, where, params)
    sql = f"""SELECT ideas.signal_json(s)::text,
                      (SELECT row_to_json(x) FROM (SELECT i.id AS "ideaId",
                              'IDEA-' || i.number AS "ideaServiceId", i.title AS "ideaTitle") x
                      )::text
                 FROM ideas.signals s
                 JOIN ideas.ideas i ON i.id = s.idea_id AND i.workspace_id = s.workspace_id
                WHERE {" AND ".join(where)}
                ORDER BY s.detected_at DESC, s.id DESC LIMIT %(limit)s"""
    return Export("signals", sql, params, SIGNAL_COLUMNS, _flat(SIGNAL_COLUMNS))


def check_range(q: DatedExportQuery) -> None:
    """`start` after `end` names nothing: a validation error, as for the reports."""
    if q.start is not None and q.end is not None and q.start > q.end:
        raise ValidationFailed("start must not be after end", field="start")
