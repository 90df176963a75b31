"""Handlers of the roadmap stage writes; mounted through `views.py`, named by the route
table's operation ids."""

from __future__ import annotations

from aiohttp import web

from libs.api.ideas.stages import CreateStageRequest, UpdateStageRequest
from libs.common import db
from libs.common.validation import parse_body, path_uuid
from libs.common.web import PG_POOL, caller, data_response

from . import ops, stages
from .render import fragment
from .state import ensure_workspace


async def create_stage(request: web.Request) -> web.Response:
    who, body = caller(request), await parse_body(request, CreateStageRequest)
    await ensure_workspace(request.app[PG_POOL], who.workspace_id)  # Now, Next, Later first
    async with db.transaction(request.app[PG_POOL]) as cur:
        stage = await stages.create(
            cur, who.workspace_id, body.name, body.slug, body.color, body.position
        )
    return data_response(fragment(stage))


async def update_stage(request: web.Request) -> web.Response:
    who, stage_id = caller(request), path_uuid(request)
    body = await parse_body(request, UpdateStageRequest)
    await ensure_workspace(request.app[PG_POOL], who.workspace_id)
    fields = {name: getattr(body, name) for name in body.model_fields_set}
    async with db.transaction(request.app[PG_POOL]) as cur:
        stage = await stages.update(cur, who.workspace_id, stage_id, fields)
    return data_response(fragment(stage))


async def delete_stage(request: web.Request) -> web.Response:
    who, stage_id = caller(request), path_uuid(request)
    await ensure_workspace(request.app[PG_POOL], who.workspace_id)
    async with db.transaction(request.app[PG_POOL]) as cur:
        unstaged, ideas = await stages.delete(cur, who, stage_id)
        for idea, previous in ideas:
            await ops.emit(cur, who, "idea.assigned", idea, previousRoadmapStageId=previous)
    return data_response({"id": stage_id, "deleted": True, "unstaged": unstaged})
