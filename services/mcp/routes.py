"""The routes whose tools the MCP process serves: the public route table's services."""

from libs.common.contract import Route
from services.analytics.contract import ROUTES as ANALYTICS
from services.customers.contract import ROUTES as CUSTOMERS
from services.ideas.contract import ROUTES as IDEAS
from services.webhooks.contract import ROUTES as WEBHOOKS

TOOL_ROUTES: tuple[Route, ...] = tuple(
    r for r in (*IDEAS, *CUSTOMERS, *WEBHOOKS, *ANALYTICS) if r.tool is not None)
