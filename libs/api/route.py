"""The route table's shape: one `Route` per public operation.

Each service declares its routes in `libs/api/<service>/routes.py` (`ROUTES`), and
`libs/api/table.py` joins them into `ROUTE_TABLE`. The gateway routes, checks scopes and plans,
and builds the OpenAPI document from it; each service mounts its handlers from its part. One table, so routing, scopes and documentation cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

API = "/api/v1"
UUID_RE = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# An idea's `IDEA-<n>` in a path (any case): every path whose `{id}` names an idea takes it.
IDEA_REF_RE = "[iI][dD][eE][aA]-[0-9]{1,19}"
IDEA_REF_PATTERN = "^[iI][dD][eE][aA]-[0-9]{1,19}$"


def is_idea_path(path: str) -> bool:
    """A path whose `{id}` names an idea: `/ideas/{id}` and every route under it."""
    return path == f"{API}/ideas/{{id}}" or path.startswith(f"{API}/ideas/{{id}}/")


SCOPES = (
    "ideas:read",
    "ideas:write",
    "ideas:vote",
    "webhooks:manage",
    "workspace:read",
    "workspace:write",
    "roadmap:read",
    "roadmap:write",
    "customers:read",
    "customers:write",
    "analytics:read",
)


@dataclass(frozen=True)
class Tool:
    """The MCP tool of a route (docs/mcp.md): declared on the route, so that its scope, plan
    gate, input fields and answer come from the route's own declarations.

    The tool's inputs are the path's `{id}` (named `path_input`) and the fields of the route's
    body or query model listed in `inputs`, renamed by `rename` (tool input -> REST field).
    Inputs in `idea_inputs` name an idea and take its uuid or its `IDEA-<n>` id. `limit` gives
    the tool's own default and maximum for a `limit` input. The answer is the REST answer's
    `data`, or, with `key`, `{key: data}`; `page` adds `nextCursor` and `total` from its
    `pagination`.
    """

    name: str
    description: str
    inputs: tuple[str, ...] = ()
    path_input: str | None = None
    rename: Mapping[str, str] = field(default_factory=dict)
    idea_inputs: tuple[str, ...] = ()
    required: tuple[str, ...] = ()  # inputs required by the tool though optional in REST
    limit: tuple[int, int] | None = None  # (default, maximum)
    key: str | None = None
    page: bool = False
    descriptions: Mapping[str, str] = field(default_factory=dict)  # input -> description


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # OpenAPI-style, e.g. /api/v1/ideas/{id}
    service: str  # gateway | ideas | similar | customers | webhooks | analytics | mcp
    operation_id: str  # also the name of the service's view function
    scope: str | None  # None: any valid key
    summary: str = ""
    body: type[BaseModel] | None = None
    body_required: bool = True
    query: type[BaseModel] | None = None
    # status -> response model (or a type pydantic can describe); "csv" for text/csv streams
    responses: dict[int, Any] = field(default_factory=dict)
    success_status: int = 200
    plan_gated: bool = False  # starter workspaces get 403 plan_required
    export: bool = False  # counts in the hourly export window
    # Forwarded when the gateway forwards nothing else and is not loaded, or after
    # LOW_PRIORITY_WAIT_MS (docs/gateway.md#priorities).
    low_priority: bool = False
    automation: bool = False  # automation API: errors per its rules
    tags: tuple[str, ...] = ()
    description: str = ""
    tool: Tool | None = None  # its MCP tool, if it has one
    # Dotted paths to secrets in the success answer (e.g. "data.secret"): shown once, then
    # masked in the answer an Idempotency-Key replay gives (docs/gateway.md).
    secret_fields: tuple[str, ...] = ()
    # A POST that changes nothing (a search sent as a POST): its Idempotency-Key is checked
    # and otherwise ignored, and no answer of it is stored (docs/gateway.md, Idempotency-Key).
    read_only: bool = False
    # The body is a JSON-RPC message (the MCP endpoint): a `tools/call` of a tool whose route
    # changes state is stored for an Idempotency-Key like that route; any other message is
    # read-only (docs/gateway.md, Idempotency-Key).
    tool_calls: bool = False

    @property
    def aiohttp_path(self) -> str:
        """The path with its parameters (`{id}`, `{deliveryId}`) restricted to UUIDs (others
        are not found)."""
        return re.sub(r"\{(\w+)\}", lambda m: "{" + m.group(1) + ":" + UUID_RE + "}", self.path)

    @property
    def aiohttp_idea_ref_path(self) -> str | None:
        """For a path whose `{id}` names an idea, the same path with `{id}` an `IDEA-<n>`
        (its other parameters UUIDs); None for other paths."""
        if not is_idea_path(self.path):
            return None
        return re.sub(
            r"\{(\w+)\}",
            lambda m: (
                "{id:" + IDEA_REF_RE + "}"
                if m.group(1) == "id"
                else "{" + m.group(1) + ":" + UUID_RE + "}"
            ),
            self.path,
        )

    @property
    def path_params(self) -> list[str]:
        return re.findall(r"\{(\w+)\}", self.path)
