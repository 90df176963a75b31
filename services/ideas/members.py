"""The workspace's team members: their writes, and an idea's decision owner (docs/ideas.md,
members).

A member's e-mail is unique in its workspace ignoring case: the unique index
`members_email_unique` on `(workspace_id, lower(email))` decides, so two concurrent creates of
one e-mail give one member and one 409. Once a workspace has an `owner` it keeps one: a change
that could remove an owner (a delete, or a role other than `owner`) first locks the
workspace's owner rows, so two such changes run one after the other and the second sees the
first's result.

An idea's decision owner is a member: `owner_columns` gives the idea's columns for one
(`decision_owner_id`, `decision_owner_name` and the lower-cased e-mail the `decision_owner`
filter and the decisions report compare). The member row is held `FOR SHARE` until the idea's
transaction ends, so a concurrent rename or delete waits and then reaches the idea too. Locks
are taken ideas first, then members (a member's change locks the ideas it owns before its own
row), so an idea's change and a member's change cannot deadlock. The seed (`ideasctl seed`)
writes its members and decision owners through these same functions.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import aiopg
import psycopg2

from libs.common import db
from libs.common.errors import Conflict, NotFound

from .render import IDEA_JSON

MEMBER_SQL = """SELECT row_to_json(x)::text FROM (SELECT m.id, m.name, m.email, m.role,
  m.dashboard_access AS "dashboardAccess", ims_json_ts(m.last_active_at) AS "lastActiveAt"
 FROM ideas.members m WHERE m.workspace_id = %s AND m.id = %s) x"""

EMAIL_TAKEN = "A member with this e-mail already exists in the workspace"
LAST_OWNER = "The workspace must keep at least one owner"
COLUMNS = {"name": "name", "email": "email", "role": "role", "dashboardAccess": "dashboard_access"}


async def _one(cur: aiopg.Cursor, workspace_id: uuid.UUID, member_id: uuid.UUID) -> str:
    text = await db.fetchval(cur, MEMBER_SQL, (workspace_id, member_id))
    if text is None:
        raise NotFound("Member not found")
    return str(text)


async def create(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    name: str,
    email: str,
    role: str = "member",
    dashboard_access: bool = True,
    *,
    member_id: uuid.UUID | None = None,
    last_active_at: datetime | None = None,
) -> str:
    """The new member's JSON; 409 when the e-mail is taken. `member_id` and `last_active_at`
    are the seed's (a route never sets them: a new member has not acted yet)."""
    new_id = await db.fetchval(
        cur,
        "INSERT INTO ideas.members (workspace_id, id, name, email, role, dashboard_access,"
        " last_active_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
        (
            workspace_id,
            member_id or uuid.uuid4(),
            name,
            email,
            role,
            dashboard_access,
            last_active_at,
        ),
    )
    if new_id is None:
        raise Conflict(EMAIL_TAKEN)
    return await _one(cur, workspace_id, new_id)


async def _lock_owned_ideas(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, member_id: uuid.UUID
) -> None:
    await cur.execute(
        "SELECT 1 FROM ideas.ideas WHERE workspace_id = %s AND decision_owner_id = %s"
        " ORDER BY id FOR UPDATE",
        (workspace_id, member_id),
    )


async def _keep_an_owner(cur: aiopg.Cursor, workspace_id: uuid.UUID, member_id: uuid.UUID) -> None:
    """409 when `member_id` is the workspace's only owner. Locks every owner row (in id order),
    so concurrent demotions and deletes are serialized: under READ COMMITTED the one that waited
    re-reads the rows it locks, and a member demoted meanwhile is no longer among them."""
    rows = await db.fetchall(
        cur,
        "SELECT id FROM ideas.members WHERE workspace_id = %s AND role = 'owner'"
        " ORDER BY id FOR UPDATE",
        (workspace_id,),
    )
    owners = {r["id"] for r in rows}
    if owners == {member_id}:
        raise Conflict(LAST_OWNER)


async def update(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, member_id: uuid.UUID, fields: dict[str, Any]
) -> tuple[str, list[str]]:
    """Apply the request's fields (by their API names); return the member's JSON and the Idea
    JSON of every idea whose decision owner's name or e-mail changed with it."""
    renamed = "name" in fields or "email" in fields
    if renamed:
        await _lock_owned_ideas(cur, workspace_id, member_id)
    if fields.get("role", "owner") != "owner":
        await _keep_an_owner(cur, workspace_id, member_id)
    assign = ", ".join(f"{COLUMNS[name]} = %s" for name in fields)  # names are the model's
    try:
        row = await db.fetchone(
            cur,
            f"UPDATE ideas.members SET {assign} WHERE workspace_id = %s AND id = %s"
            " RETURNING name, email",
            (*fields.values(), workspace_id, member_id),
        )
    except psycopg2.Error as err:
        if db.is_unique_violation(err, "members_email_unique"):
            raise Conflict(EMAIL_TAKEN) from None
        raise
    if row is None:
        raise NotFound("Member not found")
    ideas: list[str] = []
    if renamed:
        await cur.execute(
            "UPDATE ideas.ideas i SET decision_owner_name = %s, decision_owner_email = %s,"
            " updated_at = now() WHERE workspace_id = %s AND decision_owner_id = %s"
            " AND (decision_owner_name, decision_owner_email) IS DISTINCT FROM (%s, %s)"
            f" RETURNING {IDEA_JSON}::text",
            (
                row["name"],
                row["email"].lower(),
                workspace_id,
                member_id,
                row["name"],
                row["email"].lower(),
            ),
        )
        ideas = [r[0] for r in await cur.fetchall()]
        # The member's participations in ideas' decisions carry their name and e-mail too.
        await cur.execute(
            "UPDATE ideas.participants SET name = %s, email = %s"
            " WHERE workspace_id = %s AND member_id = %s",
            (row["name"], row["email"], workspace_id, member_id),
        )
    return await _one(cur, workspace_id, member_id), ideas


async def delete(cur: aiopg.Cursor, workspace_id: uuid.UUID, member_id: uuid.UUID) -> None:
    """Remove the member (409 for the last owner); the ideas they owned keep the name and
    e-mail and lose the id; their participations in ideas' decisions are deleted."""
    await _lock_owned_ideas(cur, workspace_id, member_id)
    await _keep_an_owner(cur, workspace_id, member_id)
    found = await db.fetchval(
        cur,
        "DELETE FROM ideas.members WHERE workspace_id = %s AND id = %s RETURNING 1",
        (workspace_id, member_id),
    )
    if found is None:
        raise NotFound("Member not found")
    await cur.execute(
        "UPDATE ideas.ideas SET decision_owner_id = NULL"
        " WHERE workspace_id = %s AND decision_owner_id = %s",
        (workspace_id, member_id),
    )
    # Their places in ideas' decisions go with them (an owner's with the idea's owner id).
    await cur.execute(
        "DELETE FROM ideas.participants WHERE workspace_id = %s AND member_id = %s",
        (workspace_id, member_id),
    )


async def owner_columns(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, member_id: uuid.UUID | None
) -> dict[str, Any]:
    """The idea's decision-owner columns for the member (null clears them); 404 unless the
    member is the workspace's. Holds the member until the transaction ends."""
    if member_id is None:
        return {
            "decision_owner_id": None,
            "decision_owner_name": None,
            "decision_owner_email": None,
        }
    row = await db.fetchone(
        cur,
        "SELECT name, email FROM ideas.members WHERE workspace_id = %s AND id = %s FOR SHARE",
        (workspace_id, member_id),
    )
    if row is None:
        raise NotFound("Member not found")
    return {
        "decision_owner_id": member_id,
        "decision_owner_name": row["name"],
        "decision_owner_email": row["email"].lower(),
    }
