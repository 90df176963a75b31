"""The route table: every service's `ROUTES`, the single source for routing, scopes and OpenAPI."""

from __future__ import annotations

from libs.common.contract import Route
from services.analytics.contract import ROUTES as ANALYTICS
from services.customers.contract import ROUTES as CUSTOMERS
from services.gateway.contract import ROUTES as GATEWAY
from services.ideas.contract import ROUTES as IDEAS
from services.mcp.contract import ROUTES as MCP
from services.webhooks.contract import ROUTES as WEBHOOKS

ROUTE_TABLE: tuple[Route, ...] = (*GATEWAY, *IDEAS, *CUSTOMERS, *WEBHOOKS, *ANALYTICS, *MCP)
