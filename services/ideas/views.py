"""HTTP handlers of the ideas service, named by the route table's operation ids."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from aiohttp import web

from libs.api.ideas.requests import (
    AutomationCreateIdea,
    AutomationListQuery,
    BatchCreateRequest,
    BatchStatusRequest,
    CreateIdeaRequest,
    ListIdeasQuery,
    MergeRequest,
    PageQuery,
    RoadmapAssignRequest,
    UpdateIdeaRequest,
    VoteRequest,
)
from libs.common import db
from libs.common.pagination import page_info
from libs.common.validation import parse_body, parse_query, path_uuid
from libs.common.web import PEERS, PG_POOL, caller, data_response, json_response

from . import (
    automation,
    end_users,
    listing,
    merge,
    ops,
    store,
    subresources,
    users_client,
    workspace,
)
from .evidence_views import (
    create_evidence,
    create_meeting,
    create_participant,
    create_support_ticket,
    delete_evidence,
    delete_meeting,
    delete_participant,
    delete_support_ticket,
    update_participant,
)
from .field_views import create_tag, delete_tag, unvote_idea, update_tag
from .member_product_views import (
    create_member,
    create_product,
    delete_member,
    delete_product,
    update_member,
    update_product,
)
from .render import fragment
from .settings import SETTINGS
from .state import ensure_workspace

__all__ = [  # mounted from here
    "create_tag",
    "delete_tag",
    "unvote_idea",
    "update_tag",
    "create_member",
    "create_product",
    "delete_member",
    "delete_product",
    "update_member",
    "update_product",
    "create_evidence",
    "create_meeting",
    "create_participant",
    "create_support_ticket",
    "delete_evidence",
    "delete_meeting",
    "delete_participant",
    "delete_support_ticket",
    "update_participant",
]


def new_idea(body: CreateIdeaRequest, asking: dict[uuid.UUID, Any]) -> store.NewIdea:
    """The idea a create asks for; `asking`, the users its `userId`s name (users_client)."""
    user = None if body.userId is None else asking[body.userId]
    return store.NewIdea(
        store.columns(body.model_dump()),
        author_id=None if user is None else str(body.userId),
        author_name=None if user is None else user["name"],
        vote_user=body.userId,
        url_key=automation.normalize_url(body.url) if body.url else None,
        tag_ids=body.tagIds,
        decision_owner_id=body.decisionOwnerId,
    )


async def list_ideas(request: web.Request) -> web.Response:
    who, q = caller(request), parse_query(request, ListIdeasQuery)
    async with db.cursor(request.app[PG_POOL]) as cur:
        ideas, cursor, more = await listing.list_page(
            cur, request.app[SETTINGS].cursor_secrets, who.workspace_id, q
        )
        total = await listing.total(cur, who.workspace_id, q)
    return json_response(
        {
            "data": [fragment(i) for i in ideas],
            "pagination": page_info(q.limit, more, cursor, total),
        }
    )


async def create_idea(request: web.Request) -> web.Response:
    who, body = caller(request), await parse_body(request, CreateIdeaRequest)
    asking = await users_client.require(request, [body.userId] if body.userId else [])
    await ensure_workspace(request.app[PG_POOL], who.workspace_id)
    async with db.transaction(request.app[PG_POOL]) as cur:
        idea = (await ops.create(cur, who, [new_idea(body, asking)]))[0]
    return data_response(fragment(idea))


async def batch_create_ideas(request: web.Request) -> web.Response:
    who, body = caller(request), await parse_body(request, BatchCreateRequest)
    asking = await users_client.require(request, [b.userId for b in body.ideas if b.userId])
    await ensure_workspace(request.app[PG_POOL], who.workspace_id)
    async with db.transaction(request.app[PG_POOL]) as cur:
        ideas = await ops.create(cur, who, [new_idea(b, asking) for b in body.ideas])
    return data_response({"created": len(ideas), "ideas": [fragment(i) for i in ideas]})


async def batch_update_status(request: web.Request) -> web.Response:
    who, body = caller(request), await parse_body(request, BatchStatusRequest)
    ids = list(dict.fromkeys(body.ids))
    async with db.transaction(request.app[PG_POOL]) as cur:
        items = await ops.set_status(cur, who, ids, body.status, body.reason)
    return data_response({"updated": len(items), "ideas": items})


async def get_idea(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        idea = await store.get_idea(cur, who.workspace_id, idea_id, detail=True)
    return data_response(fragment(idea))


async def update_idea(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    body = await parse_body(request, UpdateIdeaRequest)
    url_key = automation.normalize_url(body.url) if body.url else None
    async with db.transaction(request.app[PG_POOL]) as cur:
        detail = await ops.update(cur, who, idea_id, body, url_key)
    return data_response(fragment(detail))


async def delete_idea(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    async with db.transaction(request.app[PG_POOL]) as cur:
        await ops.set_status(cur, who, [idea_id], "deleted", None)
    return data_response({"id": idea_id, "deleted": True})


async def vote_idea(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    body = await parse_body(request, VoteRequest, optional=True)
    voter, looked_up = body.voter or f"key:{who.key_id}", False
    if body.userId is not None:  # on a user's behalf: the user must exist (404 otherwise)
        async with db.cursor(request.app[PG_POOL]) as cur:
            known = await end_users.known(cur, who.workspace_id, body.userId)
        if not known:  # a user's first vote here: ask the customers service
            await users_client.require(request, [body.userId])
            looked_up = True
        voter = end_users.voter(body.userId)
    async with db.transaction(request.app[PG_POOL]) as cur:
        result = await ops.vote(cur, who, idea_id, voter, body.value, body.userId, looked_up)
    return data_response(result)


async def merge_idea(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    body = await parse_body(request, MergeRequest)
    async with db.transaction(request.app[PG_POOL]) as cur:
        return data_response(await merge.merge(cur, who, idea_id, body.intoId))


async def unmerge_idea(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    async with db.transaction(request.app[PG_POOL]) as cur:
        return data_response(await merge.unmerge(cur, who, idea_id))


async def get_votes(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        return data_response(await subresources.vote_breakdown(cur, who.workspace_id, idea_id))


async def _paged(request: web.Request, name: str) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    q = parse_query(request, PageQuery)
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows, cursor, more = await subresources.paged_list(
            cur,
            name,
            request.app[SETTINGS].cursor_secrets,
            who.workspace_id,
            idea_id,
            q.limit,
            q.cursor,
        )
    return json_response(
        {"data": [fragment(r) for r in rows], "pagination": page_info(q.limit, more, cursor)}
    )


async def list_signals(request: web.Request) -> web.Response:
    return await _paged(request, "signals")


async def list_decisions(request: web.Request) -> web.Response:
    return await _paged(request, "decisions")


async def _plain(request: web.Request, name: str) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows = await subresources.plain_list(cur, name, who.workspace_id, idea_id)
    return data_response([fragment(r) for r in rows])


async def list_evidence(request: web.Request) -> web.Response:
    return await _plain(request, "evidence")


async def list_participants(request: web.Request) -> web.Response:
    return await _plain(request, "participants")


async def list_meetings(request: web.Request) -> web.Response:
    return await _plain(request, "meetings")


async def list_support_tickets(request: web.Request) -> web.Response:
    return await _plain(request, "support_tickets")


async def assign_roadmap(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    body = await parse_body(request, RoadmapAssignRequest)
    await ensure_workspace(request.app[PG_POOL], who.workspace_id)
    async with db.transaction(request.app[PG_POOL]) as cur:
        return data_response(await ops.assign(cur, who, idea_id, body.stageId))


async def _workspace_read(request: web.Request, fn: workspace.Reader) -> web.Response:
    who = caller(request)
    await ensure_workspace(request.app[PG_POOL], who.workspace_id)
    async with db.cursor(request.app[PG_POOL]) as cur:
        return data_response([fragment(r) for r in await fn(cur, who)])


async def list_stages(request: web.Request) -> web.Response:
    return await _workspace_read(request, workspace.stages)


async def list_tags(request: web.Request) -> web.Response:
    return await _workspace_read(request, workspace.tags)


async def list_products(request: web.Request) -> web.Response:
    return await _workspace_read(request, workspace.products)


async def list_members(request: web.Request) -> web.Response:
    return await _workspace_read(request, workspace.members)


async def get_workspace(request: web.Request) -> web.Response:
    who = caller(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        return data_response(await workspace.info(cur, who))


async def automation_list_ideas(request: web.Request) -> web.Response:
    who, q = caller(request), parse_query(request, AutomationListQuery)
    async with db.cursor(request.app[PG_POOL]) as cur:
        return json_response([fragment(r) for r in await automation.recent(cur, who, q.limit)])


async def automation_create_idea(request: web.Request) -> web.Response:
    who, body = caller(request), await parse_body(request, AutomationCreateIdea)
    pool = request.app[PG_POOL]
    await ensure_workspace(pool, who.workspace_id)
    # The meaning rule (the similar service, asked through the peer client) runs with no
    # transaction open and no connection held, and only for a request that could be created
    # within the quota; the transaction then does the writes (docs/ideas.md).
    async with db.cursor(pool) as cur:
        ask = await automation.precheck(cur, who, body)
    close: list[tuple[uuid.UUID, float]] = []
    if ask:
        close = await automation.by_meaning(
            request.app[PEERS], who, body, request.app[SETTINGS].duplicate_similarity
        )
    async with db.transaction(pool) as cur:
        idea = await automation.create(cur, who, body, close)
    if idea is None:
        return json_response({"status": "skipped", "reason": "Duplicate idea", "id": None})
    parsed = orjson.loads(idea)
    return json_response(
        {"id": parsed["id"], "title": parsed["title"], "status": "created"}, status=201
    )


# The roadmap stage writes (stage_views.py), mounted from here too.
from .stage_views import create_stage, delete_stage, update_stage  # noqa: E402

__all__ += ["create_stage", "delete_stage", "update_stage"]

# The signal writes (signal_views.py), mounted from here too.
from .signal_views import create_signal, delete_signal  # noqa: E402

__all__ += ["create_signal", "delete_signal"]

# The comments (comment_views.py), mounted from here too.
from .comment_views import (  # noqa: E402
    create_comment,
    delete_comment,
    list_comments,
    update_comment,
)

__all__ += ["create_comment", "delete_comment", "list_comments", "update_comment"]
