"""Internal routes for peer services (never in the public route table; the internal-token
middleware protects them): read ideas of the caller's workspace, deleted ones included, find
an idea's id by its `IDEA-<n>` number, and list or delete an end user's comments."""

from __future__ import annotations

from uuid import UUID

from aiohttp import web
from pydantic import Field

from libs.api.route import UUID_RE
from libs.common import db
from libs.common.errors import NotFound
from libs.common.validation import Body, parse_body, path_uuid
from libs.common.web import PG_POOL, caller, data_response

from . import end_users, store
from .comment_views import internal_remove_user_comments, internal_user_comments
from .render import fragment


class LookupBody(Body):
    ids: list[UUID] = Field(max_length=1000)


async def internal_get_idea(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        return data_response(fragment(await store.get_idea(cur, who.workspace_id, idea_id)))


async def internal_lookup_ideas(request: web.Request) -> web.Response:
    who = caller(request)
    ids = (await parse_body(request, LookupBody)).ids
    async with db.cursor(request.app[PG_POOL]) as cur:
        ideas = await store.lookup_ideas(cur, who.workspace_id, ids)
    return data_response([fragment(i) for i in ideas])


async def internal_idea_by_number(request: web.Request) -> web.Response:
    """`{"data": {"id"}}` of the caller's idea `IDEA-<n>`; 404 when there is none."""
    who = caller(request)
    try:
        number = int(request.match_info["number"])
    except ValueError:
        raise NotFound("Idea not found") from None
    if not 0 < number < 2**63:  # a bigint: larger numbers name no idea
        raise NotFound("Idea not found")
    async with db.cursor(request.app[PG_POOL]) as cur:
        idea_id = await store.idea_id_by_number(cur, who.workspace_id, number)
    return data_response({"id": str(idea_id)})


async def internal_vote_counts(request: web.Request) -> web.Response:
    """`{"data": {userId: n}}`: the ideas each user votes +1 on now (users with none left out)."""
    who = caller(request)
    ids = (await parse_body(request, LookupBody)).ids
    async with db.cursor(request.app[PG_POOL]) as cur:
        return data_response(await end_users.vote_counts(cur, who.workspace_id, ids))


class ErasureBody(Body):
    email: str | None = None


async def internal_export_user(request: web.Request) -> web.Response:
    """`{"data": {"votes", "ideas", "signals"}}`: what the service holds about the user
    (docs/ideas.md, End users); the body names the user's e-mail (signals carry it)."""
    who, user_id = caller(request), path_uuid(request, "userId")
    body = await parse_body(request, ErasureBody)
    async with db.cursor(request.app[PG_POOL]) as cur:
        return data_response(await end_users.export(cur, who.workspace_id, user_id, body.email))


async def internal_erase_user(request: web.Request) -> web.Response:
    """`{"data": {"votesRemoved", "ideas", "signals"}}`: the user's votes removed, authorship
    and signal contact fields cleared, in one transaction; idempotent."""
    who, user_id = caller(request), path_uuid(request, "userId")
    body = await parse_body(request, ErasureBody)
    async with db.transaction(request.app[PG_POOL]) as cur:
        return data_response(await end_users.erase(cur, who, user_id, body.email))


def setup_internal_routes(app: web.Application) -> None:
    app.router.add_get("/internal/ideas/{id}", internal_get_idea)
    app.router.add_post("/internal/ideas/lookup", internal_lookup_ideas)
    app.router.add_post("/internal/users/vote-counts", internal_vote_counts)
    user = "/internal/users/{userId:" + UUID_RE + "}"
    app.router.add_post(user + "/export", internal_export_user)
    app.router.add_post(user + "/erase", internal_erase_user)
    app.router.add_get("/internal/ideas/number/{number:[0-9]{1,19}}", internal_idea_by_number)
    # A user's comments, for the customers service's export and erasure of the user.
    app.router.add_get("/internal/users/{userId}/comments", internal_user_comments)
    app.router.add_delete("/internal/users/{userId}/comments", internal_remove_user_comments)
