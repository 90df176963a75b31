"""HTTP handlers of the customers service, named by the route table's operation ids."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from libs.api.customers.schemas import (
    CreateCustomerRequest,
    LinkCustomerRequest,
    ListCustomersQuery,
    PageQuery,
    UpdateCustomerRequest,
)
from libs.common import db
from libs.common.errors import Conflict, NotFound
from libs.common.pagination import decode_cursor, page_info
from libs.common.validation import parse_body, parse_query, path_uuid
from libs.common.web import PG_POOL, SETTINGS, caller, data_response, json_response

from . import demand, events, ideas_client, links, listing, merges, store
from .serialize import customer_full, linked_customer


def _secret(request: web.Request) -> tuple[str, ...]:
    return request.app[SETTINGS].cursor_secrets


def _cursor_in(request: web.Request, token: str | None, scope: dict[str, Any]) -> list[Any] | None:
    return None if token is None else decode_cursor(_secret(request), token, scope)


async def create_customer(request: web.Request) -> web.Response:
    body = await parse_body(request, CreateCustomerRequest)
    who = caller(request)
    fields = body.model_dump(exclude_unset=True)
    async with db.transaction(request.app[PG_POOL]) as cur:
        row = await store.create(cur, who.workspace_id, fields)
        out = await events.customer_changed(
            cur, "customer.created", who.workspace_id, row, who.request_id
        )
    return data_response(out)


async def get_customer(request: web.Request) -> web.Response:
    customer_id = path_uuid(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        row = await store.get(cur, caller(request).workspace_id, customer_id)
    if row is None:
        raise NotFound("Customer not found")
    return data_response(customer_full(row))


async def update_customer(request: web.Request) -> web.Response:
    customer_id = path_uuid(request)
    body = await parse_body(request, UpdateCustomerRequest)
    who = caller(request)
    fields = body.model_dump(exclude_unset=True)
    async with db.transaction(request.app[PG_POOL]) as cur:
        row = await store.update(cur, who.workspace_id, customer_id, fields)
        if row is None:
            raise NotFound("Customer not found")
        out = await events.customer_changed(
            cur, "customer.updated", who.workspace_id, row, who.request_id
        )
    return data_response(out)


async def list_customers(request: web.Request) -> web.Response:
    q = parse_query(request, ListCustomersQuery)
    who = caller(request)
    scope = {
        "list": "customers",
        "ws": str(who.workspace_id),
        **q.model_dump(exclude={"limit", "cursor"}),
    }
    after = _cursor_in(request, q.cursor, scope)
    where = listing.filters(who.workspace_id, q)
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows, token, has_more = await listing.page(cur, where, q, after, _secret(request), scope)
        total = await listing.total(cur, where)
    return json_response(
        {
            "data": [customer_full(r) for r in rows],
            "pagination": page_info(q.limit, has_more, token, total),
        }
    )


async def link_customer(request: web.Request) -> web.Response:
    idea_id = path_uuid(request)
    body = await parse_body(request, LinkCustomerRequest)
    who = caller(request)
    pool = request.app[PG_POOL]
    async with db.cursor(pool) as cur:
        if not await store.exists(cur, who.workspace_id, body.customerId):
            raise NotFound("Customer not found")
    await ideas_client.get_idea(request, idea_id)  # 404 unless the idea is in this workspace
    async with db.transaction(pool) as cur:
        await merges.lock_links(cur, who.workspace_id, idea_id, shared=True)
        link = await links.insert(cur, who.workspace_id, idea_id, body.customerId)
        if link is None:
            # A link that only the votes of the customer's users held becomes direct (200):
            # it then stays when the votes go (docs/customers.md, A company's demand).
            linked_at = await links.make_direct(cur, who.workspace_id, idea_id, body.customerId)
            if linked_at is None:
                raise Conflict("The customer is already linked to this idea")
            await merges.follow_later(cur, who.workspace_id, idea_id, [body.customerId])
            return data_response(
                {"ideaId": idea_id, "customerId": body.customerId, "linkedAt": linked_at}
            )
        await events.link_created(
            cur,
            who.workspace_id,
            idea_id,
            body.customerId,
            link["linked_at"],
            link["arr"],
            link["version"],
            who.request_id,
        )
        # A merged duplicate's primaries get the link too, a step each, from the queue
        # (merges.follow): the call's transaction writes its own link alone.
        await merges.follow_later(cur, who.workspace_id, idea_id, [body.customerId])
    return data_response(
        {"ideaId": idea_id, "customerId": body.customerId, "linkedAt": link["linked_at"]}
    )


async def unlink_customer(request: web.Request) -> web.Response:
    idea_id, customer_id = path_uuid(request), path_uuid(request, "customerId")
    who = caller(request)
    async with db.transaction(request.app[PG_POOL]) as cur:
        await merges.lock_links(cur, who.workspace_id, idea_id)
        link = await links.get(cur, who.workspace_id, idea_id, customer_id)
        if link is None:
            raise NotFound("The customer is not linked to this idea")
        if not link["direct"]:
            raise Conflict(
                "Only the votes of the customer's users link it to this idea: the link goes"
                " when none of them votes +1 on it any more"
            )
        if await demand.held(cur, who.workspace_id, idea_id, customer_id):
            # The direct reason goes; the votes still hold the link (docs/customers.md).
            await links.make_indirect(cur, who.workspace_id, idea_id, customer_id)
        else:
            await links.remove(cur, who.workspace_id, idea_id, customer_id)
            await events.link_deleted(
                cur, who.workspace_id, idea_id, customer_id, link["linked_at"], who.request_id
            )
    return data_response({"ideaId": idea_id, "customerId": customer_id, "unlinked": True})


async def list_idea_customers(request: web.Request) -> web.Response:
    idea_id = path_uuid(request)
    q = parse_query(request, PageQuery)
    who = caller(request)
    scope = {"list": "idea_customers", "ws": str(who.workspace_id), "idea": str(idea_id)}
    after = _cursor_in(request, q.cursor, scope)
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows, token, has_more = await links.customers_of_idea(
            cur, who.workspace_id, idea_id, q.limit, after, _secret(request), scope
        )
    if not rows and after is None:
        await ideas_client.get_idea(request, idea_id)  # no links: is there such an idea?
    return json_response(
        {
            "data": [linked_customer(r) for r in rows],
            "pagination": page_info(q.limit, has_more, token),
        }
    )


async def list_customer_ideas(request: web.Request) -> web.Response:
    customer_id = path_uuid(request)
    q = parse_query(request, PageQuery)
    who = caller(request)
    scope = {"list": "customer_ideas", "ws": str(who.workspace_id), "customer": str(customer_id)}
    after = _cursor_in(request, q.cursor, scope)
    async with db.cursor(request.app[PG_POOL]) as cur:
        if not await store.exists(cur, who.workspace_id, customer_id):
            raise NotFound("Customer not found")
    ideas, token = await links.customer_ideas_page(
        request.app[PG_POOL],
        lambda ids: ideas_client.lookup(request, ids),
        who.workspace_id,
        customer_id,
        q.limit,
        after,
        _secret(request),
        scope,
    )
    return json_response({"data": ideas, "pagination": page_info(q.limit, bool(token), token)})


# The end users' handlers (user_views.py), mounted from here too.
from .user_views import (  # noqa: E402
    create_user,
    delete_user,
    export_user,
    get_user,
    identify_user,
    list_users,
    update_user,
)

__all__ = [
    "create_user",
    "delete_user",
    "export_user",
    "get_user",
    "identify_user",
    "list_users",
    "update_user",
]
