"""Handlers of the workspace's members and products writes; mounted through `views.py`, named
by the route table's operation ids. Ideas a write changes (a product's deletion, a member's
new name or e-mail) each emit `idea.updated` in the write's transaction."""

from __future__ import annotations

import aiopg
from aiohttp import web

from libs.api.ideas.requests import (
    CreateMemberRequest,
    CreateProductRequest,
    UpdateMemberRequest,
    UpdateProductRequest,
)
from libs.common import db
from libs.common.caller import Caller
from libs.common.validation import parse_body, path_uuid
from libs.common.web import PG_POOL, caller, data_response

from . import members, ops, products
from .render import fragment


async def _updated(cur: aiopg.Cursor, who: Caller, ideas: list[str]) -> None:
    for idea in ideas:
        await ops.emit(cur, who, "idea.updated", idea)


async def create_product(request: web.Request) -> web.Response:
    who, body = caller(request), await parse_body(request, CreateProductRequest)
    async with db.transaction(request.app[PG_POOL]) as cur:
        product = await products.create(cur, who.workspace_id, body.name, body.parentId)
    return data_response(fragment(product))


async def update_product(request: web.Request) -> web.Response:
    who, product_id = caller(request), path_uuid(request)
    body = await parse_body(request, UpdateProductRequest)
    fields = body.model_dump(include=body.model_fields_set)
    async with db.transaction(request.app[PG_POOL]) as cur:
        product = await products.update(cur, who.workspace_id, product_id, fields)
    return data_response(fragment(product))


async def delete_product(request: web.Request) -> web.Response:
    who, product_id = caller(request), path_uuid(request)
    async with db.transaction(request.app[PG_POOL]) as cur:
        await _updated(cur, who, await products.delete(cur, who.workspace_id, product_id))
    return data_response({"id": product_id, "deleted": True})


async def create_member(request: web.Request) -> web.Response:
    who, body = caller(request), await parse_body(request, CreateMemberRequest)
    async with db.transaction(request.app[PG_POOL]) as cur:
        member = await members.create(
            cur, who.workspace_id, body.name, body.email, body.role, body.dashboardAccess
        )
    return data_response(fragment(member))


async def update_member(request: web.Request) -> web.Response:
    who, member_id = caller(request), path_uuid(request)
    body = await parse_body(request, UpdateMemberRequest)
    fields = body.model_dump(include=body.model_fields_set)
    async with db.transaction(request.app[PG_POOL]) as cur:
        member, ideas = await members.update(cur, who.workspace_id, member_id, fields)
        await _updated(cur, who, ideas)
    return data_response(fragment(member))


async def delete_member(request: web.Request) -> web.Response:
    who, member_id = caller(request), path_uuid(request)
    async with db.transaction(request.app[PG_POOL]) as cur:
        await members.delete(cur, who.workspace_id, member_id)
    return data_response({"id": member_id, "deleted": True})
