"""What a key sees and may call over MCP: scopes and plans shape the list, workspaces stay apart,
errors come back as the REST envelope, and the gateway authenticates, counts and labels every
HTTP request."""

from __future__ import annotations

import uuid
from typing import Any

import aiohttp
import orjson
import pytest
from mcp import MCPError

from tests.conftest import WorkspaceFactory
from tests.mcp.support import MCP_PATH, call, call_error, mcp_session
from tests.support.api import Workspace
from tests.support.processes import System
from tests.webhooks.support import Receiver, verify

ALL_TOOLS = {
    "search_ideas",
    "get_idea",
    "create_idea",
    "update_idea",
    "vote_idea",
    "find_similar_ideas",
    "merge_ideas",
    "record_signal",
    "add_comment",
    "list_customers",
    "link_customer",
    "analytics_summary",
    "list_roadmap_stages",
}


async def _names(system: System, key: str) -> set[str]:
    async with mcp_session(system.base_url, key) as s:
        tools = (await s.list_tools()).tools
    for tool in tools:
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
    return {t.name for t in tools}


@pytest.mark.parametrize(
    ("scopes", "plan", "expected"),
    [
        ("all", "pro", ALL_TOOLS),
        ("all", "starter", ALL_TOOLS - {"analytics_summary"}),
        ("ideas:read", "pro", {"search_ideas", "get_idea", "find_similar_ideas"}),
        (
            "ideas:write,ideas:vote",
            "pro",
            {
                "create_idea",
                "update_idea",
                "vote_idea",
                "merge_ideas",
                "record_signal",
                "add_comment",
            },
        ),
        ("customers:read,customers:write", "pro", {"list_customers", "link_customer"}),
        ("analytics:read,roadmap:read", "growth", {"analytics_summary", "list_roadmap_stages"}),
        ("analytics:read", "starter", set()),
        ("webhooks:manage,workspace:read", "enterprise", set()),
    ],
)
async def test_tool_list_follows_scopes_and_plan(
    system: System, new_workspace: WorkspaceFactory, scopes: str, plan: str, expected: set[str]
) -> None:
    """tools/list lists exactly the tools whose scope the key holds and whose plan allows it."""
    ws = await new_workspace(plan=plan)
    key = (await ws.new_key(system.database_url, scopes=scopes))["key"]
    assert await _names(system, key) == expected


async def test_unlisted_and_unknown_tools_are_json_rpc_errors(
    system: System, new_workspace: WorkspaceFactory
) -> None:
    """A tool the key's scopes or plan do not list, or no tool at all, is a JSON-RPC error, and
    nothing happens."""
    ws = await new_workspace(plan="starter")
    key = (await ws.new_key(system.database_url, scopes="ideas:read,analytics:read"))["key"]
    async with mcp_session(system.base_url, key) as s:
        for name, args in (
            ("create_idea", {"title": "Sneaky"}),
            ("analytics_summary", {}),
            ("drop_everything", {}),
        ):
            with pytest.raises(MCPError) as caught:
                await s.call_tool(name, args)
            assert caught.value.code == -32602 and name in caught.value.message
    assert (await ws.api.get("/api/v1/ideas")).json["pagination"]["total"] == 0


async def test_errors_are_tool_results_with_the_rest_envelope(ws: Workspace) -> None:
    """Validation, not-found and conflict outcomes are `isError` results naming the tool's input."""
    async with mcp_session(ws.api.base_url, ws.key) as s:
        idea = await call(s, "create_idea", title="Webhooks")
        cases: list[tuple[str, dict[str, Any], str, str | None]] = [
            ("create_idea", {"title": ""}, "validation_error", "title"),
            ("create_idea", {"summary": "no title"}, "validation_error", "title"),
            ("create_idea", {"title": "x", "priority": "high"}, "validation_error", "priority"),
            ("search_ideas", {"limit": 51}, "validation_error", "limit"),
            ("search_ideas", {"query": "x" * 201}, "validation_error", "query"),
            ("search_ideas", {"status": "done"}, "validation_error", "status"),
            ("search_ideas", {"cursor": "not-a-cursor"}, "validation_error", "cursor"),
            (
                "update_idea",
                {"id": idea["id"], "riceConfidence": 2},
                "validation_error",
                "riceConfidence",
            ),
            ("update_idea", {"id": idea["id"]}, "validation_error", None),
            ("vote_idea", {"id": idea["id"], "value": 2}, "validation_error", "value"),
            ("get_idea", {"id": "IDEA-999"}, "not_found", "id"),
            ("get_idea", {"id": "webhooks"}, "not_found", "id"),
            ("get_idea", {"id": 1}, "not_found", "id"),
            ("get_idea", {"id": "IDEA-99999999999999999999"}, "not_found", "id"),
            ("get_idea", {"id": str(uuid.uuid4())}, "not_found", None),
            (
                "link_customer",
                {"ideaId": idea["id"], "customerId": str(uuid.uuid4())},
                "not_found",
                None,
            ),
            (
                "link_customer",
                {"ideaId": "IDEA-0", "customerId": str(uuid.uuid4())},
                "not_found",
                "ideaId",
            ),
            (
                "merge_ideas",
                {"duplicateId": idea["id"], "intoId": idea["id"]},
                "validation_error",
                "intoId",
            ),
            (
                "merge_ideas",
                {"duplicateId": "IDEA-999", "intoId": idea["id"]},
                "not_found",
                "duplicateId",
            ),
            (
                "merge_ideas",
                {"duplicateId": idea["id"], "intoId": "IDEA-999"},
                "not_found",
                "intoId",
            ),
            ("merge_ideas", {"duplicateId": idea["id"], "intoId": "nope"}, "not_found", "intoId"),
            (
                "merge_ideas",
                {"duplicateId": idea["id"], "intoId": str(uuid.uuid4())},
                "not_found",
                None,
            ),
            ("find_similar_ideas", {"text": ""}, "validation_error", "text"),
            ("find_similar_ideas", {"text": "x", "limit": 51}, "validation_error", "limit"),
            ("find_similar_ideas", {"limit": 5}, "validation_error", "text"),
        ]
        for name, args, code, field in cases:
            error = await call_error(s, name, **args)
            assert error["code"] == code, (name, args, error)
            assert error.get("field") == field, (name, args, error)
            assert error["message"]
        assert (await call(s, "get_idea", id=idea["id"]))["title"] == "Webhooks"


async def test_workspaces_stay_apart(system: System, new_workspace: WorkspaceFactory) -> None:
    """A key reaches its own workspace's ideas only: IDEA-1 is its own, another's is not found."""
    a, b = await new_workspace(), await new_workspace()
    theirs = (await a.api.post("/api/v1/ideas", json={"title": "Secret roadmap item"})).data
    async with mcp_session(system.base_url, b.key) as s:
        mine = await call(s, "create_idea", title="Our own")
        assert mine["ideaServiceId"] == theirs["ideaServiceId"] == "IDEA-1"
        assert (await call(s, "get_idea", id="IDEA-1"))["id"] == mine["id"]
        assert (await call_error(s, "get_idea", id=theirs["id"]))["code"] == "not_found"
        changed = await call_error(s, "update_idea", id=theirs["id"], title="Mine now")
        assert changed["code"] == "not_found"
        assert (await call_error(s, "vote_idea", id=theirs["id"]))["code"] == "not_found"
        found = await call(s, "search_ideas", query="secret")
        assert found == {"ideas": [], "nextCursor": None, "total": 0}
    assert (await a.api.get(f"/api/v1/ideas/{theirs['id']}")).data["title"] == "Secret roadmap item"


def _message(method: str, params: dict[str, Any] | None = None, id: int | None = 1) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        msg["id"] = id
    if params is not None:
        msg["params"] = params
    return orjson.dumps(msg)


INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


async def test_every_http_request_counts_in_the_workspace_window(
    system: System, new_workspace: WorkspaceFactory, http: aiohttp.ClientSession
) -> None:
    """Each POST to /api/v1/mcp takes one request of the window (a tool call no more), carries
    the RateLimit headers and a request id, and the one past the limit answers 429."""
    ws = await new_workspace(rate_limit=5)
    auth = {**HEADERS, "Authorization": f"Bearer {ws.key}"}
    url = system.base_url + MCP_PATH
    bodies = [
        _message("initialize", INITIALIZE),
        _message("notifications/initialized", id=None),
        _message("tools/list", {}),
        _message("tools/call", {"name": "create_idea", "arguments": {"title": "Counted"}}),
        _message("tools/call", {"name": "list_roadmap_stages", "arguments": {}}),
    ]
    for n, body in enumerate(bodies):
        async with http.post(url, data=body, headers=auth) as r:
            assert r.status in (200, 202), await r.text()
            assert r.headers["RateLimit-Limit"] == "5"
            assert r.headers["RateLimit-Remaining"] == str(4 - n)
            assert r.headers["X-Request-Id"]
    async with http.post(url, data=bodies[2], headers=auth) as r:
        assert r.status == 429 and int(r.headers["Retry-After"]) > 0
        assert (await r.json())["error"]["code"] == "rate_limited"
    async with http.get(
        system.base_url + "/api/v1/ideas", headers={"Authorization": f"Bearer {ws.key}"}
    ) as r:
        assert r.status == 429  # one window for REST and MCP together


async def test_the_endpoint_needs_a_key(system: System, http: aiohttp.ClientSession) -> None:
    """Without a valid key: 401 with the error envelope, before anything else."""
    url = system.base_url + MCP_PATH
    body = _message("initialize", INITIALIZE)
    async with http.post(url, data=body, headers=HEADERS) as r:
        assert r.status == 401
        assert (await r.json())["error"]["code"] == "unauthorized"
    async with http.post(
        url, data=body, headers={**HEADERS, "Authorization": "Bearer ims_live_nope"}
    ) as r:
        assert r.status == 401
        assert (await r.json())["error"]["code"] == "invalid_key"


async def test_a_tool_call_fires_webhooks(ws: Workspace) -> None:
    """create_idea and update_idea deliver idea.created, idea.updated and idea.status_changed,
    signed, like the REST calls do."""
    receiver = await Receiver().start()
    try:
        path = receiver.new_path()
        sub = (
            await ws.api.post(
                "/api/v1/webhooks",
                json={
                    "targetUrl": receiver.url(path),
                    "events": ["idea.created", "idea.updated", "idea.status_changed"],
                },
            )
        ).data
        async with mcp_session(ws.api.base_url, ws.key) as s:
            idea = await call(s, "create_idea", title="Slack integration")
            await call(s, "update_idea", id=idea["ideaServiceId"], status="planned")
        got = await receiver.wait(path, 3)
    finally:
        await receiver.stop()
    kinds = sorted(g.headers["X-Service-Event"] for g in got)
    assert kinds == ["idea.created", "idea.status_changed", "idea.updated"]
    created = next(g for g in got if g.headers["X-Service-Event"] == "idea.created")
    assert created.json["data"]["idea"] == idea and created.json["workspaceId"] == ws.id
    assert all(verify(sub["secret"], g) for g in got)


async def test_get_answers_405(system: System, ws: Workspace, http: aiohttp.ClientSession) -> None:
    """No server-initiated stream: GET is 405, as the transport permits."""
    async with http.get(
        system.base_url + MCP_PATH,
        headers={"Authorization": f"Bearer {ws.key}", "Accept": "text/event-stream"},
    ) as r:
        assert r.status == 405
        assert (await r.json())["error"]["code"] == "method_not_allowed"


async def test_messages_the_transport_cannot_take_are_answered_as_documented(ws: Workspace) -> None:
    """A body that is not JSON gets the API's envelope naming Content-Type; a JSON-RPC message
    without a method gets a JSON-RPC error. Both are 400s the document describes (the test
    client checks every answer against it)."""
    r = await ws.api.request(
        "POST", MCP_PATH, body=b"tools/list", headers={"Content-Type": "text/plain"}
    )
    assert r.status == 400
    assert r.error == {
        "code": "validation_error",
        "field": "Content-Type",
        "message": "Content-Type must be application/json",
    }
    r = await ws.api.request(
        "POST",
        MCP_PATH,
        json={"jsonrpc": "2.0", "id": 1},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert r.status == 400 and r.json["jsonrpc"] == "2.0" and r.json["error"]["code"] < 0
