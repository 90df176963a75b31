"""What the ideas service holds about end users (docs/ideas.md, End users): their votes (voter
`user:<userId>`, `ideas.votes.user_id`), the ideas they asked for (`author_id`) and the signals
that carry their e-mail. The customers service owns the users and asks for these over the
internal routes (internal.py)."""

from __future__ import annotations

import uuid

import aiopg

from libs.common import db


def voter(user_id: uuid.UUID | str) -> str:
    """The voter of a vote on a user's behalf."""
    return f"user:{user_id}"


async def vote_counts(
    cur: aiopg.Cursor, ws: uuid.UUID, user_ids: list[uuid.UUID]
) -> dict[str, int]:
    """Each user's `voteCount`: the ideas the user votes +1 on now (users without any left out)."""
    rows = await db.fetchall(
        cur,
        "SELECT user_id, count(*) AS n FROM ideas.votes WHERE workspace_id = %s"
        " AND user_id = ANY(%s::uuid[]) AND value = 1 GROUP BY user_id",
        (ws, [str(u) for u in user_ids]),
    )
    return {str(r["user_id"]): r["n"] for r in rows}
