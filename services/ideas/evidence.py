"""The writes of an idea's evidence, support tickets, meetings and participants (docs/ideas.md,
"Evidence, tickets, meetings and participants").

Each function runs in the caller's transaction after the idea's row is locked (`lock`), so the
writes of one idea run one after the other and the idea's own columns they change (the evidence
count, the decision owner) are written with them. Rows are answered in the form the GET lists
give (subresources.PLAIN).

Each kind of row is written by one function that takes any number of rows in one statement
(`insert_evidence`, `upsert_tickets`, `insert_meetings`, `insert_participants`, `make_owners`,
whose rows go over as one JSON array, `jsonb_to_recordset`): the routes pass one row, the seed
(`ideasctl seed`) a chunk's.

Participants name a member (`member_id`), once per idea (unique index `participants_member`);
their name and e-mail are the member's. The idea's `owner` participant and its decision owner
(`decisionOwnerId`) are one fact: `make_owner` and `clear_owner` keep them together, whichever
side the change comes from.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiopg
import orjson
import psycopg2

from libs.common import db
from libs.common.errors import Conflict, NotFound

from . import members, store
from .subresources import PLAIN

ALREADY = "The member already takes part in this idea's decision"
DECIDED = ("approved", "rejected")


async def _one(
    cur: aiopg.Cursor, name: str, workspace_id: uuid.UUID, row_id: uuid.UUID, what: str
) -> str:
    table, fields, _ = PLAIN[name]
    text = await db.fetchval(
        cur,
        f"SELECT row_to_json(x)::text FROM (SELECT {fields} FROM {table} s"
        " WHERE s.workspace_id = %s AND s.id = %s) x",
        (workspace_id, row_id),
    )
    if text is None:
        raise NotFound(f"{what} not found")
    return str(text)


async def _delete(
    cur: aiopg.Cursor,
    table: str,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    row_id: uuid.UUID,
    what: str,
) -> None:
    found = await db.fetchval(
        cur,
        f"DELETE FROM {table} WHERE workspace_id = %s AND idea_id = %s AND id = %s RETURNING 1",
        (workspace_id, idea_id, row_id),
    )
    if found is None:
        raise NotFound(f"{what} not found")


def _rows(items: Any) -> str:
    return orjson.dumps(items).decode()


async def evidence_counts(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_ids: Iterable[uuid.UUID]
) -> dict[uuid.UUID, int]:
    """The number of evidence items of each idea (0 for none): `validation.evidenceCount`."""
    ids = sorted(set(idea_ids))
    found = {
        r["idea_id"]: int(r["n"])
        for r in await db.fetchall(
            cur,
            "SELECT idea_id, count(*) AS n FROM ideas.evidence WHERE workspace_id = %s"
            " AND idea_id = ANY(%s) GROUP BY idea_id",
            (workspace_id, ids),
        )
    }
    return {i: found.get(i, 0) for i in ids}


async def evidence_count(cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID) -> int:
    return (await evidence_counts(cur, workspace_id, [idea_id]))[idea_id]


@dataclass(slots=True)
class NewEvidence:
    idea_id: uuid.UUID
    type: str
    title: str
    url: str | None = None
    content: str | None = None
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    created_at: datetime | None = None  # None: now


async def insert_evidence(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, items: Sequence[NewEvidence]
) -> None:
    """Insert the evidence items; the caller writes each idea's count (`evidence_counts`)."""
    if items:
        await cur.execute(
            "INSERT INTO ideas.evidence (workspace_id, id, idea_id, type, title, url, content,"
            " created_at) SELECT %s, x.id, x.idea_id, x.type, x.title, x.url, x.content,"
            " coalesce(x.created_at, now()) FROM jsonb_to_recordset(%s::jsonb) AS x(id uuid,"
            " idea_id uuid, type text, title text, url text, content text, created_at timestamptz)",
            (workspace_id, _rows(items)),
        )


async def add_evidence(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    kind: str,
    title: str,
    url: str | None = None,
    content: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """The new evidence's JSON and the idea's columns it changes (the evidence count)."""
    item = NewEvidence(idea_id, kind, title, url, content)
    await insert_evidence(cur, workspace_id, [item])
    count = await evidence_count(cur, workspace_id, idea_id)
    return await _one(cur, "evidence", workspace_id, item.id, "Evidence"), {
        "validation_evidence_count": count
    }


async def delete_evidence(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, evidence_id: uuid.UUID
) -> dict[str, Any]:
    await _delete(cur, "ideas.evidence", workspace_id, idea_id, evidence_id, "Evidence")
    return {"validation_evidence_count": await evidence_count(cur, workspace_id, idea_id)}


TICKET_COLUMNS = {
    "subject": "subject",
    "status": "status",
    "priority": "priority",
    "customerName": "customer_name",
    "customerEmail": "customer_email",
    "url": "url",
}


@dataclass(slots=True)
class NewTicket:
    idea_id: uuid.UUID
    platform: str
    external_id: str
    subject: str | None = None
    status: str | None = None
    priority: str | None = None
    customer_name: str | None = None
    customer_email: str | None = None
    url: str | None = None
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    created_at: datetime | None = None  # None: now


async def upsert_tickets(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    items: Sequence[NewTicket],
    fields: Iterable[str] = tuple(TICKET_COLUMNS),
) -> list[uuid.UUID]:
    """Insert each ticket, or update the given fields (by their API names) of the idea's ticket
    with its (platform, external id): one row however many arrive at once (the unique index
    `support_tickets_external` decides; one pair at most once in `items`). The tickets' ids."""
    if not items:
        return []
    cols = [TICKET_COLUMNS[name] for name in fields]  # names are the model's
    update = ", ".join(f"{c} = EXCLUDED.{c}" for c in cols) or "platform = EXCLUDED.platform"
    return [
        r["id"]
        for r in await db.fetchall(
            cur,
            "INSERT INTO ideas.support_tickets AS t (workspace_id, id, idea_id, platform,"
            " external_id, subject, status, priority, customer_name, customer_email, url,"
            " created_at) SELECT %s, x.id, x.idea_id, x.platform, x.external_id, x.subject,"
            " x.status, x.priority, x.customer_name, x.customer_email, x.url,"
            " coalesce(x.created_at, now()) FROM jsonb_to_recordset(%s::jsonb) AS x(id uuid,"
            " idea_id uuid, platform text, external_id text, subject text, status text,"
            " priority text, customer_name text, customer_email text, url text,"
            " created_at timestamptz) ON CONFLICT (workspace_id, idea_id, platform, external_id)"
            f" DO UPDATE SET {update} RETURNING t.id",
            (workspace_id, _rows(items)),
        )
    ]


async def upsert_ticket(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    platform: str,
    external_id: str,
    fields: dict[str, Any],
) -> str:
    """`upsert_tickets` of one ticket with these fields (by their API names); its JSON."""
    given = {TICKET_COLUMNS[name]: value for name, value in fields.items()}
    [row_id] = await upsert_tickets(
        cur, workspace_id, [NewTicket(idea_id, platform, external_id, **given)], fields
    )
    return await _one(cur, "support_tickets", workspace_id, row_id, "Support ticket")


async def delete_ticket(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, ticket_id: uuid.UUID
) -> None:
    await _delete(cur, "ideas.support_tickets", workspace_id, idea_id, ticket_id, "Support ticket")


@dataclass(slots=True)
class NewMeeting:
    idea_id: uuid.UUID
    title: str
    meeting_date: datetime
    participants: list[str]
    excerpt: str | None
    relation: str
    transcript_url: str | None
    id: uuid.UUID = field(default_factory=uuid.uuid4)


async def insert_meetings(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, items: Sequence[NewMeeting]
) -> None:
    if items:
        await cur.execute(
            "INSERT INTO ideas.meetings (workspace_id, id, idea_id, title, meeting_date,"
            " participants, excerpt, relation, transcript_url) SELECT %s, x.id, x.idea_id,"
            " x.title, x.meeting_date, x.participants, x.excerpt, x.relation, x.transcript_url"
            " FROM jsonb_to_recordset(%s::jsonb) AS x(id uuid, idea_id uuid, title text,"
            " meeting_date timestamptz, participants text[], excerpt text, relation text,"
            " transcript_url text)",
            (workspace_id, _rows(items)),
        )


async def add_meeting(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    title: str,
    meeting_date: datetime,
    participants: list[str],
    excerpt: str | None,
    relation: str,
    transcript_url: str | None,
) -> str:
    item = NewMeeting(
        idea_id, title, meeting_date, list(participants), excerpt, relation, transcript_url
    )
    await insert_meetings(cur, workspace_id, [item])
    return await _one(cur, "meetings", workspace_id, item.id, "Meeting")


async def delete_meeting(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, meeting_id: uuid.UUID
) -> None:
    await _delete(cur, "ideas.meetings", workspace_id, idea_id, meeting_id, "Meeting")


@dataclass(slots=True)
class NewParticipant:
    idea_id: uuid.UUID
    member_id: uuid.UUID
    role: str = "owner"
    decision: str = "pending"
    decided_at: datetime | None = None  # kept only with an `approved` or `rejected` decision
    id: uuid.UUID = field(default_factory=uuid.uuid4)


async def _hold_members(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, member_ids: Iterable[uuid.UUID]
) -> None:
    """Hold the members (their name and e-mail) until the transaction ends; 404 unless each is
    the workspace's."""
    ids = sorted(set(member_ids))
    found = await db.fetchall(
        cur,
        "SELECT id FROM ideas.members WHERE workspace_id = %s AND id = ANY(%s)"
        " ORDER BY id FOR SHARE",
        (workspace_id, ids),
    )
    if len(found) != len(ids):
        raise NotFound("Member not found")


# The participants of `x` (NewParticipant rows) with their member's name and e-mail.
PARTICIPANT_ROWS = """INSERT INTO ideas.participants AS p (workspace_id, id, idea_id, member_id,
    name, email, role, decision, decided_at)
  SELECT %(ws)s, x.id, x.idea_id, x.member_id, m.name, m.email, x.role, x.decision,
         CASE WHEN x.decision IN ('approved', 'rejected') THEN x.decided_at END
    FROM jsonb_to_recordset(%(rows)s::jsonb) AS x(id uuid, idea_id uuid, member_id uuid,
         role text, decision text, decided_at timestamptz)
    JOIN ideas.members m ON m.workspace_id = %(ws)s AND m.id = x.member_id"""


async def _drop_other_owners(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, keep: Mapping[uuid.UUID, uuid.UUID | None]
) -> None:
    """Each idea of `keep` keeps no owner participant but the one given (None: none). Two
    arrays, not a join with a set-returning function: the planner takes a function for 100 rows,
    and a seed's 50,000 ideas became 50,000 scans of the participants."""
    await cur.execute(
        "DELETE FROM ideas.participants p WHERE p.workspace_id = %s AND p.idea_id = ANY(%s)"
        " AND p.role = 'owner' AND p.id <> ALL(%s)",
        (workspace_id, sorted(keep), sorted(p for p in keep.values() if p is not None)),
    )


async def make_owners(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, items: Sequence[NewParticipant]
) -> dict[uuid.UUID, uuid.UUID]:
    """Each item's member becomes its idea's `owner` participant (one item per idea; an existing
    participant of theirs takes the role, keeping its decision; otherwise a new one with the
    item's decision); any other owner participant leaves. The caller sets the ideas'
    decision-owner columns. Returns each idea's owner participant's id."""
    if not items:
        return {}
    await _hold_members(cur, workspace_id, [i.member_id for i in items])
    for item in items:
        item.role = "owner"
    owners = {
        r["idea_id"]: r["id"]
        for r in await db.fetchall(
            cur,
            PARTICIPANT_ROWS
            + " ON CONFLICT (workspace_id, idea_id, member_id) WHERE member_id IS NOT NULL"
            " DO UPDATE SET role = 'owner' RETURNING p.idea_id, p.id",
            {"ws": workspace_id, "rows": _rows(items)},
        )
    }
    await _drop_other_owners(cur, workspace_id, owners)
    return owners


async def make_owner(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, member_id: uuid.UUID
) -> uuid.UUID:
    """`make_owners` of one idea: its owner participant's id."""
    return (await make_owners(cur, workspace_id, [NewParticipant(idea_id, member_id)]))[idea_id]


async def insert_participants(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, items: Sequence[NewParticipant]
) -> None:
    """Insert the participants as they are (an `owner` among them: see `add_participant`); 404
    for a member not of the workspace, 409 when a member already takes part in the idea."""
    if not items:
        return
    await _hold_members(cur, workspace_id, [i.member_id for i in items])
    try:
        await cur.execute(PARTICIPANT_ROWS, {"ws": workspace_id, "rows": _rows(items)})
    except psycopg2.Error as err:
        if db.is_unique_violation(err, "participants_member"):
            raise Conflict(ALREADY) from None
        raise


async def clear_owner(cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID) -> None:
    """The idea has no decision owner: its owner participant leaves."""
    await _drop_other_owners(cur, workspace_id, {idea_id: None})


async def sync_owner(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, member_id: uuid.UUID | None
) -> None:
    """The idea's `decisionOwnerId` was set to `member_id` (or cleared): its owner participant
    follows."""
    if member_id is None:
        await clear_owner(cur, workspace_id, idea_id)
    else:
        await make_owner(cur, workspace_id, idea_id, member_id)


async def add_participant(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    member_id: uuid.UUID,
    role: str,
) -> tuple[str, dict[str, Any]]:
    """The new participant's JSON and the idea's columns it changes (the decision owner, for an
    `owner`); 404 for a member not of the workspace, 409 when the member already takes part."""
    item = NewParticipant(idea_id, member_id, role)
    await insert_participants(cur, workspace_id, [item])
    sets: dict[str, Any] = {}
    if role == "owner":
        await _drop_other_owners(cur, workspace_id, {idea_id: item.id})
        sets = await members.owner_columns(cur, workspace_id, member_id)
    return await _one(cur, "participants", workspace_id, item.id, "Participant"), sets


async def update_participant(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    participant_id: uuid.UUID,
    fields: dict[str, Any],
) -> tuple[str, dict[str, Any]]:
    """Apply `role` and/or `decision`; return the participant's JSON and the idea's columns the
    change sets (the decision owner, when the role becomes or stops being `owner`)."""
    row = await db.fetchone(
        cur,
        "SELECT role, decision, member_id, name, email FROM ideas.participants"
        " WHERE workspace_id = %s AND idea_id = %s AND id = %s",
        (workspace_id, idea_id, participant_id),
    )
    if row is None:
        raise NotFound("Participant not found")
    assign: dict[str, Any] = {}
    if "role" in fields:
        assign["role"] = fields["role"]
    if "decision" in fields and fields["decision"] != row["decision"]:
        assign["decision"] = fields["decision"]
        assign["decided_at"] = store.now_utc() if fields["decision"] in DECIDED else None
    sets: dict[str, Any] = {}
    new_role = fields.get("role", row["role"])
    if new_role == "owner" and row["role"] != "owner":
        await _drop_other_owners(cur, workspace_id, {idea_id: participant_id})
        if row["member_id"] is not None:
            sets = await members.owner_columns(cur, workspace_id, row["member_id"])
        else:  # recorded before participants named members: the name and e-mail alone
            sets = {
                "decision_owner_id": None,
                "decision_owner_name": row["name"],
                "decision_owner_email": (row["email"] or "").lower() or None,
            }
    elif row["role"] == "owner" and new_role != "owner":
        sets = await members.owner_columns(cur, workspace_id, None)
    if assign:
        await cur.execute(
            "UPDATE ideas.participants SET "
            + ", ".join(f"{col} = %s" for col in assign)  # names are ours
            + " WHERE workspace_id = %s AND id = %s",
            (*assign.values(), workspace_id, participant_id),
        )
    return await _one(cur, "participants", workspace_id, participant_id, "Participant"), sets


async def delete_participant(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, participant_id: uuid.UUID
) -> dict[str, Any]:
    """Remove the participant; the idea's columns that change (no decision owner, for the
    owner)."""
    role = await db.fetchval(
        cur,
        "DELETE FROM ideas.participants WHERE workspace_id = %s AND idea_id = %s AND id = %s"
        " RETURNING role",
        (workspace_id, idea_id, participant_id),
    )
    if role is None:
        raise NotFound("Participant not found")
    if role == "owner":
        return await members.owner_columns(cur, workspace_id, None)
    return {}
