"""Idea storage: the rows alone. Create, read, lock, update, status changes with their
decisions.

Every function takes the cursor of the caller's transaction and writes no event: `ops.py` is
the layer above, which changes an idea through these functions and adds its outbox rows
(`ops.emit`) in the same transaction. The handlers of ideas call `ops`; the modules with
changes of their own (merge, evidence) call `store` and emit with `ops.emit` themselves.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiopg

from libs.common import db
from libs.common.errors import NotFound

from . import prepared, tags
from .render import DETAIL_JSON, IDEA_JSON
from .state import next_numbers

DECIDED = {
    "shipped": "shipped",
    "rejected": "rejected_scope",
    "duplicate": "duplicate",
    "archived": "archived",
}
RICE_FIELDS = {
    "riceReach": "rice_reach",
    "riceImpact": "rice_impact",
    "riceConfidence": "rice_confidence",
    "riceEffort": "rice_effort",
}
# The request bodies' fields that are columns as they stand, one mapping for create and update
# (CreateIdeaRequest, UpdateIdeaRequest, the automation's create). The other fields of those
# bodies are HANDLED by name: tags, the decision owner, status with its closure category, and
# the RICE inputs (the score follows them: ops.rice_sets). tests/ideas/test_forms.py holds every
# field of the bodies to one of the two.
WRITES = {
    "title": "title",
    "summary": "summary",
    "source": "source",
    "category": "category",
    "url": "url",
    "ideaType": "idea_type",
    "productId": "product_id",
    "decisionDeadline": "decision_deadline",
    "decisionReason": "decision_reason",
    "actionable": "actionable",
    "validationScore": "validation_score",
}
HANDLED = frozenset(
    {"tagIds", "decisionOwnerId", "userId", "status", "closureCategory", *RICE_FIELDS}
)


def columns(given: dict[str, Any]) -> dict[str, Any]:
    """The column values of a body's fields (`given`: its model_dump, or the fields set)."""
    return {WRITES[name]: value for name, value in given.items() if name in WRITES}


LOCK_COLS = (
    "id, status, closure_category, decision_reason, rice_reach, rice_impact,"
    " rice_confidence, rice_effort, roadmap_stage_id"
)


@dataclass
class NewIdea:
    """A new idea: `values`, the columns of its body's fields (`columns`; `title` at least; a
    column left out takes its default), and what is not a column of the body's as it stands."""

    values: dict[str, Any]
    url_key: str | None = None
    author_name: str | None = None
    author_id: str | None = None
    tag_ids: list[uuid.UUID] = field(default_factory=list)  # checked by the caller (tags.check)
    decision_owner_id: uuid.UUID | None = None  # the caller fills `owner` (members.owner_columns)
    owner: dict[str, Any] = field(default_factory=dict)
    # An end user who asks for the idea and votes +1 on it (the caller holds the user:
    # end_users.hold_users); `author_id` and `author_name` are then the user's.
    vote_user: uuid.UUID | None = None

    @property
    def product_id(self) -> uuid.UUID | None:  # checked by the caller (products.check)
        return self.values.get("product_id")


def fold_title(title: str) -> str:
    """Case and white space folded: the duplicate rule's title key."""
    return " ".join(title.split()).casefold()


def rice_score(reach: Any, impact: Any, confidence: Any, effort: Any) -> float | None:
    if None in (reach, impact, confidence, effort):
        return None
    return float(reach) * float(impact) * float(confidence) / float(effort)


def rice_priority(score: float | None) -> str | None:
    if score is None:
        return None
    if score >= 1000:
        return "critical"
    if score >= 100:
        return "high"
    return "medium" if score >= 10 else "low"


async def create_ideas(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, status: str, items: list[NewIdea]
) -> list[str]:
    """Insert ideas with consecutive numbers; return each one's Idea JSON text, in order."""
    first = await next_numbers(cur, workspace_id, len(items))
    out = []
    for n, item in enumerate(items):
        idea_id = uuid.uuid4()
        title, summary = item.values["title"], item.values.get("summary")
        row = {
            **item.values,
            "workspace_id": workspace_id,
            "id": idea_id,
            "number": first + n,
            "status": status,
            "url_key": item.url_key,
            "title_key": fold_title(title),
            "author_name": item.author_name,
            "author_id": item.author_id,
            "raw_input": summary or title,
            "vote_count": 0 if item.vote_user is None else 1,
            **item.owner,
        }
        await cur.execute(
            f"INSERT INTO ideas.ideas AS i ({', '.join(row)})"
            f" VALUES ({', '.join(['%s'] * len(row))}) RETURNING {IDEA_JSON}::text",
            tuple(row.values()),
        )
        out.append((await cur.fetchone())[0])
        if item.vote_user is not None:  # the asking user's +1, counted in the row above
            await cur.execute(
                "INSERT INTO ideas.votes (workspace_id, idea_id, voter, value)"
                " VALUES (%s, %s, %s, 1)",
                (workspace_id, idea_id, f"user:{item.vote_user}"),
            )
        if item.tag_ids:
            await tags.put_on(cur, workspace_id, idea_id, item.tag_ids)
    return out


async def get_idea(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, detail: bool = False
) -> str:
    sql = DETAIL_JSON if detail else IDEA_JSON
    await prepared.execute(
        cur,
        f"SELECT ({sql})::text FROM ideas.ideas i WHERE i.workspace_id = %s AND i.id = %s",
        (workspace_id, idea_id),
    )
    row = await cur.fetchone()
    if row is None:
        raise NotFound("Idea not found")
    return str(row[0])


async def idea_id_by_number(cur: aiopg.Cursor, workspace_id: uuid.UUID, number: int) -> uuid.UUID:
    """The id of the workspace's idea `IDEA-<number>`, deleted ones included; else 404."""
    idea_id = await db.fetchval(
        cur,
        "SELECT id FROM ideas.ideas WHERE workspace_id = %s AND number = %s",
        (workspace_id, number),
    )
    if idea_id is None:
        raise NotFound("Idea not found")
    return idea_id


async def lookup_ideas(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, ids: list[uuid.UUID]
) -> list[str]:
    await cur.execute(
        f"SELECT {IDEA_JSON}::text FROM unnest(%s::uuid[]) WITH ORDINALITY AS u(id, n)"
        " JOIN ideas.ideas i ON i.workspace_id = %s AND i.id = u.id ORDER BY u.n",
        (ids, workspace_id),
    )
    return [r[0] for r in await cur.fetchall()]


async def lock_ideas(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, ids: list[uuid.UUID]
) -> dict[uuid.UUID, db.Row]:
    """Lock the ideas (in id order, so concurrent batches cannot deadlock); 404 if one is absent."""
    rows = await db.fetchall(
        cur,
        f"SELECT {LOCK_COLS} FROM ideas.ideas WHERE workspace_id = %s AND id = ANY(%s)"
        " ORDER BY id FOR UPDATE",
        (workspace_id, ids),
    )
    found = {r["id"]: r for r in rows}
    if len(found) != len(set(ids)):
        raise NotFound("Idea not found")
    return found


def status_change(row: db.Row, new_status: str, now: datetime) -> dict[str, Any]:
    """Column values a change to `new_status` sets (docs/ideas.md: decided statuses, closure)."""
    sets: dict[str, Any] = {"status": new_status}
    if new_status in DECIDED:
        sets["decided_at"] = now
        sets["closure_category"] = row["closure_category"] or DECIDED[new_status]
    if new_status == "shipped":
        sets["shipped_at"] = now
    return sets


async def add_decision(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    previous: str,
    new: str,
    closure: str | None,
    reason: str | None,
    actor: str,
) -> None:
    await cur.execute(
        "INSERT INTO ideas.decisions (workspace_id, id, idea_id, event_type, closure_category,"
        " reason, previous_status, new_status, actor_name, source)"
        " VALUES (%s, %s, %s, 'status_changed', %s, %s, %s, %s, %s, 'api')",
        (workspace_id, uuid.uuid4(), idea_id, closure, reason, previous, new, actor),
    )


async def write_idea(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, sets: dict[str, Any]
) -> tuple[str, str]:
    """Apply column values (names are ours, never the client's); return (Idea, IdeaDetail)."""
    now = now_utc()
    sets = {**sets, "last_activity_at": now, "updated_at": now}
    assign = ", ".join(f"{col} = %s" for col in sets)
    await cur.execute(
        f"UPDATE ideas.ideas i SET {assign} WHERE workspace_id = %s AND id = %s"
        f" RETURNING {IDEA_JSON}::text, ({DETAIL_JSON})::text",
        (*sets.values(), workspace_id, idea_id),
    )
    row = await cur.fetchone()
    return row[0], row[1]


def now_utc() -> datetime:
    return datetime.now(UTC)
