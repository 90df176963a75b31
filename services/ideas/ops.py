"""Idea changes with their events: the layer above `store.py`.

`store` reads and writes the rows and knows no event; each function here makes one change the
API offers (create, update, status, vote, assign) through `store`, checks what it needs, and
adds the change's outbox rows with `emit`. Each runs inside the caller's transaction, so the
change and its outbox rows commit together (docs/webhooks.md payloads: `{"idea": Idea}` plus
extras)."""

from __future__ import annotations

import math
import uuid
from typing import Any

import aiopg
import orjson

from libs.api.ideas.requests import UpdateIdeaRequest
from libs.api.webhooks.events import AUTHOR_HEADER
from libs.common import db
from libs.common.caller import Caller
from libs.common.errors import NotFound, ValidationFailed
from libs.common.messaging import add_event

from . import end_users, evidence, members, products, store, tags
from .render import IDEA_JSON, fragment


async def emit(
    cur: aiopg.Cursor,
    who: Caller,
    event_type: str,
    idea: str,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> None:
    await add_event(
        cur,
        "ideas",
        event_type,
        who.workspace_id,
        {"idea": fragment(idea), **extra},
        who.request_id,
        headers,
    )


def initial_status(who: Caller) -> str:
    return "captured" if who.inbox_mode == "review" else "new"


async def create(cur: aiopg.Cursor, who: Caller, items: list[store.NewIdea]) -> list[str]:
    await tags.check(cur, who.workspace_id, [t for item in items for t in item.tag_ids])
    await products.check(
        cur, who.workspace_id, [i.product_id for i in items if i.product_id is not None]
    )
    owners: dict[uuid.UUID, dict[str, Any]] = {}
    for owner_id in sorted({i.decision_owner_id for i in items if i.decision_owner_id}):
        owners[owner_id] = await members.owner_columns(cur, who.workspace_id, owner_id)
    for item in items:
        if item.decision_owner_id is not None:
            item.owner = owners[item.decision_owner_id]
    # The users the ideas are asked for on behalf of, held (and not erased) until the commit.
    asking = [i.vote_user for i in items if i.vote_user]
    await end_users.hold_users(cur, who.workspace_id, asking)
    if asking:  # confirmed by the caller's lookup: their votes need none
        await end_users.remember(cur, who.workspace_id, asking)
    ideas = await store.create_ideas(cur, who.workspace_id, initial_status(who), items)
    owned = [  # the decision owner is the owner participant
        evidence.NewParticipant(uuid.UUID(orjson.loads(idea)["id"]), item.decision_owner_id)
        for item, idea in zip(items, ideas, strict=True)
        if item.decision_owner_id is not None
    ]
    await evidence.make_owners(cur, who.workspace_id, owned)
    for item, idea in zip(items, ideas, strict=True):
        idea_id = uuid.UUID(orjson.loads(idea)["id"])
        # The author rides beside the body, for the automation payload (docs/webhooks.md).
        author = {AUTHOR_HEADER: item.author_name} if item.author_name is not None else None
        await emit(cur, who, "idea.created", idea, author)
        if item.vote_user is not None:  # the asking user's +1 (store.create_ideas)
            voter = end_users.voter(item.vote_user)
            await emit(cur, who, "idea.voted", idea, vote={"voter": voter, "value": 1})
            await end_users.vote_changed(
                cur, who.workspace_id, idea_id, item.vote_user, 1, who.request_id
            )
    return ideas


async def update(
    cur: aiopg.Cursor,
    who: Caller,
    idea_id: uuid.UUID,
    body: UpdateIdeaRequest,
    url_key: str | None = None,
) -> str:
    """Apply a PATCH; `url_key` is the normalized `url` (duplicate detection) when it is given."""
    row = (await store.lock_ideas(cur, who.workspace_id, [idea_id]))[idea_id]
    given = body.model_dump(include=body.model_fields_set)
    sets = store.columns(given)
    if "title" in sets:
        sets["title_key"] = store.fold_title(sets["title"])
    if "url" in sets:
        sets["url_key"] = url_key
    scored = any(name in given for name in store.RICE_FIELDS)
    if scored:
        sets.update(rice_sets(row, given))
    changed = "status" in given and given["status"] != row["status"]
    if "closureCategory" in given and not (changed and given["status"] in store.DECIDED):
        raise ValidationFailed(
            "closureCategory: only with a change of status to shipped, rejected, duplicate or"
            " archived",
            field="closureCategory",
        )
    if changed:
        sets.update(store.status_change(row, given["status"], store.now_utc()))
        if "closureCategory" in given:
            sets["closure_category"] = given["closureCategory"]
    # The records the body names, after its own checks (a 400 before any 404), each held
    # until the commit (docs/ideas.md: products, members, tags).
    if given.get("productId") is not None:
        await products.check(cur, who.workspace_id, [given["productId"]])
    if "decisionOwnerId" in given:
        sets.update(await members.owner_columns(cur, who.workspace_id, given["decisionOwnerId"]))
        await evidence.sync_owner(cur, who.workspace_id, idea_id, given["decisionOwnerId"])
    if body.tagIds is not None:  # before the write: its IdeaDetail shows the new set
        await tags.check(cur, who.workspace_id, body.tagIds)
        await tags.replace(cur, who.workspace_id, idea_id, body.tagIds)
    idea, detail = await store.write_idea(cur, who.workspace_id, idea_id, sets)
    if changed:
        await store.add_decision(
            cur,
            who.workspace_id,
            idea_id,
            row["status"],
            given["status"],
            sets.get("closure_category"),
            given.get("decisionReason"),
            who.key_name,
        )
        await emit(cur, who, "idea.status_changed", idea, previousStatus=row["status"])
        if given["status"] == "deleted":
            await emit(cur, who, "idea.deleted", idea)
    if scored:
        await emit(cur, who, "idea.scored", idea)
    await emit(cur, who, "idea.updated", idea)
    return detail


def rice_sets(row: db.Row, given: dict[str, Any]) -> dict[str, Any]:
    values = {
        col: given[name] if name in given else row[col] for name, col in store.RICE_FIELDS.items()
    }
    score = store.rice_score(
        values["rice_reach"],
        values["rice_impact"],
        values["rice_confidence"],
        values["rice_effort"],
    )
    if score is not None and not math.isfinite(score):
        # The score must stay a JSON number: refuse inputs whose product overflows a double.
        field = next(name for name in store.RICE_FIELDS if name in given)
        raise ValidationFailed(f"{field}: the RICE score would not be a finite number", field=field)
    return {
        **values,
        "rice_score": score,
        "rice_priority": store.rice_priority(score),
        "rice_source": "manual",
    }


async def set_status(
    cur: aiopg.Cursor, who: Caller, ids: list[uuid.UUID], status: str, reason: str | None
) -> list[dict[str, Any]]:
    """Batch status (and delete): all ideas or none; one decision per idea that changed."""
    rows = await store.lock_ideas(cur, who.workspace_id, ids)
    out = []
    for idea_id in ids:
        row = rows[idea_id]
        out.append({"id": idea_id, "previousStatus": row["status"], "status": status})
        if row["status"] == status:
            continue
        sets = store.status_change(row, status, store.now_utc())
        if reason is not None:
            sets["decision_reason"] = reason
        idea, _ = await store.write_idea(cur, who.workspace_id, idea_id, sets)
        await store.add_decision(
            cur,
            who.workspace_id,
            idea_id,
            row["status"],
            status,
            sets.get("closure_category"),
            reason,
            who.key_name,
        )
        row["status"] = status  # a repeated id in the same call is no second change
        await emit(cur, who, "idea.status_changed", idea, previousStatus=out[-1]["previousStatus"])
        if status == "deleted":
            await emit(cur, who, "idea.deleted", idea)
    return out


async def vote(
    cur: aiopg.Cursor,
    who: Caller,
    idea_id: uuid.UUID,
    voter: str,
    value: int,
    user_id: uuid.UUID | None = None,
    looked_up: bool = False,
) -> dict[str, Any]:
    """`voter`'s vote; with `user_id` (voter `user:<userId>`, known or `looked_up` by the
    caller), the user is held first (404 once erased) and `vote.changed` goes to the
    customers service."""
    if user_id is not None:
        await end_users.hold_users(cur, who.workspace_id, [user_id])
        if looked_up:
            await end_users.remember(cur, who.workspace_id, [user_id])
    await store.lock_ideas(cur, who.workspace_id, [idea_id])
    old = await db.fetchval(
        cur,
        "SELECT value FROM ideas.votes WHERE workspace_id = %s AND idea_id = %s AND voter = %s",
        (who.workspace_id, idea_id, voter),
    )
    await cur.execute(
        "INSERT INTO ideas.votes (workspace_id, idea_id, voter, value) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (workspace_id, idea_id, voter)"
        " DO UPDATE SET value = EXCLUDED.value, created_at = now(), merge_id = NULL",
        (who.workspace_id, idea_id, voter, value),
    )
    await cur.execute(
        "UPDATE ideas.ideas i SET vote_count = vote_count + %s, last_activity_at = now()"
        f" WHERE workspace_id = %s AND id = %s RETURNING vote_count, {IDEA_JSON}::text",
        (value - (old or 0), who.workspace_id, idea_id),
    )
    count, idea = await cur.fetchone()
    await emit(cur, who, "idea.voted", idea, vote={"voter": voter, "value": value})
    if user_id is not None:
        await end_users.vote_changed(cur, who.workspace_id, idea_id, user_id, value, who.request_id)
    return {"ideaId": idea_id, "voter": voter, "value": value, "voteCount": count}


async def unvote(
    cur: aiopg.Cursor,
    who: Caller,
    idea_id: uuid.UUID,
    voter: str,
    user_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """Remove the voter's vote (404 when there is none): `idea.voted` with value 0, and
    `vote.changed` for a user's vote."""
    await store.lock_ideas(cur, who.workspace_id, [idea_id])
    old = await db.fetchval(
        cur,
        "DELETE FROM ideas.votes WHERE workspace_id = %s AND idea_id = %s AND voter = %s"
        " RETURNING value",
        (who.workspace_id, idea_id, voter),
    )
    if old is None:
        raise NotFound("Vote not found")
    await cur.execute(
        "UPDATE ideas.ideas i SET vote_count = vote_count - %s, last_activity_at = now()"
        f" WHERE workspace_id = %s AND id = %s RETURNING vote_count, {IDEA_JSON}::text",
        (old, who.workspace_id, idea_id),
    )
    count, idea = await cur.fetchone()
    await emit(cur, who, "idea.voted", idea, vote={"voter": voter, "value": 0})
    if user_id is not None:
        await end_users.vote_changed(cur, who.workspace_id, idea_id, user_id, 0, who.request_id)
    return {"ideaId": idea_id, "voter": voter, "value": 0, "voteCount": count}


async def assign(
    cur: aiopg.Cursor, who: Caller, idea_id: uuid.UUID, stage_id: uuid.UUID | None
) -> dict[str, Any]:
    row = (await store.lock_ideas(cur, who.workspace_id, [idea_id]))[idea_id]
    if (
        stage_id is not None
        and await db.fetchval(
            cur,
            # Held until the commit: a concurrent delete of the stage waits, then unstages
            # this idea too (services/ideas/stages.py).
            "SELECT 1 FROM ideas.roadmap_stages WHERE workspace_id = %s AND id = %s FOR KEY SHARE",
            (who.workspace_id, stage_id),
        )
        is None
    ):
        raise NotFound("Roadmap stage not found")
    idea, _ = await store.write_idea(cur, who.workspace_id, idea_id, {"roadmap_stage_id": stage_id})
    previous = row["roadmap_stage_id"]
    await emit(
        cur,
        who,
        "idea.assigned",
        idea,
        previousRoadmapStageId=None if previous is None else str(previous),
    )
    return {"ideaId": idea_id, "roadmapStageId": stage_id}
