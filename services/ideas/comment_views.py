"""Handlers of an idea's comments (comments.py); mounted through `views.py`, named by the route
table's operation ids. The internal routes of a user's comments (their export and erasure by
the customers service) are mounted by `internal.py`."""

from __future__ import annotations

import uuid

from aiohttp import web

from libs.api.ideas.comments import CreateCommentRequest, ListCommentsQuery, UpdateCommentRequest
from libs.common import db
from libs.common.caller import Caller
from libs.common.pagination import page_info
from libs.common.validation import parse_body, parse_query, path_uuid
from libs.common.web import PG_POOL, caller, data_response, json_response

from . import comments, users_client
from .render import fragment
from .settings import SETTINGS


async def user_author(request: web.Request, who: Caller, user_id: uuid.UUID) -> comments.Author:
    """The end user `user_id` of the caller's workspace as a comment's author, asked of the
    customers service (users_client: 404 when the workspace has no such user). Called before
    any transaction opens."""
    user = (await users_client.require(request, [user_id]))[user_id]
    return comments.Author("user", user_id, user.get("name"))


async def list_comments(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    q = parse_query(request, ListCommentsQuery)
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows, cursor, more = await comments.page(
            cur,
            request.app[SETTINGS].cursor_secrets,
            who.workspace_id,
            idea_id,
            q.internal,
            q.limit,
            q.cursor,
        )
    return json_response(
        {"data": [fragment(r) for r in rows], "pagination": page_info(q.limit, more, cursor)}
    )


async def create_comment(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    body = await parse_body(request, CreateCommentRequest)
    if body.userId is not None:
        author = await user_author(request, who, body.userId)
    else:
        author = comments.key_author(who)
    async with db.transaction(request.app[PG_POOL]) as cur:
        comment = await comments.create(
            cur, who, idea_id, body.body, body.internal, body.parentId, author
        )
    return data_response(fragment(comment))


async def update_comment(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    comment_id = path_uuid(request, "commentId")
    body = await parse_body(request, UpdateCommentRequest)
    async with db.transaction(request.app[PG_POOL]) as cur:
        comment = await comments.update(cur, who, idea_id, comment_id, body.body)
    return data_response(fragment(comment))


async def delete_comment(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    comment_id = path_uuid(request, "commentId")
    async with db.transaction(request.app[PG_POOL]) as cur:
        return data_response(await comments.delete(cur, who, idea_id, comment_id))


async def internal_user_comments(request: web.Request) -> web.Response:
    """`{"data": [Comment]}`: every comment of the user, oldest first (their export)."""
    who, user_id = caller(request), path_uuid(request, "userId")
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows = await comments.of_user(cur, who.workspace_id, user_id)
    return data_response([fragment(r) for r in rows])


async def internal_remove_user_comments(request: web.Request) -> web.Response:
    """`{"data": {"removed": n}}`: the user's comments deleted (their erasure); idempotent."""
    who, user_id = caller(request), path_uuid(request, "userId")
    async with db.transaction(request.app[PG_POOL]) as cur:
        removed = await comments.remove_user(cur, who, user_id)
    return data_response({"removed": removed})
