"""Idea storage: create, read, update, status changes with their decisions, delete, votes.

Every function takes the cursor of the caller's transaction; events are written by the caller
(`events.py`) in the same transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
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
LOCK_COLS = (
    "id, status, closure_category, decision_reason, rice_reach, rice_impact,"
    " rice_confidence, rice_effort, roadmap_stage_id"
)


@dataclass
class NewIdea:
    title: str
    summary: str | None = None
    source: str = "api"
    category: str | None = None
    url: str | None = None
    url_key: str | None = None
    author_name: str | None = None
    author_id: str | None = None
    tag_ids: list[uuid.UUID] = field(default_factory=list)  # checked by the caller (tags.check)
    idea_type: str | None = None
    product_id: uuid.UUID | None = None  # checked by the caller (products.check)
    decision_owner_id: uuid.UUID | None = None  # the caller fills `owner` (members.owner_columns)
    decision_deadline: datetime | None = None
    actionable: bool = True
    validation_score: float | None = None
    owner: dict[str, Any] = field(default_factory=dict)
    # An end user who asks for the idea and votes +1 on it (the caller holds the user:
    # end_users.hold_users); `author_id` and `author_name` are then the user's.
    vote_user: uuid.UUID | None = None


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


INSERT_SQL = f"""INSERT INTO ideas.ideas AS i (workspace_id, id, number, title, summary, status,
  source, category, url, url_key, title_key, author_name, author_id, raw_input, idea_type,
  product_id, decision_owner_id, decision_owner_name, decision_owner_email, decision_deadline,
  actionable, validation_score, vote_count)
 VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
  %s)
 RETURNING {IDEA_JSON}::text"""


async def create_ideas(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, status: str, items: list[NewIdea]
) -> list[str]:
    """Insert ideas with consecutive numbers; return each one's Idea JSON text, in order."""
    first = await next_numbers(cur, workspace_id, len(items))
    out = []
    for n, item in enumerate(items):
        idea_id = uuid.uuid4()
        await cur.execute(
            INSERT_SQL,
            (
                workspace_id,
                idea_id,
                first + n,
                item.title,
                item.summary,
                status,
                item.source,
                item.category,
                item.url,
                item.url_key,
                fold_title(item.title),
                item.author_name,
                item.author_id,
                item.summary or item.title,
                item.idea_type,
                item.product_id,
                item.owner.get("decision_owner_id"),
                item.owner.get("decision_owner_name"),
                item.owner.get("decision_owner_email"),
                item.decision_deadline,
                item.actionable,
                item.validation_score,
                0 if item.vote_user is None else 1,
            ),
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
    return datetime.now(timezone.utc)
