"""The tool catalogue: each route's `Tool` declaration turned into an MCP tool.

Everything a tool is made of comes from its route: the scope and plan gate, the input fields
(copied with their types and limits from the route's body or query model), the answer (the
route's response model's `data`), and the call (method and path). Nothing is declared twice.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import mcp.types as types
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, WithJsonSchema, create_model

from libs.api.plans import GATED_PLANS
from libs.api.route import Route, Tool

IDEA_NUMBER = re.compile(r"IDEA-([1-9][0-9]{0,18})")
# An idea input takes any value; whatever is neither a uuid nor `IDEA-<n>` names no idea.
IdeaRef = Annotated[Any, WithJsonSchema({"type": "string"})]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


@dataclass(frozen=True)
class ToolCall:
    method: str
    path: str
    query: dict[str, str] | None
    body: dict[str, Any] | None


@dataclass(frozen=True)
class CatalogueTool:
    tool: Tool
    route: Route
    inputs: type[BaseModel]
    output: Any

    @property
    def name(self) -> str:
        return self.tool.name

    def allowed(self, scopes: frozenset[str], plan: str) -> bool:
        """Whether a key with these scopes, in a workspace on this plan, may list and call it."""
        scope_ok = self.route.scope is None or self.route.scope in scopes
        return scope_ok and not (self.route.plan_gated and plan in GATED_PLANS)

    def definition(self) -> types.Tool:
        output = untitled(TypeAdapter(self.output).json_schema(mode="serialization"))
        return types.Tool(
            name=self.name,
            description=self.tool.description,
            input_schema=untitled(self.inputs.model_json_schema()),
            output_schema=output,
        )

    def call(self, arguments: Mapping[str, Any], ideas: Mapping[str, uuid.UUID]) -> ToolCall:
        """The REST call for validated `arguments`; `ideas` holds the resolved idea inputs."""
        t = self.tool
        path = self.route.path
        if t.path_input is not None:
            path = path.replace("{id}", str(ideas[t.path_input]))
        values = {
            t.rename.get(k, k): (str(ideas[k]) if k in ideas else v)
            for k, v in arguments.items()
            if k != t.path_input
        }
        if t.limit is not None and "limit" in t.inputs:
            values.setdefault("limit", t.limit[0])
        if self.route.method == "GET":
            query = {k: _query_value(v) for k, v in values.items() if v is not None}
            return ToolCall("GET", path, query, None)
        body = values if values or self.route.body is not None else None
        return ToolCall(self.route.method, path, None, body)

    def result(self, answer: Any) -> Any:
        """The tool's `structuredContent` from the REST answer."""
        t = self.tool
        data = answer["data"]
        if t.page:
            page = answer["pagination"]
            return {t.key: data, "nextCursor": page["nextCursor"], "total": page["total"]}
        return {t.key: data} if t.key else data

    def input_name(self, field: str | None) -> str | None:
        """The tool input a REST error's `field` is about (`None`: about none of them)."""
        head = re.match(r"[^.\[]*", field or "").group(0)  # type: ignore[union-attr]
        inverse = {rest: name for name, rest in self.tool.rename.items()}
        name = inverse.get(head) or (None if head in self.tool.rename else head)
        if not name or name not in self.inputs.model_fields or name == self.tool.path_input:
            return None
        return name + (field or "")[len(head) :]


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def untitled(node: Any, properties: bool = False) -> Any:
    """A JSON schema without pydantic's generated `title`s (the descriptions say what things are)
    and without `default: null` (an omitted input is left as it is, whatever its type)."""
    if isinstance(node, dict):
        return {
            k: untitled(v, k in ("properties", "$defs") and not properties)
            for k, v in node.items()
            if properties or not (k == "title" or (k == "default" and v is None))
        }
    if isinstance(node, list):
        return [untitled(v) for v in node]
    return node


def _camel(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))


def input_model(tool: Tool, route: Route) -> type[BaseModel]:
    """The tool's arguments as a model: the route's own fields, with the tool's names."""
    source = route.body or route.query
    fields: dict[str, Any] = {}
    names = ((tool.path_input,) if tool.path_input else ()) + tool.inputs
    for name in names:
        doc = tool.descriptions.get(name)
        if name in tool.idea_inputs:
            fields[name] = (IdeaRef, Field(description=doc))
            continue
        if name == "limit" and tool.limit is not None:
            fields[name] = (
                int,
                Field(default=tool.limit[0], ge=1, le=tool.limit[1], description=doc),
            )
            continue
        assert source is not None, f"{tool.name}: {route.operation_id} takes no {name}"
        info = copy.copy(source.model_fields[tool.rename.get(name, name)])
        if doc:
            info.description = doc
        if name in tool.required:
            info.default = ...
        fields[name] = (info.annotation, info)
    return create_model(f"{_camel(tool.name)}Input", __base__=_Strict, **fields)


def output_type(tool: Tool, route: Route) -> Any:
    """What the tool answers: the REST answer's `data`, under `tool.key` if any, with the page."""
    data = route.responses[route.success_status].model_fields["data"].annotation
    if not tool.key:
        return data
    fields: dict[str, Any] = {tool.key: (data, ...)}
    if tool.page:
        fields["nextCursor"] = (
            str | None,
            Field(description="Pass it back as `cursor` for the next page; null on the last."),
        )
        fields["total"] = (int, Field(description="Every record matching the inputs."))
    config = ConfigDict(extra="forbid")
    return create_model(f"{_camel(tool.name)}Result", __config__=config, **fields)


def build(routes: Iterable[Route]) -> dict[str, CatalogueTool]:
    """The catalogue of every route that declares a tool, by tool name."""
    out: dict[str, CatalogueTool] = {}
    for route in routes:
        if route.tool is None:
            continue
        assert route.tool.name not in out, f"tool {route.tool.name} declared twice"
        out[route.tool.name] = CatalogueTool(
            route.tool, route, input_model(route.tool, route), output_type(route.tool, route)
        )
    return out


def idea_ref(value: Any) -> uuid.UUID | int | None:
    """A uuid, an `IDEA-<n>` number, or None when the value names no idea."""
    if not isinstance(value, str):
        return None
    match = IDEA_NUMBER.fullmatch(value)
    if match is not None:
        number = int(match.group(1))
        return number if number < 2**63 else None
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
