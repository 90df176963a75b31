"""HTTP handlers of end users (docs/customers.md, End users), mounted through views.py.

Each write commits first; the user's `voteCount` is then asked of the ideas service, which
holds the votes (never inside a transaction)."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import Field

from libs.api.customers.users import (
    CreateUserRequest,
    IdentifyUserRequest,
    ListUsersQuery,
    UpdateUserRequest,
)
from libs.common import db
from libs.common.errors import NotFound
from libs.common.pagination import decode_cursor, page_info
from libs.common.validation import Body, parse_body, parse_query, path_uuid
from libs.common.web import PG_POOL, SETTINGS, caller, data_response, json_response

from . import demand, ideas_client, serialize, users


async def _one(request: web.Request, row: Any) -> web.Response:
    counts = await ideas_client.vote_counts(request, [row["id"]])
    return data_response(serialize.user(row, counts[str(row["id"])]))


async def create_user(request: web.Request) -> web.Response:
    body = await parse_body(request, CreateUserRequest)
    who = caller(request)
    async with db.transaction(request.app[PG_POOL]) as cur:
        row = await users.create(cur, who.workspace_id, body.model_dump(exclude_unset=True))
    return data_response(serialize.user(row, 0))  # a new user has no vote yet


async def identify_user(request: web.Request) -> web.Response:
    body = await parse_body(request, IdentifyUserRequest)
    who = caller(request)
    async with db.transaction(request.app[PG_POOL]) as cur:
        written = await users.identify(cur, who.workspace_id, body.model_dump(exclude_unset=True))
        if written.moved:
            await demand.moved(
                cur, who.workspace_id, written.row, written.previous_customer, who.request_id
            )
    if written.created:
        return data_response(serialize.user(written.row, 0))
    return await _one(request, written.row)


async def get_user(request: web.Request) -> web.Response:
    user_id = path_uuid(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        row = await users.get(cur, caller(request).workspace_id, user_id)
    if row is None:
        raise NotFound("User not found")
    return await _one(request, row)


async def update_user(request: web.Request) -> web.Response:
    user_id = path_uuid(request)
    body = await parse_body(request, UpdateUserRequest)
    who = caller(request)
    fields = body.model_dump(include=body.model_fields_set)
    async with db.transaction(request.app[PG_POOL]) as cur:
        written = await users.update(cur, who.workspace_id, user_id, fields)
        if written is None:
            raise NotFound("User not found")
        if written.moved:
            await demand.moved(
                cur, who.workspace_id, written.row, written.previous_customer, who.request_id
            )
    return await _one(request, written.row)


async def list_users(request: web.Request) -> web.Response:
    q = parse_query(request, ListUsersQuery)
    who = caller(request)
    secrets = request.app[SETTINGS].cursor_secrets
    scope = {
        "list": "users",
        "ws": str(who.workspace_id),
        "search": q.search,
        "customer": None if q.customer_id is None else str(q.customer_id),
    }
    after = None if q.cursor is None else decode_cursor(secrets, q.cursor, scope)
    where = users.filters(who.workspace_id, q.search, q.customer_id)
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows, token, has_more = await users.page(cur, where, q.limit, after, secrets, scope)
        total = await users.total(cur, where)
    counts = await ideas_client.vote_counts(request, [r["id"] for r in rows])
    return json_response(
        {
            "data": [serialize.user(r, counts[str(r["id"])]) for r in rows],
            "pagination": page_info(q.limit, has_more, token, total),
        }
    )


async def export_user(request: web.Request) -> web.Response:
    """Everything held about the user, exactly what DELETE removes or clears: the user, the
    votes, the comments, the ideas the user asked for, and the signals with the user's e-mail."""
    user_id = path_uuid(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        row = await users.get(cur, caller(request).workspace_id, user_id)
    if row is None:
        raise NotFound("User not found")
    held = await ideas_client.user_data(request, user_id, row["email"])
    comments = await ideas_client.user_comments(request, user_id)
    count = sum(1 for v in held["votes"] if v["value"] == 1)
    return data_response(
        {
            "user": serialize.user(row, count),
            "votes": held["votes"],
            "comments": comments,
            "ideas": held["ideas"],
            "signals": held["signals"],
        }
    )


async def delete_user(request: web.Request) -> web.Response:
    """Erase the user (docs/customers.md, Erasure and export). Each step is idempotent and the
    user's row goes last, so a call that fails midway (503) is completed by a retry: the ideas
    service's votes, authorship and signal contacts, the comments, the delivery log's payloads,
    then the user and the company links only the user's votes held (`users.settle`)."""
    user_id = path_uuid(request)
    who = caller(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        row = await users.get(cur, who.workspace_id, user_id)
    if row is None:
        raise NotFound("User not found")
    erased = await ideas_client.erase_user(request, user_id, row["email"])
    comments = await ideas_client.erase_comments(request, user_id)
    await ideas_client.redact_deliveries(request, row["email"], row["name"])
    async with db.transaction(request.app[PG_POOL]) as cur:
        gone = await users.delete(cur, who.workspace_id, user_id)
        if gone is None:
            raise NotFound("User not found")  # erased by a concurrent call meanwhile
        await demand.settle_later(
            cur, who.workspace_id, user_id, [gone["customer_id"]], gone["ideas"], who.request_id
        )
    return data_response(
        {
            "id": user_id,
            "deleted": True,
            "votesRemoved": erased["votesRemoved"],
            "commentsRemoved": comments,
        }
    )


class LookupBody(Body):
    ids: list[str] = Field(max_length=1000)


async def internal_lookup_users(request: web.Request) -> web.Response:
    """`{"data": [{"id", "name", "email", "customerId"}]}`: the caller's users of these ids
    (those that exist), for the ideas service's votes and ideas on a user's behalf."""
    who = caller(request)
    ids = [users.as_uuid(i) for i in (await parse_body(request, LookupBody)).ids]
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows = await users.lookup(cur, who.workspace_id, [i for i in ids if i is not None])
    return data_response(
        [
            {"id": r["id"], "name": r["name"], "email": r["email"], "customerId": r["customer_id"]}
            for r in rows
        ]
    )


def setup_internal_routes(app: web.Application) -> None:
    app.router.add_post("/internal/users/lookup", internal_lookup_users)
