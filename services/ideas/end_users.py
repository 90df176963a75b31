"""What the ideas service holds about end users (docs/ideas.md, End users): their votes (voter
`user:<userId>`, `ideas.votes.user_id`), the ideas they asked for (`author_id`) and the signals
that carry their e-mail. The customers service owns the users: a vote or an idea on a user's
behalf asks it for the user first (users_client.py), and it asks here for what erasure and
export need (internal.py).

Every change of a user's vote emits the internal `vote.changed` (`{"ideaId", "userId", "value"
(1, -1, 0 when gone), "version"}`), which the customers service turns into the links a company's
demand holds. `version` is the next number of `ideas.vote_versions`, taken under the idea's row
lock, so it orders the changes of one (idea, user) pair whatever order the events arrive in.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import aiopg

from libs.common import db
from libs.common.errors import NotFound
from libs.common.messaging import add_event


def voter(user_id: uuid.UUID | str) -> str:
    """The voter of a vote on a user's behalf."""
    return f"user:{user_id}"


async def hold_users(
    cur: aiopg.Cursor, ws: uuid.UUID, user_ids: Iterable[uuid.UUID], erase: bool = False
) -> None:
    """The transaction's lock on each user (in id order): shared for a vote or an idea on the
    user's behalf, which is then 404 when the user was erased; exclusive for the erasure. So a
    vote whose user lookup came before an erasure either commits before the erasure reads the
    user's votes, or sees the erasure and is refused."""
    ids = sorted({str(u) for u in user_ids})
    fn = "pg_advisory_xact_lock" if erase else "pg_advisory_xact_lock_shared"
    for user_id in ids:
        await cur.execute(f"SELECT {fn}(hashtextextended(%s, 0))", (f"ideas.users:{ws}:{user_id}",))
    if ids and not erase:
        if await db.fetchval(
            cur,
            "SELECT 1 FROM ideas.erased_users WHERE workspace_id = %s"
            " AND user_id = ANY(%s::uuid[]) LIMIT 1",
            (ws, ids),
        ):
            raise NotFound("User not found")


async def vote_changed(
    cur: aiopg.Cursor,
    ws: uuid.UUID,
    idea_id: uuid.UUID | str,
    user_id: uuid.UUID | str,
    value: int,
    request_id: str | None = None,
) -> None:
    """`vote.changed` for the user's vote on the idea (0: no vote); the caller holds the idea."""
    version = await db.fetchval(cur, "SELECT nextval('ideas.vote_versions')")
    await add_event(
        cur,
        "ideas",
        "vote.changed",
        ws,
        {"ideaId": str(idea_id), "userId": str(user_id), "value": value, "version": version},
        request_id,
    )


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


# A voter that is a user's (the derivation of ideas.votes.user_id, migration 0700).
USER_VOTER_SQL = "'^user:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'"


async def users_of_merge(cur: aiopg.Cursor, merge_id: uuid.UUID | str) -> list[str]:
    """The users whose votes a merge recorded (moved or not)."""
    rows = await db.fetchall(
        cur,
        "SELECT DISTINCT substr(voter, 6) AS user_id FROM ideas.merge_votes"
        f" WHERE merge_id = %s AND voter ~ {USER_VOTER_SQL} ORDER BY 1",
        (merge_id,),
    )
    return [r["user_id"] for r in rows]


async def resync(
    cur: aiopg.Cursor,
    ws: uuid.UUID,
    idea_ids: list[uuid.UUID],
    user_ids: list[str],
    request_id: str | None = None,
) -> None:
    """`vote.changed` with the current value (0 when none) of each user's vote on each idea,
    after votes moved in bulk (a merge, an unmerge); the caller holds the ideas."""
    if not user_ids:
        return
    rows = await db.fetchall(
        cur,
        "SELECT i.idea_id, u.user_id, coalesce(v.value, 0) AS value"
        " FROM unnest(%s::uuid[]) AS i(idea_id) CROSS JOIN unnest(%s::uuid[]) AS u(user_id)"
        " LEFT JOIN ideas.votes v ON v.workspace_id = %s AND v.idea_id = i.idea_id"
        "  AND v.user_id = u.user_id ORDER BY 1, 2",
        ([str(i) for i in idea_ids], user_ids, ws),
    )
    for r in rows:
        await vote_changed(cur, ws, r["idea_id"], r["user_id"], r["value"], request_id)
