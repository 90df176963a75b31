"""Every route of the route table, called as an attacker would: one test per route, so a route
is covered the day it is added.

- without a key: 401 `unauthorized`; with an invented key: 401 `invalid_key`;
- with a key of its workspace holding every scope but the route's: 403 `insufficient_scope`
  (a route with scope None takes any key);
- a plan-gated route on starter: 403 `plan_required`;
- with the ids of another workspace's records, in the path and in the body: 404 `not_found`;
- and none of these changes anything in either workspace (a snapshot of every row of both,
  before and after), nor shows one of the other workspace's ids.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import psycopg2
import pytest

from libs.api.keys import new_key
from libs.api.route import SCOPES, Route
from libs.api.table import ROUTE_TABLE
from tests.support.api import Api, Resp, Workspace, make_key
from tests.support.openapi_check import OpenApi
from tests.support.processes import System

from .conftest import workspace_in
from .records import Records, seed_records

# The record kind a path parameter names, by the path segment before it. A route whose
# parameter is not here fails its test until it is added (with a record in seed_records).
PATH_KINDS = {
    ("ideas", "id"): "ideas",
    ("customers", "id"): "customers",
    ("customers", "customerId"): "customers",
    ("tags", "id"): "tags",
    ("stages", "id"): "stages",
    ("products", "id"): "products",
    ("members", "id"): "members",
    ("signals", "signalId"): "signals",
    ("webhooks", "id"): "webhooks",
    ("subscribe", "id"): "hooks",
    ("deliveries", "deliveryId"): "deliveries",
    ("evidence", "evidenceId"): "evidence",
    ("support-tickets", "ticketId"): "tickets",
    ("meetings", "meetingId"): "meetings",
    ("participants", "participantId"): "participants",
    ("comments", "commentId"): "comments",
    ("users", "id"): "users",
}

# A valid body per operation taking one, so that only the key, the scope, the plan or the
# record decides the answer. `{kind}` is replaced by an id of that kind. A route with a body
# and no entry here fails its test until one is added.
BODIES: dict[str, Any] = {
    "create_idea": {
        "title": "Matrix idea",
        "tagIds": ["{tags}"],
        "productId": "{products}",
        "decisionOwnerId": "{members}",
        "userId": "{users}",
    },
    "batch_create_ideas": {"ideas": [{"title": "Matrix idea"}]},
    "batch_update_status": {"ids": ["{ideas}"], "status": "planned"},
    "update_idea": {
        "title": "Renamed by the matrix",
        "tagIds": ["{tags}"],
        "productId": "{products}",
        "decisionOwnerId": "{members}",
    },
    "vote_idea": {"value": 1, "userId": "{users}"},
    "create_signal": {"platform": "matrix", "content": "Matrix signal", "userEmail": "a@b.example"},
    # the primary is another idea than the path's: the same one would be a 400 before any 404
    "merge_idea": {"intoId": "{second_ideas}"},
    "similar_ideas": {"title": "Matrix similar idea"},
    "assign_roadmap": {"stageId": "{stages}"},
    "create_stage": {"name": "Matrix stage", "color": "#123abc", "position": 0},
    "update_stage": {"name": "Renamed by the matrix", "position": 0},
    "update_workspace": {"name": "Renamed by the matrix", "inboxMode": "review"},
    "automation_create_idea": {"title": "Matrix automation idea"},
    "create_customer": {"name": "Matrix customer"},
    "update_customer": {"name": "Renamed by the matrix"},
    "link_customer": {"customerId": "{customers}"},
    "create_user": {"name": "Matrix user", "customerId": "{customers}"},
    "identify_user": {"email": "matrix-user@example.com", "customerId": "{customers}"},
    "update_user": {"name": "Renamed by the matrix", "customerId": "{customers}"},
    "create_tag": {"name": "Matrix tag", "color": "#123abc"},
    "update_tag": {"name": "Renamed by the matrix"},
    "create_product": {"name": "Matrix product", "parentId": "{products}"},
    "update_product": {"name": "Renamed by the matrix"},
    "create_member": {"name": "Matrix member", "email": "matrix@example.com"},
    "update_member": {"name": "Renamed by the matrix"},
    "create_evidence": {"type": "quote", "title": "Matrix evidence"},
    "create_support_ticket": {"platform": "zendesk", "externalId": "matrix", "subject": "Matrix"},
    "create_meeting": {"title": "Matrix meeting", "meetingDate": "2025-01-01T00:00:00Z"},
    "create_participant": {"memberId": "{members}", "role": "reviewer"},
    "update_participant": {"decision": "approved"},
    "create_comment": {"body": "Matrix comment", "parentId": "{comments}"},
    "update_comment": {"body": "Edited by the matrix"},
    "create_webhook": {"targetUrl": "https://hooks.example.com/matrix", "events": ["idea.created"]},
    "automation_subscribe": {"hookUrl": "https://hooks.example.com/matrix"},
    "update_webhook": {"name": "Renamed by the matrix"},
    "rotate_webhook_secret": {"expiresInSeconds": 60},
    # a tool call on another workspace's idea is a tool result, not an HTTP 404: tests/mcp
    "mcp": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
}
PARAM = re.compile(r"/([^/{}]+)/\{([^}]+)\}")
SNAPSHOT_SKIP = re.compile(r"\.outbox$")  # emptied by the relay as it publishes


@dataclass
class Matrix:
    a: Workspace  # the caller's workspace
    b: Workspace  # the other workspace
    recs: dict[str, Records]  # by workspace id
    lacking: dict[str, Api]  # scope -> a key of `a` with every scope but that one
    starter: Api  # an all-scope key of a starter workspace
    tables: list[str]
    database_url: str


def fill(template: Any, rec: Records | None) -> Any:
    """A body template with `{kind}` replaced by the first id of that kind in `rec` (or, without
    `rec`, by None: then a body that names no record comes back equal to the template)."""
    if isinstance(template, dict):
        return {k: fill(v, rec) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, rec) for v in template]
    if isinstance(template, str) and template.startswith("{") and template.endswith("}"):
        return None if rec is None else getattr(rec, template[1:-1])[0]
    return template


def refers(template: Any) -> bool:
    """Whether a body template names a record."""
    return fill(template, None) != template


def path_for(route: Route, rec: Records) -> str:
    def one(m: re.Match[str]) -> str:
        kind = PATH_KINDS.get((m.group(1), m.group(2)))
        assert kind is not None, f"{route.path}: no record kind for {{{m.group(2)}}} (PATH_KINDS)"
        return f"/{m.group(1)}/{getattr(rec, kind)[0]}"

    return PARAM.sub(one, route.path)


def body_for(route: Route) -> Any:
    if route.body is None:
        return None
    assert route.operation_id in BODIES, f"{route.operation_id}: add a valid body to BODIES"
    return BODIES[route.operation_id]


def snapshot(database_url: str, tables: list[str], workspaces: list[str]) -> dict[str, list[str]]:
    """Every row of every workspace table, for these workspaces, as text."""
    conn = psycopg2.connect(database_url)
    try:
        with conn.cursor() as cur:
            out = {}
            for table in tables:
                cur.execute(
                    f"SELECT t::text FROM {table} t WHERE workspace_id = ANY(%s::uuid[])"
                    " ORDER BY 1",
                    (workspaces,),
                )
                out[table] = [r[0] for r in cur.fetchall()]
            return out
    finally:
        conn.close()


def workspace_tables(database_url: str) -> list[str]:
    conn = psycopg2.connect(database_url)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT DISTINCT quote_ident(table_schema) || '.' || quote_ident(table_name)"
                "  FROM information_schema.columns c JOIN information_schema.tables t"
                " USING (table_schema, table_name)"
                " WHERE column_name = 'workspace_id' AND table_type = 'BASE TABLE'"
                "   AND table_schema IN ('gateway', 'ideas', 'customers', 'webhooks', 'similar')"
                " ORDER BY 1"
            )
            return [r[0] for r in cur.fetchall() if not SNAPSHOT_SKIP.search(r[0])]
    finally:
        conn.close()


async def settled(take: Callable[[], dict[str, list[str]]]) -> dict[str, list[str]]:
    """A snapshot that held still for a second: projections and fan-out of the seeding done."""
    deadline = time.monotonic() + 20
    last = take()
    while time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        now = take()
        if now == last:
            return now
        last = now
    raise AssertionError("the workspaces did not settle within 20 s")


@pytest.fixture(scope="module")
async def matrix(
    isolated: System, http: aiohttp.ClientSession, isolated_openapi: OpenApi
) -> Matrix:
    a = workspace_in(isolated, http, isolated_openapi)
    b = workspace_in(isolated, http, isolated_openapi)
    ra, rb = await asyncio.gather(
        seed_records(isolated, a, ideas=4, customers=3),
        seed_records(isolated, b, ideas=4, customers=3),
    )
    lacking = {}
    for scope in SCOPES:
        key = make_key(
            isolated.database_url, a.id, scopes=",".join(s for s in SCOPES if s != scope)
        )
        lacking[scope] = a.api.with_key(key["key"])
    starter = workspace_in(isolated, http, isolated_openapi, plan="starter")
    m = Matrix(
        a,
        b,
        {a.id: ra, b.id: rb},
        lacking,
        starter.api,
        workspace_tables(isolated.database_url),
        isolated.database_url,
    )
    await settled(lambda: snapshot(m.database_url, m.tables, [a.id, b.id]))
    return m


def expect(r: Resp, status: int, code: str, what: str) -> str | None:
    got = r.json.get("error", {}).get("code") if r.body[:1] == b"{" else None
    if r.status == status and got == code:
        return None
    return f"{what}: expected {status} {code}, got {r.status} {r.body[:200]!r}"


async def call(api: Api, route: Route, path: str, body: Any, **kw: Any) -> Resp:
    return await api.request(route.method, path, json=body, **kw)


@pytest.mark.parametrize("route", ROUTE_TABLE, ids=lambda r: f"{r.method} {r.path}")
async def test_route_refuses_hostile_callers(matrix: Matrix, route: Route) -> None:
    """No key, an invented key, a missing scope or plan, another workspace's ids: refused,
    and nothing changes in either workspace."""
    m, own, other = matrix, matrix.recs[matrix.a.id], matrix.recs[matrix.b.id]
    template = body_for(route)
    path, body = path_for(route, own), fill(template, own)
    anon = m.a.api.with_key(None)
    invented = m.a.api.with_key(new_key("production"))
    calls: list[tuple[str, Any, int, str]] = [
        ("no key", call(anon, route, path, body), 401, "unauthorized"),
        ("an invented key", call(invented, route, path, body), 401, "invalid_key"),
        (
            "not a key",
            call(anon, route, path, body, headers={"Authorization": "Bearer x"}),
            401,
            "invalid_key",
        ),
    ]
    if route.scope is not None:
        calls.append(
            (
                "a key without " + route.scope,
                call(m.lacking[route.scope], route, path, body),
                403,
                "insufficient_scope",
            )
        )
    if route.plan_gated:
        calls.append(
            (
                "the starter plan",
                call(m.starter, route, path_for(route, own), body),
                403,
                "plan_required",
            )
        )
    foreign_path = path_for(route, other)
    if foreign_path != route.path:
        calls.append(
            (
                "the other workspace's ids",
                call(m.a.api, route, foreign_path, fill(template, other)),
                404,
                "not_found",
            )
        )
    if template is not None and refers(template):
        calls.append(
            (
                "the other workspace's ids in the body",
                call(m.a.api, route, path, fill(template, other)),
                404,
                "not_found",
            )
        )
    before = snapshot(m.database_url, m.tables, [m.a.id, m.b.id])
    answers = await asyncio.gather(*(c for _, c, _, _ in calls))
    after = snapshot(m.database_url, m.tables, [m.a.id, m.b.id])
    problems = [
        p
        for (what, _, status, code), r in zip(calls, answers, strict=True)
        if (p := expect(r, status, code, what))
    ]
    problems += [f"{table} changed" for table in m.tables if before[table] != after[table]]
    assert not problems, f"{route.method} {route.path}:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "route", [r for r in ROUTE_TABLE if r.method == "GET"], ids=lambda r: f"{r.method} {r.path}"
)
async def test_route_never_shows_another_workspace(matrix: Matrix, route: Route) -> None:
    """A read of the caller's own records names no id of the other workspace."""
    m, own, other = matrix, matrix.recs[matrix.a.id], matrix.recs[matrix.b.id]
    r = await m.a.api.get(path_for(route, own))
    assert r.status == 200, r.body[:300]
    text = r.body.decode()
    foreign = [
        i
        for kind in (
            "ideas",
            "customers",
            "stages",
            "webhooks",
            "hooks",
            "deliveries",
            "tags",
            "products",
            "members",
            "signals",
            "comments",
            "users",
        )
        for i in getattr(other, kind)
        if i in text
    ]
    assert not foreign, f"GET {route.path} shows the other workspace's {foreign}"
