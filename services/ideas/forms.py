"""The Idea and IdeaDetail forms as SQL, generated from the public models and one table.

The public models (libs/api/ideas/schemas.py: `Idea`, `IdeaDetail` and the models they nest)
give the members, their order and their kinds; `IDEA` and `DETAIL` below give each member its
column of `ideas.ideas i` or its SQL expression. From both, `sql()` writes what migrations 0400,
0500 and 0700 wrote by hand: a composite type per form (its attributes in the model's order, so
row_to_json writes the keys in the document's order) and the functions `ideas.idea_json(i)` and
`ideas.idea_detail_json(i, tags)` that every read, write, event and export calls
(services/ideas/render.py; the analytics exports). The ideas schema installs it as its generated
migration (services/ideas/schema.py, libs/common/migrations.py): applied after the schema's
files, again whenever the text changes.

The kinds: a date-time member goes through `public.ims_json_ts` (libs/common/render.py); a
nested model becomes its own form, a JSON object; money says so in the table (`trim_scale`).
A member's SQL type follows from its Python type (`Col(..., sql_type=...)` where the column
differs, as an integer count the model declares a number). A field of the model without an entry
here, or an entry without a field, stops `sql()` (tests/ideas/test_forms.py).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Union
from uuid import UUID

from pydantic import BaseModel
from typing_extensions import TypeAliasType

from libs.api.ideas.schemas import Idea, IdeaDetail


@dataclass(frozen=True)
class Col:
    """A column of `ideas.ideas i` (or, with `raw=True`, an SQL expression as it stands)."""

    sql: str
    sql_type: str | None = None  # the attribute's type, when not the one of the field's type
    raw: bool = False


def expr(sql: str, sql_type: str) -> Col:
    """An SQL expression over `ideas.ideas i`, its value written as it is."""
    return Col(sql, sql_type, raw=True)


@dataclass(frozen=True)
class Nested:
    """A member that is a model of its own: its form `type_name` from `members`; `when`, the
    condition under which it is an object (null otherwise)."""

    type_name: str
    members: dict[str, Col | str]
    when: str | None = None


Member = Col | Nested | str  # a bare string is a column

# Idea: each member's column or expression (the order is the model's).
IDEA: dict[str, Member] = {
    "id": "id",
    "ideaServiceId": expr("'IDEA-' || i.number", "text"),
    "title": "title",
    "summary": "summary",
    "status": "status",
    "source": "source",
    "category": "category",
    "ideaType": "idea_type",
    "url": "url",
    "destination": "destination",
    "destinationIssueId": "destination_issue_id",
    "destinationIssueUrl": "destination_issue_url",
    "voteCount": "vote_count",
    "publicVoteCount": "public_vote_count",
    "requestCount": "request_count",
    "signalCount": "signal_count",
    "rice": Nested(
        "rice_form",
        {
            "reach": "rice_reach",
            "impact": "rice_impact",
            "confidence": "rice_confidence",
            "effort": "rice_effort",
            "score": "rice_score",
            "priority": "rice_priority",
            "source": "rice_source",
        },
    ),
    "validation": Nested(
        "validation_form",
        {"score": "validation_score", "evidenceCount": Col("validation_evidence_count", "integer")},
    ),
    "decisionReason": "decision_reason",
    "decidedAt": "decided_at",
    "closureCategory": "closure_category",
    "decisionOwnerName": "decision_owner_name",
    "decisionDeadline": "decision_deadline",
    "totalCustomerARR": expr("trim_scale(i.total_customer_arr)", "numeric"),  # money
    "lastActivityAt": "last_activity_at",
    "lastSignalAt": "last_signal_at",
    "uniqueSourceCount": "unique_source_count",
    "averageSentiment": "average_sentiment",
    "workItemStatus": "work_item_status",
    "shippedAt": "shipped_at",
    "productId": "product_id",
    "actionable": "actionable",
    "createdAt": "created_at",
    "roadmapStageId": "roadmap_stage_id",
    "mergedIntoId": "merged_into_id",
    "commentCount": "comment_count",
}

# IdeaDetail's own members, after the Idea's. `tags` is the function's argument: the caller's
# subquery (services/ideas/render.py), since a subquery inside the function would keep
# PostgreSQL from inlining it.
DETAIL: dict[str, Member] = {
    "tags": expr("tags", "json"),
    "externalWorkItem": Nested(
        "work_item_form",
        {
            "system": "destination",
            "issueId": "destination_issue_id",
            "issueUrl": "destination_issue_url",
            "status": "work_item_status",
        },
        when="i.destination IS NOT NULL AND i.destination_issue_id IS NOT NULL",
    ),
    "sourceUserId": "author_id",
    "sourceUserName": "author_name",
    "rawInput": "raw_input",
}

_SQL_TYPES: dict[Any, str] = {
    UUID: "uuid",
    str: "text",
    int: "integer",
    float: "float8",
    bool: "boolean",
    datetime: "text",  # the JSON text of public.ims_json_ts
}


class FormError(ValueError):
    """The model and the table disagree."""


def _bare(tp: Any) -> Any:
    """`tp` without `| None`, its type alias and its `Annotated`."""
    while True:
        if isinstance(tp, TypeAliasType):
            tp = tp.__value__
        elif typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif typing.get_origin(tp) in (Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                raise FormError(f"{tp}: a union of more than one type")
            tp = args[0]
        else:
            return tp


def _sql_type(name: str, tp: Any) -> str:
    if typing.get_origin(tp) is Literal:
        kinds = {type(v) for v in typing.get_args(tp)}
        if kinds == {str}:
            return "text"
    if typing.get_origin(tp) is list or (isinstance(tp, type) and issubclass(tp, BaseModel)):
        return "json"
    if tp in _SQL_TYPES:
        return _SQL_TYPES[tp]
    raise FormError(f"{name}: no SQL type for {tp}")


@dataclass
class _Form:
    """One composite type and the ROW(...) that fills it."""

    type_name: str
    attributes: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    nested: list[_Form] = field(default_factory=list)

    def create_type(self) -> str:
        return f"CREATE TYPE ideas.{self.type_name} AS ({', '.join(self.attributes)});"

    def row(self) -> str:
        return f"ROW({', '.join(self.values)})::ideas.{self.type_name}"


def _form(
    type_name: str, fields: Mapping[str, Any], table: Mapping[str, Member], where: str
) -> _Form:
    missing = [n for n in fields if n not in table]
    unknown = [n for n in table if n not in fields]
    if missing or unknown:
        raise FormError(
            f"{where}: fields without a column {missing}, columns without a field {unknown}"
        )
    form = _Form(type_name)
    for name, info in fields.items():
        tp = _bare(info.annotation)
        member = table[name]
        if isinstance(member, Nested):
            if not (isinstance(tp, type) and issubclass(tp, BaseModel)):
                raise FormError(f"{where}.{name}: a nested form for a field that is no model")
            inner = _form(member.type_name, tp.model_fields, member.members, f"{where}.{name}")
            form.nested += [*inner.nested, inner]
            value = f"row_to_json({inner.row()})"
            if member.when is not None:
                value = f"CASE WHEN {member.when} THEN {value} END"
            sql_type = "json"
        else:
            col = Col(member) if isinstance(member, str) else member
            value = col.sql if col.raw else f"i.{col.sql}"
            if tp is datetime and not col.raw:
                value = f"public.ims_json_ts({value})"
            sql_type = col.sql_type or _sql_type(f"{where}.{name}", tp)
        form.attributes.append(f'"{name}" {sql_type}')
        form.values.append(value)
    return form


def idea_form() -> _Form:
    return _form("idea_form", dict(Idea.model_fields), IDEA, "Idea")


def detail_form() -> _Form:
    own = {n: f for n, f in IdeaDetail.model_fields.items() if n not in Idea.model_fields}
    if list(IdeaDetail.model_fields)[: len(Idea.model_fields)] != list(Idea.model_fields):
        raise FormError("IdeaDetail: the Idea's members must come first")
    return _form("idea_detail_form", own, DETAIL, "IdeaDetail")


def sql() -> str:
    """The SQL that (re)creates the forms' types and functions."""
    idea, detail = idea_form(), detail_form()
    forms = [*idea.nested, idea, *detail.nested, detail]
    drops = [
        "DROP FUNCTION IF EXISTS ideas.idea_detail_json(ideas.ideas, json);",
        "DROP FUNCTION IF EXISTS ideas.idea_json(ideas.ideas);",
        *(f"DROP TYPE IF EXISTS ideas.{f.type_name};" for f in forms),
    ]
    return "\n".join(
        [
            "-- Generated by services/ideas/forms.py from libs/api/ideas/schemas.py: do not edit.",
            *drops,
            *(f.create_type() for f in forms),
            "CREATE FUNCTION ideas.idea_json(i ideas.ideas) RETURNS json",
            "    LANGUAGE sql STABLE PARALLEL SAFE",
            f"    AS $$ SELECT row_to_json({idea.row()}) $$;",
            # IdeaDetail: the Idea's members, then the detail's, in one JSON object.
            "CREATE FUNCTION ideas.idea_detail_json(i ideas.ideas, tags json) RETURNS json",
            "    LANGUAGE sql STABLE PARALLEL SAFE",
            "    AS $$ SELECT (left(ideas.idea_json(i)::text, -1) || ',' ||"
            f" substr(row_to_json({detail.row()})::text, 2))::json $$;",
            "",
        ]
    )
