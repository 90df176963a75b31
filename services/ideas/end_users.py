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
from typing import Any

import aiopg

from libs.common import db
from libs.common.caller import Caller
from libs.common.errors import NotFound
from libs.common.messaging import add_event

from .render import IDEA_JSON, fragment


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


async def known(cur: aiopg.Cursor, ws: uuid.UUID, user_id: uuid.UUID) -> bool:
    """Whether the customers service confirmed the user before (`remember`); an erased user
    stays known here and is refused by `hold_users`."""
    return bool(
        await db.fetchval(
            cur,
            "SELECT 1 FROM ideas.known_users WHERE workspace_id = %s AND user_id = %s",
            (ws, user_id),
        )
    )


async def remember(cur: aiopg.Cursor, ws: uuid.UUID, user_ids: Iterable[uuid.UUID]) -> None:
    """Users the customers service just confirmed: their next votes need no lookup."""
    await cur.execute(
        "INSERT INTO ideas.known_users (workspace_id, user_id)"
        " SELECT %s, u FROM unnest(%s::uuid[]) AS u ORDER BY u ON CONFLICT DO NOTHING",
        (ws, sorted({str(u) for u in user_ids})),
    )


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


# A Signal with its idea's id after its own fields: the export's `signals` items.
USER_SIGNAL_JSON = (
    "left(ideas.signal_json(s)::text, -1) || ',\"ideaId\":' || to_json(s.idea_id)::text || '}'"
)


async def export(
    cur: aiopg.Cursor, ws: uuid.UUID, user_id: uuid.UUID, email: str | None
) -> dict[str, Any]:
    """What the service holds about the user, exactly what `erase` removes or clears: the
    user's votes (oldest first), the ideas the user asked for (oldest first), and the signals
    whose `userEmail` is the user's e-mail (ignoring case; oldest first)."""
    votes = await db.fetchall(
        cur,
        'SELECT idea_id AS "ideaId", value, created_at AS "createdAt" FROM ideas.votes'
        " WHERE workspace_id = %s AND user_id = %s ORDER BY created_at, idea_id",
        (ws, user_id),
    )
    ideas = await db.fetchall(
        cur,
        f"SELECT {IDEA_JSON}::text AS json FROM ideas.ideas i"
        " WHERE i.workspace_id = %s AND i.author_id = %s ORDER BY i.created_at, i.id",
        (ws, str(user_id)),
    )
    signals: list[db.Row] = []
    if email is not None:
        signals = await db.fetchall(
            cur,
            f"SELECT {USER_SIGNAL_JSON} AS json FROM ideas.signals s WHERE s.workspace_id = %s"
            " AND lower(s.user_email) = lower(%s) ORDER BY s.created_at, s.id",
            (ws, email),
        )
    return {
        "votes": [dict(v) for v in votes],
        "ideas": [fragment(r["json"]) for r in ideas],
        "signals": [fragment(r["json"]) for r in signals],
    }


async def _lock_voted_ideas(cur: aiopg.Cursor, ws: uuid.UUID, user_id: uuid.UUID) -> None:
    """Lock every idea the user has a vote on. Votes move only under their ideas' locks (a
    merge), so the set is read again after each round of locks until it holds still."""
    held: set[uuid.UUID] = set()
    while True:
        rows = await db.fetchall(
            cur,
            "SELECT DISTINCT idea_id FROM ideas.votes WHERE workspace_id = %s AND user_id = %s",
            (ws, user_id),
        )
        new = {r["idea_id"] for r in rows} - held
        if not new:
            return
        await db.fetchall(
            cur,
            "SELECT id FROM ideas.ideas WHERE workspace_id = %s AND id = ANY(%s::uuid[])"
            " ORDER BY id FOR UPDATE",
            (ws, [str(i) for i in new]),
        )
        held |= new


async def erase(
    cur: aiopg.Cursor, who: Caller, user_id: uuid.UUID, email: str | None
) -> dict[str, int]:
    """Erase what the service holds about the user: the votes (each idea's
    `voteCount` follows, `idea.voted` with value 0 and `vote.changed` for each), the votes a
    merge recorded for an unmerge to give back, the authorship of the ideas the user asked for
    (`sourceUserId`, `sourceUserName` null; the ideas stay), and the contact fields of the
    signals whose `userEmail` is the user's e-mail. The user is recorded as erased first,
    under the user's exclusive lock, so a vote on the user's behalf that was looked up before
    is refused (`hold_users`). Applied again, it finds nothing more to remove."""
    ws = who.workspace_id
    await hold_users(cur, ws, [user_id], erase=True)
    await cur.execute(
        "INSERT INTO ideas.erased_users (workspace_id, user_id) VALUES (%s, %s)"
        " ON CONFLICT DO NOTHING",
        (ws, user_id),
    )
    await _lock_voted_ideas(cur, ws, user_id)
    removed = await db.fetchall(
        cur,
        "DELETE FROM ideas.votes WHERE workspace_id = %s AND user_id = %s RETURNING idea_id, value",
        (ws, user_id),
    )
    for vote in sorted(removed, key=lambda r: str(r["idea_id"])):
        await cur.execute(
            "UPDATE ideas.ideas i SET vote_count = vote_count - %s"
            f" WHERE workspace_id = %s AND id = %s RETURNING {IDEA_JSON}::text",
            (vote["value"], ws, vote["idea_id"]),
        )
        idea = (await cur.fetchone())[0]
        await add_event(
            cur,
            "ideas",
            "idea.voted",
            ws,
            {"idea": fragment(idea), "vote": {"voter": voter(user_id), "value": 0}},
            who.request_id,
        )
        await vote_changed(cur, ws, vote["idea_id"], user_id, 0, who.request_id)
    await cur.execute(
        "DELETE FROM ideas.merge_votes mv USING ideas.merges m"
        " WHERE m.workspace_id = %s AND mv.merge_id = m.id AND mv.voter = %s",
        (ws, voter(user_id)),
    )
    await cur.execute(
        "UPDATE ideas.ideas SET author_id = NULL, author_name = NULL"
        " WHERE workspace_id = %s AND author_id = %s",
        (ws, str(user_id)),
    )
    ideas = cur.rowcount
    signals = 0
    if email is not None:
        await cur.execute(
            "UPDATE ideas.signals SET user_id = NULL, user_name = NULL, user_email = NULL"
            " WHERE workspace_id = %s AND lower(user_email) = lower(%s)",
            (ws, email),
        )
        signals = cur.rowcount
    return {"votesRemoved": len(removed), "ideas": ideas, "signals": signals}


async def record_votes(
    cur: aiopg.Cursor, ws: uuid.UUID, votes: list[tuple[uuid.UUID, uuid.UUID, int]]
) -> list[int]:
    """Votes on users' behalf (idea, user, value) written directly, without events (`ideasctl
    seed`): each upserted and its idea's `voteCount` adjusted as a vote does; the version of
    each (`ideas.vote_versions`), for the customers service's record of them."""
    versions = []
    for idea_id, user_id, value in votes:
        old = await db.fetchval(
            cur,
            "SELECT value FROM ideas.votes WHERE workspace_id = %s AND idea_id = %s AND voter = %s",
            (ws, idea_id, voter(user_id)),
        )
        await cur.execute(
            "INSERT INTO ideas.votes (workspace_id, idea_id, voter, value) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (workspace_id, idea_id, voter)"
            " DO UPDATE SET value = EXCLUDED.value, created_at = now(), merge_id = NULL",
            (ws, idea_id, voter(user_id), value),
        )
        await cur.execute(
            "UPDATE ideas.ideas SET vote_count = vote_count + %s WHERE workspace_id = %s AND id = %s",
            (value - (old or 0), ws, idea_id),
        )
        versions.append(await db.fetchval(cur, "SELECT nextval('ideas.vote_versions')"))
    return versions
