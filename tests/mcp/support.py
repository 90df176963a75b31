"""The official MCP SDK client, connected through the gateway with an API key."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import orjson
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

MCP_PATH = "/api/v1/mcp"


@contextlib.asynccontextmanager
async def mcp_session(base_url: str, key: str) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session for `key` (the `initialize` handshake included)."""
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30.0)
    )
    async with (
        http,
        streamable_http_client(base_url + MCP_PATH, http_client=http) as streams,
        ClientSession(*streams) as session,
    ):
        await session.initialize()
        yield session


def structured(result: CallToolResult) -> Any:
    """The result's `structuredContent`, checked to be the same JSON as its one text item."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    assert orjson.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def call(session: ClientSession, name: str, **arguments: Any) -> Any:
    """A successful tool call's structured content."""
    result = await session.call_tool(name, arguments)
    assert not result.is_error, result.structured_content
    return structured(result)


async def call_error(session: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    """A failed tool call's error (`isError: true`, the REST envelope)."""
    result = await session.call_tool(name, arguments)
    assert result.is_error, result.structured_content
    envelope = structured(result)
    assert set(envelope) == {"error"}
    return envelope["error"]  # type: ignore[no-any-return]
