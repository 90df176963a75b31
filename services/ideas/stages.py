"""Roadmap stage writes: create, change, move, make default, delete (docs/ideas.md, "Roadmap
stages: the writes").

Every write first takes the workspace's stage lock (a transaction-scoped advisory lock on the
workspace), then reads the stages in a statement of its own: a writer that waited sees what
the one before it committed, new stages included, so the positions it writes back are always
0, 1, 2, ... in list order. (Row locks on the stages would not do: a create's new row is not
among the rows a waiting `SELECT ... FOR UPDATE` returns.) Slugs are unique in the workspace
(`UNIQUE (workspace_id, slug)`; a slug is lower case, so this is also ignoring case).
Deleting a stage deletes its row first (a concurrent assignment holds it `FOR KEY SHARE`, so
the delete waits for it), then takes every idea on it off the roadmap, each with an
`idea.assigned` event.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from typing import Any

import aiopg
import psycopg2

from libs.common import db
from libs.common.caller import Caller
from libs.common.errors import Conflict, NotFound

from . import store
from .render import IDEA_JSON

STAGE_SQL = """SELECT row_to_json(x)::text FROM (SELECT s.id, s.name, s.slug, s.color,
  s.position, s.is_default AS "isDefault",
  (SELECT count(*) FROM ideas.ideas i WHERE i.workspace_id = s.workspace_id
     AND i.roadmap_stage_id = s.id AND i.status <> 'deleted') AS "ideaCount",
  ims_json_ts(s.created_at) AS "createdAt"
 FROM ideas.roadmap_stages s WHERE s.workspace_id = %s AND s.id = %s) x"""

SLUG_TAKEN = "Another roadmap stage of the workspace has this slug"
# The advisory lock's first key: stage writes (the second is the workspace's hash).
STAGE_LOCK = 0x57A6E


def slug_from(name: str) -> str:
    """The slug a name gives: accents dropped, lower case, every run of other characters one
    `-`, no `-` at either end, at most 50 characters; `stage` when nothing is left."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:50].strip("-")
    return slug or "stage"


async def lock(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> list[db.Row]:
    """Take the workspace's stage lock; its stages in list order."""
    await cur.execute(
        "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (STAGE_LOCK, str(workspace_id))
    )
    return await db.fetchall(
        cur,
        "SELECT id, is_default FROM ideas.roadmap_stages WHERE workspace_id = %s"
        " ORDER BY position, id",
        (workspace_id,),
    )


async def _renumber(cur: aiopg.Cursor, workspace_id: uuid.UUID, ids: list[uuid.UUID]) -> None:
    """Positions 0..n-1 in the order of `ids` (only rows whose position changes are written)."""
    await cur.execute(
        "UPDATE ideas.roadmap_stages s SET position = o.n - 1"
        " FROM unnest(%s::uuid[]) WITH ORDINALITY AS o(id, n)"
        " WHERE s.workspace_id = %s AND s.id = o.id AND s.position <> o.n - 1",
        (ids, workspace_id),
    )


def _placed(ids: list[uuid.UUID], stage_id: uuid.UUID, position: int | None) -> list[uuid.UUID]:
    """`ids` with `stage_id` at `position` (None or past the end: last)."""
    rest = [i for i in ids if i != stage_id]
    at = len(rest) if position is None else min(position, len(rest))
    return [*rest[:at], stage_id, *rest[at:]]


async def one(cur: aiopg.Cursor, workspace_id: uuid.UUID, stage_id: uuid.UUID) -> str:
    text = await db.fetchval(cur, STAGE_SQL, (workspace_id, stage_id))
    if text is None:
        raise NotFound("Roadmap stage not found")
    return str(text)


async def create(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    name: str,
    slug: str | None,
    color: str | None,
    position: int | None,
) -> str:
    rows = await lock(cur, workspace_id)
    stage_id = uuid.uuid4()
    made = await db.fetchval(
        cur,
        "INSERT INTO ideas.roadmap_stages (workspace_id, id, name, slug, color, position)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (workspace_id, slug) DO NOTHING"
        " RETURNING 1",
        (workspace_id, stage_id, name, slug or slug_from(name), color, len(rows)),
    )
    if made is None:
        raise Conflict(
            SLUG_TAKEN
            if slug is not None
            else f"{SLUG_TAKEN} ('{slug_from(name)}', made from the name): give another slug",
            field="slug",
        )
    await _renumber(cur, workspace_id, _placed([r["id"] for r in rows], stage_id, position))
    return await one(cur, workspace_id, stage_id)


async def update(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, stage_id: uuid.UUID, fields: dict[str, Any]
) -> str:
    """Change the stage: `name`, `slug`, `color` (columns), `position`, `isDefault` (true)."""
    rows = await lock(cur, workspace_id)
    ids = [r["id"] for r in rows]
    if stage_id not in ids:
        raise NotFound("Roadmap stage not found")
    sets = {col: fields[col] for col in ("name", "slug", "color") if col in fields}
    if sets:
        assign = ", ".join(f"{col} = %s" for col in sets)  # names are ours, never the client's
        try:
            await cur.execute(
                f"UPDATE ideas.roadmap_stages SET {assign} WHERE workspace_id = %s AND id = %s",
                (*sets.values(), workspace_id, stage_id),
            )
        except psycopg2.Error as err:
            if db.is_unique_violation(err):
                raise Conflict(SLUG_TAKEN, field="slug") from None
            raise
    if fields.get("isDefault"):
        await cur.execute(
            "UPDATE ideas.roadmap_stages SET is_default = (id = %s)"
            " WHERE workspace_id = %s AND is_default <> (id = %s)",
            (stage_id, workspace_id, stage_id),
        )
    if "position" in fields:
        ids = _placed(ids, stage_id, fields["position"])
    await _renumber(cur, workspace_id, ids)
    return await one(cur, workspace_id, stage_id)


async def delete(
    cur: aiopg.Cursor, who: Caller, stage_id: uuid.UUID
) -> tuple[int, list[tuple[str, str]]]:
    """Delete the stage; (ideas unstaged, their (Idea, previous stage) for the events).
    The default stage, or the only one, is 409."""
    workspace_id = who.workspace_id
    rows = await lock(cur, workspace_id)
    stage = next((r for r in rows if r["id"] == stage_id), None)
    if stage is None:
        raise NotFound("Roadmap stage not found")
    if stage["is_default"]:
        raise Conflict("The default stage cannot be deleted: make another stage the default first")
    if len(rows) == 1:
        raise Conflict("The workspace's last roadmap stage cannot be deleted")
    await cur.execute(
        "DELETE FROM ideas.roadmap_stages WHERE workspace_id = %s AND id = %s",
        (workspace_id, stage_id),
    )
    # In id order, as every change of several ideas locks them (no deadlock with a batch).
    on_stage = await db.fetchall(
        cur,
        "SELECT id FROM ideas.ideas WHERE workspace_id = %s AND roadmap_stage_id = %s"
        " ORDER BY id FOR UPDATE",
        (workspace_id, stage_id),
    )
    ideas: list[str] = []
    if on_stage:
        now = store.now_utc()
        await cur.execute(
            "UPDATE ideas.ideas i SET roadmap_stage_id = NULL, last_activity_at = %s,"
            f" updated_at = %s WHERE workspace_id = %s AND id = ANY(%s::uuid[])"
            f" RETURNING {IDEA_JSON}::text",
            (now, now, workspace_id, [r["id"] for r in on_stage]),
        )
        ideas = [r[0] for r in await cur.fetchall()]
    await _renumber(cur, workspace_id, [i for i in (r["id"] for r in rows) if i != stage_id])
    return len(ideas), [(idea, str(stage_id)) for idea in ideas]
