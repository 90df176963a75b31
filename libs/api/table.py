"""The route table: every service's `ROUTES`, the single source for routing, scopes and OpenAPI."""

from __future__ import annotations

from libs.api.analytics.routes import ROUTES as ANALYTICS
from libs.api.customers.routes import ROUTES as CUSTOMERS
from libs.api.gateway.routes import ROUTES as GATEWAY
from libs.api.ideas.routes import ROUTES as IDEAS
from libs.api.mcp.routes import ROUTES as MCP
from libs.api.route import Route
from libs.api.similar.routes import ROUTES as SIMILAR
from libs.api.webhooks.routes import ROUTES as WEBHOOKS

ROUTE_TABLE: tuple[Route, ...] = (
    *GATEWAY,
    *IDEAS,
    *SIMILAR,
    *CUSTOMERS,
    *WEBHOOKS,
    *ANALYTICS,
    *MCP,
)

# The routes an MCP tool calls (docs/mcp.md).
TOOL_ROUTES: tuple[Route, ...] = tuple(r for r in ROUTE_TABLE if r.tool is not None)
