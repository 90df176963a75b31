"""The MCP server: `tools/list` and `tools/call` over the catalogue, for the caller the gateway
authenticated.

A tool call is the REST call of its route, sent to the owning service with the caller's
identity and the internal token, exactly as the gateway forwards a REST request: the service
validates, writes, emits its events and answers; the answer becomes the tool result. A 4xx or
5xx answer becomes a result with `isError: true` whose content is the REST error envelope, its
`field` renamed to the tool's input. A tool the key may not use is a JSON-RPC error, as if it
did not exist.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import aiohttp
import mcp.types as types
import orjson
import structlog
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from libs.common.caller import H_REQUEST_ID, Caller, caller_from_headers
from libs.common.errors import ApiError, NotFound, ServiceUnavailable, Unauthorized
from libs.common.peers import Peers
from libs.common.render import dumps
from libs.common.validation import validation_failure

from .catalogue import CatalogueTool, idea_ref

TIMEOUT = aiohttp.ClientTimeout(total=60, sock_connect=5)
log = structlog.get_logger("mcp")


class Services:
    """The owning services' HTTP APIs (libs/common/peers.py), their answers parsed."""

    def __init__(self, peers: Peers) -> None:
        self.peers = peers

    async def call(
        self,
        who: Caller,
        service: str,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> tuple[int, Any]:
        """Status and parsed JSON answer of one call, made as `who`."""
        status, raw = await self.peers.call(
            who, service, method, path, query=query, json=body, timeout=TIMEOUT
        )
        try:
            return status, orjson.loads(raw)
        except orjson.JSONDecodeError as err:
            raise ServiceUnavailable(f"The {service} service answered {status}") from err


def _caller(ctx: ServerRequestContext[Any, Any]) -> Caller:
    request = ctx.request
    headers = request.headers if request is not None else {}
    who = caller_from_headers(headers, headers.get(H_REQUEST_ID, "") or uuid.uuid4().hex)
    if who is None:  # the internal-token middleware let the request in: the gateway sent it
        raise MCPError(
            types.INVALID_REQUEST, str(Unauthorized("Calls must come through the gateway"))
        )
    return who


def _result(content: Any, error: bool = False) -> types.CallToolResult:
    text = dumps(content).decode()
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=content, is_error=error
    )


def _error(err: ApiError) -> types.CallToolResult:
    """A failure found here: its `field`, if any, already names the tool's input."""
    return _result(err.body(), error=True)


def _renamed(tool: CatalogueTool, envelope: Any) -> Any:
    """The REST error envelope with `field` naming the tool's input (dropped if it names none)."""
    error = dict(envelope["error"])
    if "field" in error:
        name = tool.input_name(error.pop("field"))
        if name is not None:
            error["field"] = name
    return {"error": error}


class ToolServer:
    """The SDK's low-level server with the catalogue's two handlers."""

    def __init__(self, tools: Mapping[str, CatalogueTool], services: Services | None) -> None:
        self.tools = tools
        self.services = services
        self._definitions = {name: t.definition() for name, t in tools.items()}
        self.server: Server[Any] = Server(
            "idea-management",
            version="1.1.0",
            instructions=INSTRUCTIONS,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )

    def _allowed(self, who: Caller) -> list[str]:
        return [n for n, t in self.tools.items() if t.allowed(who.scopes, who.plan)]

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        who = _caller(ctx)
        return types.ListToolsResult(tools=[self._definitions[n] for n in self._allowed(who)])

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        who = _caller(ctx)
        tool = self.tools.get(params.name)
        if tool is None or not tool.allowed(who.scopes, who.plan):
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        arguments = params.arguments or {}
        try:
            return await self._call(who, tool, arguments)
        except ApiError as err:
            return _error(err)

    async def _call(
        self, who: Caller, tool: CatalogueTool, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        assert self.services is not None
        try:
            tool.inputs.model_validate_json(dumps(arguments), strict=True)
        except ValidationError as err:
            raise validation_failure(err) from err
        ideas = {
            name: await self._idea_id(who, name, arguments[name])
            for name in tool.tool.idea_inputs
            if name in arguments
        }
        call = tool.call(arguments, ideas)
        status, answer = await self.services.call(
            who, tool.route.service, call.method, call.path, query=call.query, body=call.body
        )
        log.info("tool_call", tool=tool.name, status=status)
        if 200 <= status < 300:
            return _result(tool.result(answer))
        if not (isinstance(answer, dict) and isinstance(answer.get("error"), dict)):
            raise ServiceUnavailable(f"The {tool.route.service} service answered {status}")
        return _result(_renamed(tool, answer), error=True)

    async def _idea_id(self, who: Caller, name: str, value: Any) -> uuid.UUID:
        """The uuid an idea input names (its uuid or `IDEA-<n>`); not_found for anything else."""
        assert self.services is not None
        ref = idea_ref(value)
        if isinstance(ref, uuid.UUID):
            return ref
        if ref is not None:
            status, answer = await self.services.call(
                who, "ideas", "GET", f"/internal/ideas/number/{ref}"
            )
            if status == 200:
                return uuid.UUID(answer["data"]["id"])
            if status != 404:
                raise ServiceUnavailable(f"The ideas service answered {status}")
        raise NotFound("Idea not found", field=name)


INSTRUCTIONS = (
    "Tools over one workspace of an idea management service: product ideas with votes, RICE "
    "scores, statuses and decisions, the customers who asked for them and their revenue, the "
    "roadmap stages, and analytics. Ideas are named by their uuid or their IDEA-<n> id. The "
    "tools listed are those the API key's scopes and plan allow."
)
