"""The writes of an idea's evidence, support tickets, meetings and participants (docs/ideas.md,
"Evidence, tickets, meetings and participants").

Each function runs in the caller's transaction after the idea's row is locked (`lock`), so the
writes of one idea run one after the other and the idea's own columns they change (the evidence
count, the decision owner) are written with them. Rows are answered in the form the GET lists
give (subresources.PLAIN).

Participants name a member (`member_id`), once per idea (unique index `participants_member`);
their name and e-mail are the member's. The idea's `owner` participant and its decision owner
(`decisionOwnerId`) are one fact: `make_owner` and `clear_owner` keep them together, whichever
side the change comes from.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import aiopg
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


async def evidence_count(cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID) -> int:
    return int(
        await db.fetchval(
            cur,
            "SELECT count(*) FROM ideas.evidence WHERE workspace_id = %s AND idea_id = %s",
            (workspace_id, idea_id),
        )
    )


async def add_evidence(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    kind: str,
    title: str,
    url: str | None = None,
    content: str | None = None,
    *,
    created_at: datetime | None = None,
) -> tuple[str, dict[str, Any]]:
    """The new evidence's JSON and the idea's columns it changes (the evidence count)."""
    row_id = uuid.uuid4()
    await cur.execute(
        "INSERT INTO ideas.evidence (workspace_id, id, idea_id, type, title, url, content,"
        " created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, coalesce(%s, now()))",
        (workspace_id, row_id, idea_id, kind, title, url, content, created_at),
    )
    count = await evidence_count(cur, workspace_id, idea_id)
    return await _one(cur, "evidence", workspace_id, row_id, "Evidence"), {
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


async def upsert_ticket(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    platform: str,
    external_id: str,
    fields: dict[str, Any],
    *,
    created_at: datetime | None = None,
) -> str:
    """Insert the ticket, or update the given fields (by their API names) of the idea's ticket
    with this (platform, external id): one row however many arrive at once (the unique index
    `support_tickets_external` decides)."""
    cols = [TICKET_COLUMNS[name] for name in fields]  # names are the model's
    update = ", ".join(f"{c} = EXCLUDED.{c}" for c in cols) or "platform = EXCLUDED.platform"
    placeholders = ", ".join(["%s"] * len(cols))
    row_id = await db.fetchval(
        cur,
        "INSERT INTO ideas.support_tickets AS t (workspace_id, id, idea_id, platform,"
        f" external_id, created_at{''.join(', ' + c for c in cols)})"
        f" VALUES (%s, %s, %s, %s, %s, coalesce(%s, now()){', ' if cols else ''}{placeholders})"
        " ON CONFLICT (workspace_id, idea_id, platform, external_id)"
        f" DO UPDATE SET {update} RETURNING t.id",
        (workspace_id, uuid.uuid4(), idea_id, platform, external_id, created_at, *fields.values()),
    )
    return await _one(cur, "support_tickets", workspace_id, row_id, "Support ticket")


async def delete_ticket(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, ticket_id: uuid.UUID
) -> None:
    await _delete(cur, "ideas.support_tickets", workspace_id, idea_id, ticket_id, "Support ticket")


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
    row_id = uuid.uuid4()
    await cur.execute(
        "INSERT INTO ideas.meetings (workspace_id, id, idea_id, title, meeting_date,"
        " participants, excerpt, relation, transcript_url)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            workspace_id,
            row_id,
            idea_id,
            title,
            meeting_date,
            list(participants),
            excerpt,
            relation,
            transcript_url,
        ),
    )
    return await _one(cur, "meetings", workspace_id, row_id, "Meeting")


async def delete_meeting(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, meeting_id: uuid.UUID
) -> None:
    await _delete(cur, "ideas.meetings", workspace_id, idea_id, meeting_id, "Meeting")


async def _member(cur: aiopg.Cursor, workspace_id: uuid.UUID, member_id: uuid.UUID) -> db.Row:
    """The member's name and e-mail, held until the transaction ends; 404 unless the
    workspace's."""
    row = await db.fetchone(
        cur,
        "SELECT name, email FROM ideas.members WHERE workspace_id = %s AND id = %s FOR SHARE",
        (workspace_id, member_id),
    )
    if row is None:
        raise NotFound("Member not found")
    return row


async def _drop_other_owners(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, keep: uuid.UUID | None
) -> None:
    await cur.execute(
        "DELETE FROM ideas.participants WHERE workspace_id = %s AND idea_id = %s"
        " AND role = 'owner' AND id IS DISTINCT FROM %s",
        (workspace_id, idea_id, keep),
    )


async def make_owner(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    member_id: uuid.UUID,
    *,
    decision: str = "pending",
    decided_at: datetime | None = None,
) -> uuid.UUID:
    """The member becomes the idea's `owner` participant (an existing participant of theirs
    takes the role, keeping its decision); any other owner participant leaves. The caller sets
    the idea's decision-owner columns. Returns the participant's id."""
    member = await _member(cur, workspace_id, member_id)
    row_id = await db.fetchval(
        cur,
        "INSERT INTO ideas.participants AS p (workspace_id, id, idea_id, member_id, name, email,"
        " role, decision, decided_at) VALUES (%s, %s, %s, %s, %s, %s, 'owner', %s, %s)"
        " ON CONFLICT (workspace_id, idea_id, member_id) WHERE member_id IS NOT NULL"
        " DO UPDATE SET role = 'owner' RETURNING p.id",
        (
            workspace_id,
            uuid.uuid4(),
            idea_id,
            member_id,
            member["name"],
            member["email"],
            decision,
            decided_at,
        ),
    )
    await _drop_other_owners(cur, workspace_id, idea_id, row_id)
    return uuid.UUID(str(row_id))


async def clear_owner(cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID) -> None:
    """The idea has no decision owner: its owner participant leaves."""
    await _drop_other_owners(cur, workspace_id, idea_id, None)


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
    *,
    decision: str = "pending",
    decided_at: datetime | None = None,
) -> tuple[str, dict[str, Any]]:
    """The new participant's JSON and the idea's columns it changes (the decision owner, for an
    `owner`); 404 for a member not of the workspace, 409 when the member already takes part."""
    member = await _member(cur, workspace_id, member_id)
    row_id = uuid.uuid4()
    try:
        await cur.execute(
            "INSERT INTO ideas.participants (workspace_id, id, idea_id, member_id, name, email,"
            " role, decision, decided_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                workspace_id,
                row_id,
                idea_id,
                member_id,
                member["name"],
                member["email"],
                role,
                decision,
                decided_at if decision in DECIDED else None,
            ),
        )
    except psycopg2.Error as err:
        if db.is_unique_violation(err, "participants_member"):
            raise Conflict(ALREADY) from None
        raise
    sets: dict[str, Any] = {}
    if role == "owner":
        await _drop_other_owners(cur, workspace_id, idea_id, row_id)
        sets = await members.owner_columns(cur, workspace_id, member_id)
    return await _one(cur, "participants", workspace_id, row_id, "Participant"), sets


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
        await _drop_other_owners(cur, workspace_id, idea_id, participant_id)
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
