"""The similar service's writes (docs/similar.md): its copy of the ideas from the events it
consumes (`apply_ideas`), the embeddings that follow the copy's text and state
(`upsert_embeddings`), the embedder's catch-up at start (`catch_up`), and the admin's backfill
and rebuild (`ideasctl similar rebuild`).

The copy, `similar.ideas`, holds of each idea what the searches need: its title, summary,
status and the idea it is merged into. Each row keeps the `version` of the event it came from
(the event's place in the ideas service's outbox, `x-event-seq`): an event applies only when it
is not older than the row, so a redelivered or overtaken event never brings back an older
state, and a repeat changes nothing. Every write of `similar.embeddings` takes a new `seq` and
notifies `similar_index`, from which the search processes keep their indexes current.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import aiopg
import numpy as np

from libs.common import db

from .embedding import (
    DEFAULT_MODEL,
    Embedder,
    StaticEmbedder,
    idea_text,
    make_embedder,
    quantize,
)
from .index import ELIGIBLE, text_hash

NOTIFY = "NOTIFY similar_index"


# ---- the copy: the newest state of each idea the events told of --------------------------------


@dataclass(frozen=True)
class IdeaState:
    """What the service keeps of an idea, as an event's Idea carries it."""

    workspace_id: uuid.UUID
    idea_id: uuid.UUID
    title: str
    summary: str | None
    status: str
    merged_into_id: uuid.UUID | None
    version: int  # the event's place in the ideas outbox; 0: unknown (a backfill, an old event)

    @property
    def key(self) -> tuple[uuid.UUID, uuid.UUID]:
        return (self.workspace_id, self.idea_id)

    @classmethod
    def of_event(cls, event: Mapping[str, Any], version: int) -> IdeaState | None:
        """The state an event's `data.idea` carries; None for an event without an Idea."""
        idea = (event.get("data") or {}).get("idea")
        if not isinstance(idea, dict) or "id" not in idea or "title" not in idea:
            return None
        merged = idea.get("mergedIntoId")
        return cls(
            uuid.UUID(str(event["workspaceId"])),
            uuid.UUID(str(idea["id"])),
            idea["title"],
            idea.get("summary"),
            idea.get("status") or "new",
            uuid.UUID(str(merged)) if merged else None,
            version,
        )


def newest(states: Iterable[IdeaState]) -> list[IdeaState]:
    """One state an idea, its newest (the highest version; of equal ones, the last given), in
    key order: one statement cannot write a row twice, and rows locked in one order cannot
    deadlock two embedders."""
    out: dict[tuple[uuid.UUID, uuid.UUID], IdeaState] = {}
    for state in states:
        held = out.get(state.key)
        if held is None or held.version <= state.version:
            out[state.key] = state
    return [out[k] for k in sorted(out)]


async def apply_ideas(pool: aiopg.Pool, states: Iterable[IdeaState]) -> int:
    """Bring `similar.ideas` to these states, each where it is not older than the row's (one
    transaction); the rows written."""
    rows = newest(states)
    if not rows:
        return 0
    async with db.transaction(pool) as cur:
        await cur.execute(
            'INSERT INTO "similar".ideas AS s (workspace_id, idea_id, title, summary, status,'
            " merged_into_id, version) SELECT * FROM unnest(%s::uuid[], %s::uuid[], %s::text[],"
            " %s::text[], %s::text[], %s::uuid[], %s::bigint[]) ON CONFLICT (workspace_id,"
            " idea_id) DO UPDATE SET title = EXCLUDED.title, summary = EXCLUDED.summary,"
            " status = EXCLUDED.status, merged_into_id = EXCLUDED.merged_into_id,"
            " version = EXCLUDED.version, updated_at = now() WHERE s.version <= EXCLUDED.version",
            (
                [str(r.workspace_id) for r in rows],
                [str(r.idea_id) for r in rows],
                [r.title for r in rows],
                [r.summary for r in rows],
                [r.status for r in rows],
                [str(r.merged_into_id) if r.merged_into_id else None for r in rows],
                [r.version for r in rows],
            ),
        )
        return int(cur.rowcount)


# ---- the embedder's writes: an idea's embedding follows its text and state --------------------


async def upsert_embeddings(
    pool: aiopg.Pool,
    embed: Callable[[list[str]], Awaitable[np.ndarray]],
    ideas: list[tuple[Any, Any]],
    model_id: str,
    join: str = ". ",
) -> int:
    """Bring the rows in `similar.embeddings` of these (workspace id, idea id) to the copy's
    current text and state; the rows written. The model runs with no transaction open; a
    row is written only if its idea's text is still the one embedded (an event applied since
    has a batch of its own), with the state read under a lock, in one transaction."""
    ideas = sorted({(str(w), str(i)) for w, i in ideas})
    keys = ([w for w, _ in ideas], [i for _, i in ideas])
    async with db.cursor(pool) as cur:
        rows = await db.fetchall(
            cur,
            f"SELECT i.workspace_id, i.idea_id, i.title, i.summary, ({ELIGIBLE}) AS live,"
            ' e.text_hash, e.live AS was_live FROM "similar".ideas i'
            ' LEFT JOIN "similar".embeddings e ON e.workspace_id = i.workspace_id'
            " AND e.idea_id = i.idea_id WHERE (i.workspace_id, i.idea_id) IN"
            " (SELECT * FROM unnest(%s::uuid[], %s::uuid[]))",
            keys,
        )
    todo: dict[tuple[uuid.UUID, uuid.UUID], tuple[bytes, str | None]] = {}
    for r in rows:
        text = idea_text(r["title"], r["summary"], join)
        digest = text_hash(model_id, text)
        same_text = r["text_hash"] is not None and bytes(r["text_hash"]) == digest
        if not same_text or r["was_live"] != r["live"]:  # else only a vote, a score, a repeat
            todo[(r["workspace_id"], r["idea_id"])] = (digest, None if same_text else text)
    if not todo:
        return 0
    texts = [t for _, t in todo.values() if t is not None]
    vectors = iter(quantize(await embed(texts)) if texts else [])
    fresh = {key: next(vectors) for key, (_, t) in todo.items() if t is not None}
    written = 0
    async with db.transaction(pool) as cur:
        now = await db.fetchall(
            cur,
            f"SELECT i.workspace_id, i.idea_id, i.title, i.summary, ({ELIGIBLE}) AS live"
            ' FROM "similar".ideas i WHERE (i.workspace_id, i.idea_id) IN'
            " (SELECT * FROM unnest(%s::uuid[], %s::uuid[])) ORDER BY i.idea_id FOR SHARE",
            ([str(w) for w, _ in todo], [str(i) for _, i in todo]),
        )
        for r in now:
            key = (r["workspace_id"], r["idea_id"])
            digest, _ = todo[key]
            if text_hash(model_id, idea_text(r["title"], r["summary"], join)) != digest:
                continue
            vec = fresh.get(key)
            if vec is None:
                await cur.execute(
                    'UPDATE "similar".embeddings SET live = %s, seq = nextval('
                    "'similar.embedding_seq'), updated_at = now() WHERE workspace_id = %s"
                    " AND idea_id = %s AND live <> %s",
                    (r["live"], key[0], key[1], r["live"]),
                )
            else:
                await cur.execute(
                    'INSERT INTO "similar".embeddings AS e (workspace_id, idea_id, vector,'
                    " text_hash, live) VALUES (%s, %s, %s, %s, %s) ON CONFLICT (workspace_id,"
                    " idea_id) DO UPDATE SET vector = EXCLUDED.vector, text_hash ="
                    " EXCLUDED.text_hash, live = EXCLUDED.live, seq ="
                    " nextval('similar.embedding_seq'), updated_at = now()",
                    (key[0], key[1], vec.tobytes(), digest, r["live"]),
                )
            written += cur.rowcount
        if written:
            await cur.execute(NOTIFY)
    return written


# ---- catching up: rows of another model, ideas with none -----------------------------------

CATCH_UP_LOCK = 0x1D5_5E4  # the advisory lock one embedder at a time catches up under
CATCH_UP_BATCH = 256
# The ideas of the copy (by id, past a point) whose row is missing or was computed from another
# model or text: `text_hash` computed in SQL as in Python (sha256 of the model, a newline, the
# text, its title and summary joined by the model's join).
STALE_SQL = (
    'SELECT i.workspace_id, i.idea_id FROM "similar".ideas i LEFT JOIN "similar".embeddings e'
    " ON e.workspace_id = i.workspace_id AND e.idea_id = i.idea_id WHERE i.idea_id > %s"
    " AND e.text_hash IS DISTINCT FROM substring(sha256(convert_to(%s || E'\\n' ||"
    " CASE WHEN coalesce(i.summary, '') = '' THEN i.title ELSE i.title || %s || i.summary END,"
    " 'UTF8')) FROM 1 FOR 16) ORDER BY i.idea_id LIMIT %s"
)


async def catch_up(
    pool: aiopg.Pool,
    embed: Callable[[list[str]], Awaitable[np.ndarray]],
    model_id: str,
    join: str = ". ",
) -> int | None:
    """Embed, with the current model, every idea of the copy whose row is missing or stale:
    after the model changed (SIMILAR_MODEL), or ideas the backfill copied. One embedder at a
    time (an advisory lock; None when another holds it), in batches through
    `upsert_embeddings`, in one pass over the ideas by id; the ideas embedded."""
    async with pool.acquire() as conn, conn.cursor() as lock:
        await lock.execute("SELECT pg_try_advisory_lock(%s)", (CATCH_UP_LOCK,))
        if not (await lock.fetchone())[0]:
            return None
        try:
            done, after = 0, uuid.UUID(int=0)
            while True:
                await lock.execute(STALE_SQL, (after, model_id, join, CATCH_UP_BATCH))
                stale = await lock.fetchall()
                if not stale:
                    return done
                await upsert_embeddings(pool, embed, [(w, i) for w, i in stale], model_id, join)
                done, after = done + len(stale), stale[-1][1]
        finally:
            await lock.execute("SELECT pg_advisory_unlock(%s)", (CATCH_UP_LOCK,))


# ---- the admin's backfill and rebuild (ideasctl similar rebuild) ------------------------------


def backfill(conn: Any, rows: Iterable[tuple[Any, ...]], batch: int = 1000) -> int:
    """Copy ideas into `similar.ideas` (psycopg2; commits a batch at a time): (workspace id,
    idea id, title, summary, status, merged into) as the ideas service holds them, for ideas
    that existed before the service, or were written without events (`ideasctl seed`, a
    restore). Each comes in at version 0: it takes the place of a row of an earlier backfill,
    never of a row an event wrote (an event is as new as the read or newer), and the next
    event of the idea replaces it. The rows written."""
    written, part = 0, []
    for row in rows:
        part.append(row)
        if len(part) == batch:
            written += _backfill(conn, part)
            part = []
    if part:
        written += _backfill(conn, part)
    return written


def _backfill(conn: Any, rows: list[tuple[Any, ...]]) -> int:
    with conn, conn.cursor() as cur:
        cur.execute(
            'INSERT INTO "similar".ideas AS s (workspace_id, idea_id, title, summary, status,'
            " merged_into_id, version) SELECT w, i, t, su, st, m, 0 FROM unnest(%s::uuid[],"
            " %s::uuid[], %s::text[], %s::text[], %s::text[], %s::uuid[]) AS x(w, i, t, su, st, m)"
            " ORDER BY w, i ON CONFLICT (workspace_id, idea_id) DO UPDATE SET title ="
            " EXCLUDED.title, summary = EXCLUDED.summary, status = EXCLUDED.status,"
            " merged_into_id = EXCLUDED.merged_into_id, updated_at = now() WHERE s.version = 0",
            (
                [str(r[0]) for r in rows],
                [str(r[1]) for r in rows],
                [r[2] for r in rows],
                [r[3] for r in rows],
                [r[4] for r in rows],
                [str(r[5]) if r[5] is not None else None for r in rows],
            ),
        )
        return int(cur.rowcount)


def rebuild(
    conn: Any,
    workspace_id: str | None = None,
    batch: int = 32,
    embedder: Embedder | StaticEmbedder | None = None,
) -> dict[str, int]:
    """Compute the embedding of every idea of the copy again (psycopg2; commits a batch at a
    time) with `embedder` (by default the default model's), and notify the search processes."""
    embedder = embedder or make_embedder(DEFAULT_MODEL)
    counts = {"ideas": 0, "embedded": 0}
    with conn.cursor() as cur:
        cur.execute(
            f"SELECT i.workspace_id, i.idea_id, i.title, i.summary, ({ELIGIBLE})"
            ' FROM "similar".ideas i WHERE %(ws)s::uuid IS NULL OR i.workspace_id = %(ws)s'
            " ORDER BY i.workspace_id, i.idea_id",
            {"ws": workspace_id},
        )
        rows = cur.fetchall()
    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        texts = [idea_text(r[2], r[3], embedder.join) for r in part]
        vecs = quantize(embedder.embed(texts))
        with conn, conn.cursor() as cur:
            for r, t, v in zip(part, texts, vecs, strict=True):
                cur.execute(
                    'INSERT INTO "similar".embeddings AS e (workspace_id, idea_id, vector,'
                    " text_hash, live) VALUES (%s, %s, %s, %s, %s)"
                    " ON CONFLICT (workspace_id, idea_id) DO UPDATE SET vector = EXCLUDED.vector,"
                    " text_hash = EXCLUDED.text_hash, live = EXCLUDED.live,"
                    " seq = nextval('similar.embedding_seq'), updated_at = now()",
                    (r[0], r[1], v.tobytes(), text_hash(embedder.model_id, t), r[4]),
                )
            cur.execute(NOTIFY)
        counts["ideas"] += len(part)
        counts["embedded"] += len(part)
    return counts
