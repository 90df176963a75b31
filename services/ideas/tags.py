"""The workspace's tags: their writes, and the tags of an idea (docs/ideas.md, tags).

A tag's name is unique in its workspace ignoring case: the unique index `tags_name_unique` on
`(workspace_id, lower(name))` decides, so two concurrent creates of one name give one tag and
one 409. An idea's tags are rows of `ideas.idea_tags`, written in the transaction of the idea's
change. Tags named by a request are locked `FOR KEY SHARE` until that transaction ends, so a
tag cannot be deleted between the check and the write (the delete waits, then also removes the
new rows); renames do not wait for it.
"""

from __future__ import annotations

import uuid
from typing import Any

import aiopg
import psycopg2

from libs.common import db
from libs.common.errors import Conflict, NotFound

TAG_SQL = """SELECT row_to_json(x)::text FROM (SELECT t.id, t.name, t.color,
  (SELECT count(*) FROM ideas.idea_tags it
     JOIN ideas.ideas i ON i.workspace_id = it.workspace_id AND i.id = it.idea_id
    WHERE it.workspace_id = t.workspace_id AND it.tag_id = t.id
      AND i.status <> 'deleted') AS "ideaCount"
 FROM ideas.tags t WHERE t.workspace_id = %s AND t.id = %s) x"""

NAME_TAKEN = "A tag with this name already exists in the workspace"


async def _one(cur: aiopg.Cursor, workspace_id: uuid.UUID, tag_id: uuid.UUID) -> str:
    text = await db.fetchval(cur, TAG_SQL, (workspace_id, tag_id))
    if text is None:
        raise NotFound("Tag not found")
    return str(text)


async def create(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    name: str,
    color: str | None,
    tag_id: uuid.UUID | None = None,  # the seed's stable ids; the route draws a new one
) -> str:
    made = await db.fetchval(
        cur,
        "INSERT INTO ideas.tags (workspace_id, id, name, color) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT DO NOTHING RETURNING id",
        (workspace_id, tag_id or uuid.uuid4(), name, color),
    )
    if made is None:
        raise Conflict(NAME_TAKEN)
    return await _one(cur, workspace_id, made)


async def update(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, tag_id: uuid.UUID, fields: dict[str, Any]
) -> str:
    assign = ", ".join(f"{col} = %s" for col in fields)  # names are the model's, never free
    try:
        found = await db.fetchval(
            cur,
            f"UPDATE ideas.tags SET {assign} WHERE workspace_id = %s AND id = %s RETURNING 1",
            (*fields.values(), workspace_id, tag_id),
        )
    except psycopg2.Error as err:
        if db.is_unique_violation(err, "tags_name_unique"):
            raise Conflict(NAME_TAKEN) from None
        raise
    if found is None:
        raise NotFound("Tag not found")
    return await _one(cur, workspace_id, tag_id)


async def delete(cur: aiopg.Cursor, workspace_id: uuid.UUID, tag_id: uuid.UUID) -> None:
    """Delete the tag, then take it off every idea (after the tag row's lock: rows written by
    a transaction that held the tag are committed and seen)."""
    found = await db.fetchval(
        cur,
        "DELETE FROM ideas.tags WHERE workspace_id = %s AND id = %s RETURNING 1",
        (workspace_id, tag_id),
    )
    if found is None:
        raise NotFound("Tag not found")
    await cur.execute(
        "DELETE FROM ideas.idea_tags WHERE workspace_id = %s AND tag_id = %s",
        (workspace_id, tag_id),
    )


async def check(cur: aiopg.Cursor, workspace_id: uuid.UUID, tag_ids: list[uuid.UUID]) -> None:
    """404 unless every id is a tag of the workspace; holds them until the transaction ends."""
    wanted = set(tag_ids)
    if not wanted:
        return
    rows = await db.fetchall(
        cur,
        "SELECT id FROM ideas.tags WHERE workspace_id = %s AND id = ANY(%s::uuid[])"
        " ORDER BY id FOR KEY SHARE",
        (workspace_id, sorted(wanted)),
    )
    if len(rows) != len(wanted):
        raise NotFound("Tag not found")


async def put_on(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, tag_ids: list[uuid.UUID]
) -> None:
    await cur.execute(
        "INSERT INTO ideas.idea_tags (workspace_id, idea_id, tag_id)"
        " SELECT %s, %s, t FROM unnest(%s::uuid[]) t ON CONFLICT DO NOTHING",
        (workspace_id, idea_id, list(tag_ids)),
    )


async def replace(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID, tag_ids: list[uuid.UUID]
) -> None:
    """The idea's tags become exactly `tag_ids` (checked by `check`)."""
    await cur.execute(
        "DELETE FROM ideas.idea_tags WHERE workspace_id = %s AND idea_id = %s"
        " AND NOT tag_id = ANY(%s::uuid[])",
        (workspace_id, idea_id, list(tag_ids)),
    )
    await put_on(cur, workspace_id, idea_id, tag_ids)
