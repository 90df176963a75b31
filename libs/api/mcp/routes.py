"""The MCP endpoint's public route (docs/mcp.md). The gateway authenticates, limits and forwards it
like any other route; the tools themselves are declared beside the routes they call."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from libs.api.route import API, Route

MCP_PATH = f"{API}/mcp"


class JsonRpcMessage(BaseModel):
    """One JSON-RPC 2.0 request or notification of the Model Context Protocol, as its Streamable
    HTTP transport POSTs it (this stateless server asks clients nothing, so they post no
    responses)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "get_idea", "arguments": {"id": "IDEA-42"}},
                }
            ]
        },
    )

    jsonrpc: Literal["2.0"] = Field(description="Always `2.0`.")
    id: Any = Field(
        default=None,
        description="The request id, a string or a number; absent "
        "on a notification. The transport takes a message whose id is anything else "
        "as a notification (202, no answer).",
    )
    method: str = Field(
        description="e.g. `initialize`, `tools/list`, `tools/call`, `notifications/initialized`."
    )
    params: dict[str, Any] = Field(
        default=None,  # type: ignore[arg-type]
        description="The method's parameters.",
    )


class JsonRpcAnswer(BaseModel):
    """The JSON-RPC 2.0 answer: `result`, or `error` with a JSON-RPC error code."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [{"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "get_idea"}]}}]
        },
    )

    jsonrpc: str = Field(description="Always `2.0`.")
    id: int | str | None = Field(description="The id of the request answered.")
    result: dict[str, Any] | None = Field(default=None, description="The method's result.")
    error: dict[str, Any] | None = Field(default=None, description="`{code, message, data?}`.")


# A message the transport cannot take is answered with a JSON-RPC error (the protocol's rule); a
# request the gateway or the process refuses before that, with the API's error envelope.
BAD_REQUEST: dict[str, Any] = {
    "description": "A JSON-RPC error answer, or the API's error envelope",
    "oneOf": [
        {"$ref": "#/components/schemas/JsonRpcAnswer"},
        {"$ref": "#/components/schemas/Error"},
    ],
}

ROUTES = [
    Route(
        "POST",
        MCP_PATH,
        "mcp",
        "mcp",
        None,
        "Model Context Protocol endpoint (Streamable HTTP)",
        body=JsonRpcMessage,
        responses={200: JsonRpcAnswer, 202: None, 400: BAD_REQUEST},
        tool_calls=True,
        tags=("MCP",),
        description="An MCP server speaking protocol 2025-11-25 (and later) over the "
        "Streamable HTTP transport, stateless: every POST carries one JSON-RPC "
        "message and is answered with `application/json` (202 with no body for a "
        "notification). Send `Accept: application/json, text/event-stream`. "
        "`tools/list` lists the tools the key's scopes and plan allow; a tool "
        "call does what its REST route does. Each POST counts in the rate-limit "
        "window. Tools and a client configuration: docs/mcp.md.",
    ),
]
