"""Merge and unmerge of duplicate ideas (docs/ideas.md, duplicates).

A merge runs in the caller's transaction: the duplicate's status, votes, signals and counters
move, and what moved is recorded (`ideas.merges`, `ideas.merge_votes`, `ideas.merge_signals`),
so that the unmerge gives back exactly that, even after later votes and signals. Customer links
belong to the customers service: the merge emits `merge.applied` (the unmerge `merge.reverted`)
and that service links the duplicate's customers to the primary (and records which links it
added), whose `link.*` events feed the revenue projection (services/ideas/projection.py).
"""

from __future__ import annotations

import uuid
from typing import Any

import aiopg

from libs.common import db
from libs.common.caller import Caller
from libs.common.errors import Conflict, NotFound, ValidationFailed
from libs.common.messaging import add_event

from . import end_users, ops, store
from .render import DETAIL_JSON, IDEA_JSON

LOCK = (
    "SELECT id, status, decided_at, closure_category, merged_into_id, public_vote_count,"
    " request_count FROM ideas.ideas WHERE workspace_id = %s AND id = ANY(%s)"
    " ORDER BY id FOR UPDATE"
)

# After votes or signals moved: an idea's counters from its rows.
RECOUNT = f"""UPDATE ideas.ideas i SET
    vote_count = (SELECT coalesce(sum(value), 0) FROM ideas.votes v
                   WHERE v.workspace_id = i.workspace_id AND v.idea_id = i.id),
    signal_count = greatest(i.signal_count + %(signals)s, 0),
    last_signal_at = (SELECT max(detected_at) FROM ideas.signals s
                       WHERE s.workspace_id = i.workspace_id AND s.idea_id = i.id),
    unique_source_count = (SELECT count(DISTINCT platform) FROM ideas.signals s
                            WHERE s.workspace_id = i.workspace_id AND s.idea_id = i.id),
    average_sentiment = (SELECT avg(sentiment_score) FROM ideas.signals s
                          WHERE s.workspace_id = i.workspace_id AND s.idea_id = i.id),
    public_vote_count = greatest(i.public_vote_count + %(public)s, 0),
    request_count = greatest(i.request_count + %(requests)s, 0),
    last_activity_at = now(), updated_at = now()
  WHERE i.workspace_id = %(ws)s AND i.id = %(id)s
  RETURNING {IDEA_JSON}::text, ({DETAIL_JSON})::text"""


async def _lock(cur: aiopg.Cursor, who: Caller, ids: list[uuid.UUID]) -> dict[uuid.UUID, db.Row]:
    rows = {r["id"]: r for r in await db.fetchall(cur, LOCK, (who.workspace_id, ids))}
    if len(rows) != len(set(ids)):
        raise NotFound("Idea not found")
    return rows


async def _recount(
    cur: aiopg.Cursor,
    who: Caller,
    idea_id: uuid.UUID,
    signals: int = 0,
    public: int = 0,
    requests: int = 0,
) -> tuple[str, str]:
    await cur.execute(
        RECOUNT,
        {
            "ws": who.workspace_id,
            "id": idea_id,
            "signals": signals,
            "public": public,
            "requests": requests,
        },
    )
    row = await cur.fetchone()
    return row[0], row[1]


async def _decision(
    cur: aiopg.Cursor,
    who: Caller,
    idea_id: uuid.UUID,
    kind: str,
    previous: str,
    new: str,
    closure: str | None,
    related: uuid.UUID,
) -> None:
    await cur.execute(
        "INSERT INTO ideas.decisions (workspace_id, id, idea_id, event_type, closure_category,"
        " previous_status, new_status, actor_name, source, related_idea_id)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 'api', %s)",
        (
            who.workspace_id,
            uuid.uuid4(),
            idea_id,
            kind,
            closure,
            previous,
            new,
            who.key_name,
            related,
        ),
    )


async def _events(
    cur: aiopg.Cursor, who: Caller, duplicate: str, previous: str, primary: str
) -> None:
    await ops.emit(cur, who, "idea.status_changed", duplicate, previousStatus=previous)
    await ops.emit(cur, who, "idea.updated", duplicate)
    await ops.emit(cur, who, "idea.updated", primary)


async def merge(
    cur: aiopg.Cursor, who: Caller, dup_id: uuid.UUID, into_id: uuid.UUID
) -> dict[str, Any]:
    if dup_id == into_id:
        raise ValidationFailed("intoId: an idea cannot be merged into itself", field="intoId")
    rows = await _lock(cur, who, [dup_id, into_id])
    dup, primary = rows[dup_id], rows[into_id]
    if "deleted" in (dup["status"], primary["status"]):
        raise Conflict("A deleted idea cannot be merged")
    if dup["merged_into_id"] is not None:
        raise Conflict("The idea is already merged into another idea")
    if primary["merged_into_id"] is not None:
        raise Conflict("The primary idea is itself merged into another idea")
    ws, merge_id = who.workspace_id, uuid.uuid4()
    await cur.execute(
        "INSERT INTO ideas.merges (workspace_id, id, duplicate_id, primary_id, previous_status,"
        " previous_decided_at, previous_closure, public_vote_count, request_count)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            ws,
            merge_id,
            dup_id,
            into_id,
            dup["status"],
            dup["decided_at"],
            dup["closure_category"],
            dup["public_vote_count"],
            dup["request_count"],
        ),
    )
    # Votes: every one the duplicate has is recorded; those whose voter has none on the
    # primary move there (tagged with this merge until the voter votes again).
    await cur.execute(
        "INSERT INTO ideas.merge_votes (merge_id, voter, value, created_at, origin_merge, moved)"
        " SELECT %s, d.voter, d.value, d.created_at, d.merge_id, NOT EXISTS (SELECT 1"
        "   FROM ideas.votes p WHERE p.workspace_id = d.workspace_id AND p.idea_id = %s"
        "    AND p.voter = d.voter)"
        " FROM ideas.votes d WHERE d.workspace_id = %s AND d.idea_id = %s",
        (merge_id, into_id, ws, dup_id),
    )
    await cur.execute(
        "INSERT INTO ideas.votes (workspace_id, idea_id, voter, value, created_at, merge_id)"
        " SELECT %s, %s, voter, value, created_at, %s FROM ideas.merge_votes"
        " WHERE merge_id = %s AND moved",
        (ws, into_id, merge_id, merge_id),
    )
    await cur.execute(
        "DELETE FROM ideas.votes WHERE workspace_id = %s AND idea_id = %s", (ws, dup_id)
    )
    # Signals.
    await cur.execute(
        "WITH moved AS (UPDATE ideas.signals SET idea_id = %s WHERE workspace_id = %s"
        " AND idea_id = %s RETURNING id)"
        " INSERT INTO ideas.merge_signals (merge_id, signal_id) SELECT %s, id FROM moved",
        (into_id, ws, dup_id, merge_id),
    )
    moved_signals = cur.rowcount
    # The duplicate: status, mergedIntoId, its counters to zero.
    sets = store.status_change(dup, "duplicate", store.now_utc())
    await store.write_idea(
        cur,
        ws,
        dup_id,
        {**sets, "merged_into_id": into_id, "public_vote_count": 0, "request_count": 0},
    )
    await _decision(
        cur, who, dup_id, "merged", dup["status"], "duplicate", sets["closure_category"], into_id
    )
    dup_idea, dup_detail = await _recount(cur, who, dup_id, signals=-moved_signals)
    p_idea, p_detail = await _recount(
        cur,
        who,
        into_id,
        signals=moved_signals,
        public=dup["public_vote_count"],
        requests=dup["request_count"],
    )
    # The users whose votes moved (or stayed behind): the customers service follows them.
    await end_users.resync(
        cur, ws, [dup_id, into_id], await end_users.users_of_merge(cur, merge_id), who.request_id
    )
    await add_event(
        cur,
        "ideas",
        "merge.applied",
        ws,
        {"mergeId": str(merge_id), "duplicateId": str(dup_id), "primaryId": str(into_id)},
        who.request_id,
    )
    await _events(cur, who, dup_idea, dup["status"], p_idea)
    return {"primary": ops.fragment(p_detail), "duplicate": ops.fragment(dup_detail)}


async def unmerge(cur: aiopg.Cursor, who: Caller, dup_id: uuid.UUID) -> dict[str, Any]:
    ws = who.workspace_id
    into_id = await db.fetchval(
        cur,
        "SELECT merged_into_id FROM ideas.ideas WHERE workspace_id = %s AND id = %s",
        (ws, dup_id),
    )
    if into_id is None:
        await _lock(cur, who, [dup_id])  # 404 when absent
        raise Conflict("The idea is not merged")
    rows = await _lock(cur, who, [dup_id, into_id])
    dup, primary = rows[dup_id], rows[into_id]
    if dup["merged_into_id"] != into_id:
        raise Conflict("The idea's merge changed meanwhile; try again")
    if primary["merged_into_id"] is not None:
        raise Conflict("The primary idea is now merged into another idea: unmerge it first")
    m = await db.fetchone(
        cur,
        "SELECT * FROM ideas.merges WHERE workspace_id = %s AND duplicate_id = %s"
        " AND undone_at IS NULL FOR UPDATE",
        (ws, dup_id),
    )
    assert m is not None  # merged_into_id is only set with its merge row
    merge_id = m["id"]
    # Votes the merge moved leave the primary unless their voter voted there since.
    await cur.execute(
        "DELETE FROM ideas.votes WHERE workspace_id = %s AND idea_id = %s AND merge_id = %s",
        (ws, into_id, merge_id),
    )
    await cur.execute(
        "INSERT INTO ideas.votes (workspace_id, idea_id, voter, value, created_at, merge_id)"
        " SELECT %s, %s, voter, value, created_at, origin_merge FROM ideas.merge_votes"
        " WHERE merge_id = %s ON CONFLICT (workspace_id, idea_id, voter) DO NOTHING",
        (ws, dup_id, merge_id),
    )
    await cur.execute(
        "UPDATE ideas.signals s SET idea_id = %s FROM ideas.merge_signals ms"
        " WHERE ms.merge_id = %s AND s.id = ms.signal_id AND s.workspace_id = %s",
        (dup_id, merge_id, ws),
    )
    moved_signals = cur.rowcount
    await store.write_idea(
        cur,
        ws,
        dup_id,
        {
            "status": m["previous_status"],
            "decided_at": m["previous_decided_at"],
            "closure_category": m["previous_closure"],
            "merged_into_id": None,
        },
    )
    await _decision(
        cur,
        who,
        dup_id,
        "unmerged",
        dup["status"],
        m["previous_status"],
        m["previous_closure"],
        into_id,
    )
    dup_idea, dup_detail = await _recount(
        cur,
        who,
        dup_id,
        signals=moved_signals,
        public=m["public_vote_count"],
        requests=m["request_count"],
    )
    p_idea, p_detail = await _recount(
        cur,
        who,
        into_id,
        signals=-moved_signals,
        public=-m["public_vote_count"],
        requests=-m["request_count"],
    )
    await cur.execute(
        "UPDATE ideas.merges SET undone_at = clock_timestamp() WHERE id = %s", (merge_id,)
    )
    await end_users.resync(
        cur, ws, [dup_id, into_id], await end_users.users_of_merge(cur, merge_id), who.request_id
    )
    await add_event(
        cur,
        "ideas",
        "merge.reverted",
        ws,
        {"mergeId": str(merge_id), "duplicateId": str(dup_id), "primaryId": str(into_id)},
        who.request_id,
    )
    await _events(cur, who, dup_idea, dup["status"], p_idea)
    return {"primary": ops.fragment(p_detail), "duplicate": ops.fragment(dup_detail)}
