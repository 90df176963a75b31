"""HTTP handlers of the customers service, named by the route table's operation ids."""

from __future__ import annotations

import uuid
from typing import Any

from aiohttp import web

from libs.common import db
from libs.common.errors import Conflict, NotFound
from libs.common.pagination import decode_cursor, encode_cursor, page_info
from libs.common.validation import parse_body, parse_query, path_uuid
from libs.common.web import PG_POOL, SETTINGS, caller, data_response, json_response

from . import events, ideas_client, links, listing, store
from libs.api.customers.schemas import (CreateCustomerRequest, LinkCustomerRequest, ListCustomersQuery, PageQuery,
                     UpdateCustomerRequest)
from .serialize import customer_full, linked_customer

# A customer's ideas page skips deleted ideas; this bounds the link batches one page may scan.
MAX_SCAN_ROUNDS = 20


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
        out = await events.customer_changed(cur, "customer.created", who.workspace_id, row,
                                            who.request_id)
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
        out = await events.customer_changed(cur, "customer.updated", who.workspace_id, row,
                                            who.request_id)
    return data_response(out)


async def list_customers(request: web.Request) -> web.Response:
    q = parse_query(request, ListCustomersQuery)
    who = caller(request)
    scope = {"list": "customers", "ws": str(who.workspace_id),
             **q.model_dump(exclude={"limit", "cursor"})}
    after = _cursor_in(request, q.cursor, scope)
    where = listing.filters(who.workspace_id, q)
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows = await listing.page(cur, where, q, after)
        total = await listing.total(cur, where)
    has_more = len(rows) > q.limit
    rows = rows[:q.limit]
    token = None
    if has_more:
        last = rows[-1]
        token = encode_cursor(_secret(request), scope,
                              [listing.keyset_value(q.sort, last), str(last["id"])])
    return json_response({"data": [customer_full(r) for r in rows],
                          "pagination": page_info(q.limit, has_more, token, total)})


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
        link = await links.insert(cur, who.workspace_id, idea_id, body.customerId)
        if link is None:
            raise Conflict("The customer is already linked to this idea")
        await events.link_created(cur, who.workspace_id, idea_id, body.customerId,
                                  link["linked_at"], link["arr"], link["version"],
                                  who.request_id)
    return data_response({"ideaId": idea_id, "customerId": body.customerId,
                          "linkedAt": link["linked_at"]})


async def list_idea_customers(request: web.Request) -> web.Response:
    idea_id = path_uuid(request)
    q = parse_query(request, PageQuery)
    who = caller(request)
    scope = {"list": "idea_customers", "ws": str(who.workspace_id), "idea": str(idea_id)}
    after = _cursor_in(request, q.cursor, scope)
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows = await links.customers_of_idea(cur, who.workspace_id, idea_id, q.limit, after)
    if not rows and after is None:
        await ideas_client.get_idea(request, idea_id)  # no links: is there such an idea?
    has_more = len(rows) > q.limit
    rows = rows[:q.limit]
    token = None
    if has_more:
        token = encode_cursor(_secret(request), scope,
                              [rows[-1]["linked_at"].isoformat(), str(rows[-1]["id"])])
    return json_response({"data": [linked_customer(r) for r in rows],
                          "pagination": page_info(q.limit, has_more, token)})


async def list_customer_ideas(request: web.Request) -> web.Response:
    customer_id = path_uuid(request)
    q = parse_query(request, PageQuery)
    who = caller(request)
    scope = {"list": "customer_ideas", "ws": str(who.workspace_id), "customer": str(customer_id)}
    after = _cursor_in(request, q.cursor, scope)
    async with db.cursor(request.app[PG_POOL]) as cur:
        if not await store.exists(cur, who.workspace_id, customer_id):
            raise NotFound("Customer not found")
    items, position, exhausted = await _live_ideas(request, who.workspace_id, customer_id,
                                                   q.limit + 1, after)
    has_more = len(items) > q.limit or not exhausted
    page = items[:q.limit]
    if len(items) > q.limit:
        position = _link_key(page[-1][1])
    token = encode_cursor(_secret(request), scope, position) if has_more and position else None
    return json_response({"data": [idea for idea, _ in page],
                          "pagination": page_info(q.limit, bool(token), token)})


def _link_key(link: db.Row) -> list[Any]:
    return [link["linked_at"].isoformat(), str(link["idea_id"])]


async def _live_ideas(request: web.Request, workspace_id: uuid.UUID, customer_id: uuid.UUID,
                      want: int, after: list[Any] | None
                      ) -> tuple[list[tuple[dict[str, Any], db.Row]], list[Any] | None, bool]:
    """Up to `want` linked ideas that are not deleted, newest link first; also the position of
    the last link scanned and whether the links ran out."""
    items: list[tuple[dict[str, Any], db.Row]] = []
    for _ in range(MAX_SCAN_ROUNDS):
        asked = want - len(items)
        async with db.cursor(request.app[PG_POOL]) as cur:
            rows = await links.ideas_of_customer(cur, workspace_id, customer_id, asked, after)
        found = {i["id"]: i for i in await ideas_client.lookup(request,
                                                               [r["idea_id"] for r in rows])}
        for r in rows:
            idea = found.get(str(r["idea_id"]))
            if idea is not None and idea.get("status") != "deleted":
                items.append((idea, r))
        if rows:
            after = _link_key(rows[-1])
        if len(rows) < asked:
            return items, after, True
        if len(items) >= want:
            return items, after, False
    return items, after, False
