"""The automation API's ideas: recent list, duplicate rules with their Signal, monthly quota.

The duplicate rules, first match decides: the same normalised url, else the same folded title
within 30 days (without a url), else (without a url) the most similar idea by meaning when its
similarity reaches `DUPLICATE_SIMILARITY` (docs/similar.md). None matches a deleted idea or a
merged duplicate.

A create runs in two steps (docs/ideas.md, "Automation duplicates"): `precheck`, with no
transaction open, says whether meaning must be asked at all (no url, no duplicate by url or
title, the quota not yet reached), and the handler asks the similar service then
(`by_meaning`, through the peer client), holding no connection; `create` is the transaction of
the writes, which applies the rules again under the key's lock and takes the quota.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import aiopg

from libs.api.ideas.requests import AutomationCreateIdea
from libs.api.plans import AUTOMATION_QUOTA
from libs.common import db
from libs.common.caller import Caller
from libs.common.errors import AutomationLimitReached
from libs.common.peers import Peers

from . import ops, store
from .render import IDEA_JSON, SIGNAL_JSON

# One automation list item per row, newest first (row_to_json: compact, keys in this order).
LIST_SQL = """SELECT row_to_json(x)::text FROM (SELECT i.id, i.title, i.summary, i.source,
   i.author_name AS "authorName", i.url, ims_json_ts(i.created_at) AS "createdAt"
   FROM ideas.ideas i WHERE i.workspace_id = %s AND i.status <> 'deleted'
   ORDER BY i.created_at DESC, i.id DESC LIMIT %s) x"""


def normalize_url(url: str) -> str:
    """Scheme and host lowercased; fragment, trailing slash and utm_* parameters dropped.

    The url is free text: one that cannot be split (e.g. an unclosed `[`) is its own key."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not k.lower().startswith("utm_")
    ]
    return urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), urlencode(query), "")
    )


async def recent(cur: aiopg.Cursor, who: Caller, limit: int) -> list[str]:
    await cur.execute(LIST_SQL, (who.workspace_id, limit))
    return [r[0] for r in await cur.fetchall()]


async def find_duplicate(
    cur: aiopg.Cursor, who: Caller, url_key: str | None, title: str, lock: bool = True
) -> uuid.UUID | None:
    # Serialize creates of the same key, so two identical posts cannot both create (`lock`:
    # in the creating transaction; the precheck's read takes none).
    key = url_key or store.fold_title(title)
    if lock:
        await cur.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (f"{who.workspace_id}:{key}",),
        )
    if url_key is not None:
        sql = (
            "SELECT id FROM ideas.ideas WHERE workspace_id = %s AND url_key = %s"
            " AND status <> 'deleted' AND merged_into_id IS NULL ORDER BY created_at LIMIT 1"
        )
        return await db.fetchval(cur, sql, (who.workspace_id, url_key))
    sql = (
        "SELECT id FROM ideas.ideas WHERE workspace_id = %s AND title_key = %s"
        " AND created_at >= now() - interval '30 days' AND status <> 'deleted'"
        " AND merged_into_id IS NULL ORDER BY created_at LIMIT 1"
    )
    return await db.fetchval(cur, sql, (who.workspace_id, store.fold_title(title)))


async def record_signal(
    cur: aiopg.Cursor,
    who: Caller,
    idea_id: uuid.UUID,
    body: AutomationCreateIdea,
    similarity: float = 1.0,
) -> None:
    """The duplicate's Signal on the existing idea, its counters, and idea.signal_detected."""
    await cur.execute(
        "INSERT INTO ideas.signals AS s (workspace_id, id, idea_id, platform, user_id, user_name,"
        " content, similarity) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        f" RETURNING {SIGNAL_JSON}::text",
        (
            who.workspace_id,
            uuid.uuid4(),
            idea_id,
            body.source or "api",
            body.authorId,
            body.authorName,
            body.summary or body.title,
            similarity,
        ),
    )
    signal = (await cur.fetchone())[0]
    await cur.execute(
        "UPDATE ideas.ideas i SET signal_count = signal_count + 1, last_signal_at = now(),"
        " last_activity_at = now(), unique_source_count = (SELECT count(DISTINCT platform)"
        "   FROM ideas.signals s WHERE s.workspace_id = i.workspace_id AND s.idea_id = i.id)"
        f" WHERE workspace_id = %s AND id = %s RETURNING {IDEA_JSON}::text",
        (who.workspace_id, idea_id),
    )
    idea = (await cur.fetchone())[0]
    await ops.emit(cur, who, "idea.signal_detected", idea, signal=ops.fragment(signal))


async def take_quota(cur: aiopg.Cursor, who: Caller) -> None:
    """Count one automation idea this UTC month; 403 limit_exceeded past the plan's quota (the
    transaction rolls back, so a refused call uses nothing)."""
    quota = AUTOMATION_QUOTA.get(who.plan)
    month = datetime.now(UTC).date().replace(day=1)
    used = await db.fetchval(
        cur,
        "INSERT INTO ideas.automation_usage AS u (workspace_id, month, n) VALUES (%s, %s, 1)"
        " ON CONFLICT (workspace_id, month) DO UPDATE SET n = u.n + 1 RETURNING n",
        (who.workspace_id, month),
    )
    if quota is not None and used > quota:
        raise AutomationLimitReached(
            f"Monthly automation quota of {quota} ideas reached", code="limit_exceeded"
        )


async def quota_reached(cur: aiopg.Cursor, who: Caller) -> bool:
    """Whether this UTC month's automation ideas already reached the plan's quota (a read: the
    count that decides is `take_quota`'s, in the creating transaction)."""
    quota = AUTOMATION_QUOTA.get(who.plan)
    if quota is None:
        return False
    month = datetime.now(UTC).date().replace(day=1)
    used = await db.fetchval(
        cur,
        "SELECT n FROM ideas.automation_usage WHERE workspace_id = %s AND month = %s",
        (who.workspace_id, month),
    )
    return used is not None and used >= quota


async def precheck(cur: aiopg.Cursor, who: Caller, body: AutomationCreateIdea) -> bool:
    """Whether the meaning rule is worth asking, read outside any transaction: the request has
    no url, neither the url nor the title rule matches, and a new idea would be within the
    quota. The model runs only then, with no connection held."""
    if body.url:
        return False
    if await find_duplicate(cur, who, None, body.title, lock=False) is not None:
        return False
    return not await quota_reached(cur, who)


async def by_meaning(
    peers: Peers, who: Caller, body: AutomationCreateIdea, threshold: float
) -> list[tuple[uuid.UUID, float]]:
    """The meaning rule's candidates: the ideas `POST /ideas/similar` answers for the request's
    title and summary, best first, at or above `threshold`, each with the similarity that
    search answers (the similar service's internal route: one search, one number,
    docs/similar.md). Asked with no transaction open; the similar service unreachable is 503."""
    found = await peers.data(
        who,
        "similar",
        "POST",
        "/internal/similar/duplicates",
        json={"title": body.title, "summary": body.summary, "minSimilarity": threshold},
    )
    return [(uuid.UUID(f["id"]), float(f["similarity"])) for f in found]


async def still_eligible(cur: aiopg.Cursor, who: Caller, idea_id: uuid.UUID) -> bool:
    """Whether the meaning rule's idea may still take the Signal (neither deleted nor merged
    since the check). Its row is locked as the Signal's update will lock it (FOR NO KEY
    UPDATE: a share lock would deadlock two Signals on one idea, each waiting for the other's
    share to update), so no merge or delete slips between the check and the Signal."""
    found = await db.fetchval(
        cur,
        "SELECT 1 FROM ideas.ideas WHERE workspace_id = %s AND id = %s AND status <> 'deleted'"
        " AND merged_into_id IS NULL FOR NO KEY UPDATE",
        (who.workspace_id, idea_id),
    )
    return found is not None


async def create(
    cur: aiopg.Cursor,
    who: Caller,
    body: AutomationCreateIdea,
    close: Sequence[tuple[uuid.UUID, float]] = (),
) -> str | None:
    """The new idea's JSON, or None when it was a duplicate (a Signal was recorded instead).
    `close` is the meaning rule's answer, found before the transaction: the ideas at or above
    the threshold, most similar first, with their similarity (the third rule). The first that
    is neither deleted nor merged takes the Signal: the idea the search answers first, which
    leaves out what the ideas service says has left."""
    url_key = normalize_url(body.url) if body.url else None
    existing = await find_duplicate(cur, who, url_key, body.title)
    if existing is not None:
        await record_signal(cur, who, existing, body)
        return None
    # Like the title rule, meaning decides for a request without a url: different urls are
    # different items, however alike their titles. An idea deleted or merged since the check
    # no longer matches (a request is never hidden in an idea that left).
    if url_key is None:
        for idea_id, similarity in close:
            if await still_eligible(cur, who, idea_id):
                await record_signal(cur, who, idea_id, body, similarity)
                return None
    await take_quota(cur, who)
    item = store.NewIdea(
        store.columns(body.model_dump(include={"title", "summary", "url"}))
        | {"source": body.source or "api"},
        url_key=url_key,
        author_name=body.authorName,
        author_id=body.authorId,
    )
    return (await ops.create(cur, who, [item]))[0]
