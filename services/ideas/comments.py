"""An idea's comments (docs/ideas.md, Comments): list, write, edit, delete, and a user's
comments for their export and erasure.

Every write locks the idea's row first (`store.lock_ideas`), then changes the comment rows,
then sets the idea's `comment_count` (+1/-1 for a comment that is not internal) and
`last_activity_at` in a later statement, and writes the event in the same transaction: writes
on one idea queue on the row lock, so the count stays exact under concurrent creates and
deletes, and a reply cannot be written under a parent that a concurrent delete removes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiopg
import orjson

from libs.common import db
from libs.common.caller import Caller
from libs.common.errors import NotFound, ValidationFailed
from libs.common.messaging import add_event
from libs.common.pagination import Secrets, decode_cursor, page_tail

from . import prepared, store
from .render import COMMENT_JSON, IDEA_JSON, fragment
from .subresources import require_idea

NOT_FOUND = "Comment not found"
ONE_LEVEL = "parentId: replies go one level deep; this comment is a reply itself"


@dataclass(frozen=True)
class Author:
    """Who writes a comment: `user` (an end user's id and name) or `key` (the API key's)."""

    type: str
    id: uuid.UUID
    name: str | None


def key_author(who: Caller) -> Author:
    return Author("key", who.key_id or uuid.UUID(int=0), who.key_name)


async def _emit(cur: aiopg.Cursor, who: Caller, event_type: str, comment: str, idea: str) -> None:
    await add_event(
        cur,
        "ideas",
        event_type,
        who.workspace_id,
        {"comment": fragment(comment), "idea": fragment(idea)},
        who.request_id,
    )


async def _count(cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, delta: int) -> str:
    """The idea's comment count moved by `delta` and its activity time now; its Idea JSON."""
    await cur.execute(
        "UPDATE ideas.ideas i SET comment_count = greatest(i.comment_count + %s, 0),"
        " last_activity_at = now()"
        f" WHERE i.workspace_id = %s AND i.id = %s RETURNING {IDEA_JSON}::text",
        (delta, workspace_id, idea_id),
    )
    return str((await cur.fetchone())[0])


async def create(
    cur: aiopg.Cursor,
    who: Caller,
    idea_id: uuid.UUID,
    body: str,
    internal: bool,
    parent_id: uuid.UUID | None,
    author: Author,
) -> str:
    """The new comment's JSON; the idea's count follows and `comment.created` is emitted."""
    await store.lock_ideas(cur, who.workspace_id, [idea_id])
    if parent_id is not None:
        row = await db.fetchone(
            cur,
            "SELECT parent_id FROM ideas.comments"
            " WHERE workspace_id = %s AND idea_id = %s AND id = %s",
            (who.workspace_id, idea_id, parent_id),
        )
        if row is None:  # unknown, another idea's or another workspace's
            raise NotFound("Parent comment not found on this idea")
        if row["parent_id"] is not None:
            raise ValidationFailed(ONE_LEVEL, field="parentId")
    await cur.execute(
        "INSERT INTO ideas.comments AS c (workspace_id, id, idea_id, parent_id, body, internal,"
        " author_type, author_id, author_name) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
        f" RETURNING {COMMENT_JSON}::text",
        (
            who.workspace_id,
            uuid.uuid4(),
            idea_id,
            parent_id,
            body,
            internal,
            author.type,
            author.id,
            author.name,
        ),
    )
    comment = str((await cur.fetchone())[0])
    idea = await _count(cur, who.workspace_id, idea_id, 0 if internal else 1)
    await _emit(cur, who, "comment.created", comment, idea)
    return comment


@dataclass(frozen=True)
class NewComment:
    """A comment written directly (`record`), with its own id and time."""

    id: uuid.UUID
    idea_id: uuid.UUID
    parent_id: uuid.UUID | None
    body: str
    internal: bool
    author: Author
    created_at: datetime


async def record(cur: aiopg.Cursor, workspace_id: uuid.UUID, comments: list[NewComment]) -> int:
    """Comments written directly, without events (`ideasctl seed`, a bulk load): one INSERT
    for all of them, then each idea's `comment_count` moved by its comments that are not
    internal and its `last_activity_at` brought up to its latest comment, as `create` does one
    at a time. The caller vouches for the threads (a reply's parent is a top-level comment of
    the same idea, given earlier in the list or already stored). Returns how many."""
    if not comments:
        return 0
    ideas = sorted({c.idea_id for c in comments})
    await store.lock_ideas(cur, workspace_id, ideas)
    await cur.execute(
        "INSERT INTO ideas.comments (workspace_id, id, idea_id, parent_id, body, internal,"
        " author_type, author_id, author_name, created_at)"
        " SELECT %s, * FROM unnest(%s::uuid[], %s::uuid[], %s::uuid[], %s::text[], %s::boolean[],"
        " %s::text[], %s::uuid[], %s::text[], %s::timestamptz[])",
        (
            workspace_id,
            [c.id for c in comments],
            [c.idea_id for c in comments],
            [c.parent_id for c in comments],
            [c.body for c in comments],
            [c.internal for c in comments],
            [c.author.type for c in comments],
            [c.author.id for c in comments],
            [c.author.name for c in comments],
            [c.created_at for c in comments],
        ),
    )
    await cur.execute(
        "UPDATE ideas.ideas i SET comment_count = i.comment_count + n.visible,"
        " last_activity_at = greatest(i.last_activity_at, n.latest)"
        " FROM (SELECT idea_id, count(*) FILTER (WHERE NOT internal) AS visible,"
        "  max(created_at) AS latest FROM unnest(%s::uuid[], %s::boolean[], %s::timestamptz[])"
        "  AS c (idea_id, internal, created_at) GROUP BY idea_id) n"
        " WHERE i.workspace_id = %s AND i.id = n.idea_id",
        (
            [c.idea_id for c in comments],
            [c.internal for c in comments],
            [c.created_at for c in comments],
            workspace_id,
        ),
    )
    return len(comments)


async def update(
    cur: aiopg.Cursor, who: Caller, idea_id: uuid.UUID, comment_id: uuid.UUID, body: str
) -> str:
    await store.lock_ideas(cur, who.workspace_id, [idea_id])
    comment = await db.fetchval(
        cur,
        "UPDATE ideas.comments c SET body = %s, updated_at = clock_timestamp()"
        " WHERE workspace_id = %s AND idea_id = %s AND id = %s"
        f" RETURNING {COMMENT_JSON}::text",
        (body, who.workspace_id, idea_id, comment_id),
    )
    if comment is None:
        raise NotFound(NOT_FOUND)
    idea = await _count(cur, who.workspace_id, idea_id, 0)
    await _emit(cur, who, "comment.updated", str(comment), idea)
    return str(comment)


async def delete(
    cur: aiopg.Cursor, who: Caller, idea_id: uuid.UUID, comment_id: uuid.UUID
) -> dict[str, Any]:
    """Delete the comment (its replies stay, `parent_id` kept); `comment.deleted` carries it
    as it was."""
    await store.lock_ideas(cur, who.workspace_id, [idea_id])
    row = await db.fetchone(
        cur,
        "DELETE FROM ideas.comments c WHERE workspace_id = %s AND idea_id = %s AND id = %s"
        f" RETURNING internal, {COMMENT_JSON}::text AS comment",
        (who.workspace_id, idea_id, comment_id),
    )
    if row is None:
        raise NotFound(NOT_FOUND)
    idea = await _count(cur, who.workspace_id, idea_id, 0 if row["internal"] else -1)
    await _emit(cur, who, "comment.deleted", row["comment"], idea)
    return {"id": comment_id, "deleted": True}


# A page of an idea's comments: the keyset (created_at, id) ascending, from the cursor on; one
# statement without the `internal` filter and one with it, each an index range scan of its own
# index (comments_idea, comments_idea_internal), so a page costs the same at any depth.
PAGE_ALL = (
    f"SELECT c.created_at, c.id, {COMMENT_JSON}::text FROM ideas.comments c"
    " WHERE c.workspace_id = %s AND c.idea_id = %s AND (c.created_at, c.id) > (%s, %s)"
    " ORDER BY c.created_at, c.id LIMIT %s"
)
PAGE_INTERNAL = (
    f"SELECT c.created_at, c.id, {COMMENT_JSON}::text FROM ideas.comments c"
    " WHERE c.workspace_id = %s AND c.idea_id = %s AND c.internal = %s"
    " AND (c.created_at, c.id) > (%s, %s)"
    " ORDER BY c.created_at, c.id LIMIT %s"
)
# Before every comment: the first page's keyset start.
START = ("-infinity", "00000000-0000-0000-0000-000000000000")


async def page(
    cur: aiopg.Cursor,
    secrets: Secrets,
    workspace_id: uuid.UUID,
    idea_id: uuid.UUID,
    internal: bool | None,
    limit: int,
    cursor: str | None,
) -> tuple[list[str], str | None, bool]:
    await require_idea(cur, workspace_id, idea_id)
    scope = {
        "ws": str(workspace_id),
        "idea": str(idea_id),
        "list": "comments",
        "internal": internal,
    }
    after = tuple(decode_cursor(secrets, cursor, scope)[:2]) if cursor else START
    if internal is None:
        await prepared.execute(cur, PAGE_ALL, (workspace_id, idea_id, *after, limit + 1))
    else:
        await prepared.execute(
            cur, PAGE_INTERNAL, (workspace_id, idea_id, internal, *after, limit + 1)
        )
    rows, next_cursor, has_more = page_tail(
        await cur.fetchall(), limit, secrets, scope, lambda r: [r[0].isoformat(), str(r[1])]
    )
    return [r[2] for r in rows], next_cursor, has_more


async def of_user(cur: aiopg.Cursor, workspace_id: uuid.UUID, user_id: uuid.UUID) -> list[str]:
    """Every comment the user wrote, on any idea, oldest first."""
    await cur.execute(
        f"SELECT {COMMENT_JSON}::text FROM ideas.comments c"
        " WHERE c.workspace_id = %s AND c.author_type = 'user' AND c.author_id = %s"
        " ORDER BY c.created_at, c.id",
        (workspace_id, user_id),
    )
    return [r[0] for r in await cur.fetchall()]


async def remove_user(cur: aiopg.Cursor, who: Caller, user_id: uuid.UUID) -> int:
    """Delete every comment the user wrote (their replies stay, `parent_id` kept): each
    idea's count follows and each comment emits `comment.deleted`, its author's `name` null:
    this is the user's erasure, whose last step redacts the name from the delivery log, and
    the event would otherwise be delivered (and stored) after that step with the name in it.
    Returns how many."""
    removed = 0
    while True:
        # The ideas first, locked in id order like any write (no deadlock with them); a
        # comment written meanwhile on another idea is found by the next round.
        idea_ids = [
            r["idea_id"]
            for r in await db.fetchall(
                cur,
                "SELECT DISTINCT idea_id FROM ideas.comments"
                " WHERE workspace_id = %s AND author_type = 'user' AND author_id = %s",
                (who.workspace_id, user_id),
            )
        ]
        if not idea_ids:
            return removed
        await store.lock_ideas(cur, who.workspace_id, idea_ids)
        rows = await db.fetchall(
            cur,
            "DELETE FROM ideas.comments c WHERE workspace_id = %s AND author_type = 'user'"
            " AND author_id = %s AND idea_id = ANY(%s)"
            f" RETURNING idea_id, internal, created_at, id, {COMMENT_JSON}::text AS comment",
            (who.workspace_id, user_id, idea_ids),
        )
        rows.sort(key=lambda r: (r["created_at"], r["id"]))
        ideas: dict[uuid.UUID, str] = {}
        for idea_id in sorted({r["idea_id"] for r in rows}):
            delta = -sum(1 for r in rows if r["idea_id"] == idea_id and not r["internal"])
            ideas[idea_id] = await _count(cur, who.workspace_id, idea_id, delta)
        for r in rows:
            await _emit(cur, who, "comment.deleted", _nameless(r["comment"]), ideas[r["idea_id"]])
        removed += len(rows)


def _nameless(comment: str) -> str:
    """The Comment JSON with its author's name null (an erased user's comment)."""
    body = orjson.loads(comment)
    body["author"]["name"] = None
    return orjson.dumps(body).decode()
