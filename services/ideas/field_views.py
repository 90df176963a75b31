"""Handlers of the workspace's vocabulary writes (tags) and of vote removal; mounted through
`views.py`, named by the route table's operation ids."""

from __future__ import annotations

from aiohttp import web

from libs.api.ideas.requests import CreateTagRequest, UnvoteQuery, UpdateTagRequest
from libs.common import db
from libs.common.validation import parse_body, parse_query, path_uuid
from libs.common.web import PG_POOL, caller, data_response

from . import end_users, ops, tags
from .render import fragment


async def create_tag(request: web.Request) -> web.Response:
    who, body = caller(request), await parse_body(request, CreateTagRequest)
    async with db.transaction(request.app[PG_POOL]) as cur:
        tag = await tags.create(cur, who.workspace_id, body.name, body.color)
    return data_response(fragment(tag))


async def update_tag(request: web.Request) -> web.Response:
    who, tag_id = caller(request), path_uuid(request)
    body = await parse_body(request, UpdateTagRequest)
    fields = body.model_dump(include=body.model_fields_set)
    async with db.transaction(request.app[PG_POOL]) as cur:
        tag = await tags.update(cur, who.workspace_id, tag_id, fields)
    return data_response(fragment(tag))


async def delete_tag(request: web.Request) -> web.Response:
    who, tag_id = caller(request), path_uuid(request)
    async with db.transaction(request.app[PG_POOL]) as cur:
        await tags.delete(cur, who.workspace_id, tag_id)
    return data_response({"id": tag_id, "deleted": True})


async def unvote_idea(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    q = parse_query(request, UnvoteQuery)
    # A user's vote (`userId`): an unknown or erased user has none, so 404 as any missing vote.
    voter = end_users.voter(q.userId) if q.userId else q.voter or f"key:{who.key_id}"
    async with db.transaction(request.app[PG_POOL]) as cur:
        return data_response(await ops.unvote(cur, who, idea_id, voter, q.userId))
