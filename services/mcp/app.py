"""The MCP process: the house's aiohttp app (health, readiness, metrics, internal token, logs,
SIGTERM) serving the MCP SDK's Streamable HTTP transport at `/api/v1/mcp` (docs/mcp.md).

The transport runs stateless and answers JSON: every POST is one JSON-RPC message with its
whole answer, so any replica answers any request, behind the gateway's plain proxy.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aiohttp import web
from aiohttp.typedefs import Handler
from aiohttp_asgi import ASGIResource
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from libs.api.mcp.routes import MCP_PATH
from libs.api.table import TOOL_ROUTES
from libs.common.errors import ValidationFailed
from libs.common.web import PEERS, create_app, http_context, stop_tasks

from .catalogue import build
from .server import Services, ToolServer
from .settings import McpSettings

TOOLS = web.AppKey("tools", ToolServer)
MANAGER = web.AppKey("mcp_sessions", StreamableHTTPSessionManager)


async def _sessions(app: web.Application) -> AsyncIterator[None]:
    """The session manager's task group, held by one task from start to stop (anyio scopes
    must be left by the task that entered them; aiohttp starts and cleans up in different ones)."""
    app[TOOLS].services = Services(app[PEERS])
    running, stop = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with app[MANAGER].run():
            running.set()
            await stop.wait()

    task = asyncio.create_task(hold(), name="mcp-sessions")
    started = asyncio.create_task(running.wait())
    await asyncio.wait({task, started}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        started.cancel()
        task.result()  # it failed to start: say why
    yield
    stop.set()  # in-flight requests are done: aiohttp waited for them before cleaning up
    await asyncio.wait({task}, timeout=5.0)
    await stop_tasks([task])


@web.middleware
async def json_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A POST that is not JSON is refused in the API's error envelope, before the transport
    (which would answer it in plain text)."""
    if (
        request.method == "POST"
        and request.path == MCP_PATH
        and request.content_type != "application/json"
    ):
        raise ValidationFailed("Content-Type must be application/json", field="Content-Type")
    return await handler(request)


def create_mcp_app(settings: McpSettings) -> web.Application:
    app = create_app(settings, "mcp", middlewares=[json_only])
    tools = ToolServer(build(TOOL_ROUTES), None)
    # Stateless: no session survives a request, so replicas need no affinity. DNS-rebinding
    # checks guard unauthenticated local servers; this one is reached only through the
    # gateway, which requires an API key.
    manager = StreamableHTTPSessionManager(
        app=tools.server,
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    app[TOOLS], app[MANAGER] = tools, manager
    app.cleanup_ctx.append(http_context)
    app.cleanup_ctx.append(_sessions)
    app.router.register_resource(ASGIResource(StreamableHTTPASGIApp(manager), root_path=MCP_PATH))
    return app
