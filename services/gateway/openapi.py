"""The OpenAPI 3.1 document, built once from the route table and the pydantic models.

The route table (`libs/api`) says what each operation is; this module adds what holds for
every operation, so that a new route gets it without a word: the error answers, the request
id, rate-limit and idempotency headers, path parameter descriptions, examples lifted from the
models, `minProperties: 1` on PATCH bodies, and the `webhooks` section from the event models.
Titles that pydantic derives from names are dropped: descriptions say what a thing is.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web
from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode

from libs.api.route import API, IDEA_REF_PATTERN, Route, is_idea_path
from libs.api.table import ROUTE_TABLE
from libs.api.tags import TAGS
from libs.common.render import dumps

from .openapi_parts import (
    COMPONENT_HEADERS,
    ERROR_RESPONSES,
    ERROR_SCHEMAS,
    IDEMPOTENCY_KEY,
    INFO,
    SECURITY_SCHEMES,
    error_responses,
    header_refs,
    webhooks_section,
)

REF = "#/components/schemas/{model}"
PATH_NOUNS = {
    "ideas": "idea",
    "customers": "customer",
    "webhooks": "webhook subscription",
    "subscribe": "hook",
    "deliveries": "delivery",
}


class _Generator(GenerateJsonSchema):
    """Keeps keys as authored: examples read in the order the document lists the fields."""

    def sort(self, value: Any, parent_key: str | None = None) -> Any:
        return value


class Schemas:
    """The components/schemas being collected while the operations are built."""

    def __init__(self) -> None:
        self.components: dict[str, Any] = dict(ERROR_SCHEMAS)

    def schema(self, tp: Any, mode: JsonSchemaMode) -> dict[str, Any]:
        """A `$ref` to the model's component (added with every model it uses)."""
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            schema = tp.model_json_schema(ref_template=REF, mode=mode, schema_generator=_Generator)
        else:
            schema = TypeAdapter(tp).json_schema(
                ref_template=REF, mode=mode, schema_generator=_Generator
            )
        self.components.update(schema.pop("$defs", {}))
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            self.components[tp.__name__] = schema
            return {"$ref": REF.format(model=tp.__name__)}
        return schema

    def example(self, schema: dict[str, Any]) -> Any:
        """The first example of a schema or of the component it refers to; arrays of one."""
        if "$ref" in schema:
            schema = self.components[schema["$ref"].rsplit("/", 1)[1]]
        if schema.get("examples"):
            return schema["examples"][0]
        if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
            item = self.example(schema["items"])
            return None if item is None else [item]
        return None

    def media(self, tp: Any, mode: JsonSchemaMode) -> dict[str, Any]:
        schema = self.schema(tp, mode)
        example = self.example(schema)
        return {"schema": schema, **({"example": example} if example is not None else {})}


def _path_parameters(route: Route) -> list[dict[str, Any]]:
    params = []
    for before, name in re.findall(r"([^/{}]+)/\{(\w+)\}", route.path):
        noun = PATH_NOUNS.get(before, before.rstrip("s"))
        if name != "id":
            noun = PATH_NOUNS.get(name.removesuffix("Id") + "s", name.removesuffix("Id"))
        if name == "id" and is_idea_path(route.path):
            params.append(
                {
                    "name": name,
                    "in": "path",
                    "required": True,
                    "description": "The idea's id: its UUID, or its `IDEA-<n>` (`ideaServiceId`, "
                    "any case), which answers exactly as the UUID; anything else is not found",
                    "schema": {
                        "anyOf": [
                            {"type": "string", "format": "uuid"},
                            {"type": "string", "pattern": IDEA_REF_PATTERN},
                        ]
                    },
                }
            )
            continue
        params.append(
            {
                "name": name,
                "in": "path",
                "required": True,
                "description": f"The {noun}'s id (a UUID; anything else is not found)",
                "schema": {"type": "string", "format": "uuid"},
            }
        )
    return params


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A query parameter is present or absent, never null: drop the null branch."""
    branches = [s for s in schema.get("anyOf", []) if s.get("type") != "null"]
    if "anyOf" in schema and len(branches) == 1:
        rest = {k: v for k, v in schema.items() if k != "anyOf"}
        return {**branches[0], **rest}
    return schema


def _query_parameters(route: Route, schemas: Schemas) -> list[dict[str, Any]]:
    if route.query is None:
        return []
    schema = route.query.model_json_schema(
        ref_template=REF, mode="validation", schema_generator=_Generator
    )
    schemas.components.update(schema.pop("$defs", {}))
    required = set(schema.get("required", []))
    params = []
    for name, prop in schema.get("properties", {}).items():
        prop = _not_null(prop)
        description = prop.pop("description", "")
        params.append(
            {
                "name": name,
                "in": "query",
                "required": name in required,
                "description": description,
                "schema": prop,
            }
        )
    return params


def _description(route: Route) -> str:
    scope = f"Scope: `{route.scope}`." if route.scope else "Any valid key."
    plan = " Not on the starter plan." if route.plan_gated else ""
    return f"{route.description}\n\n{scope}{plan}".strip()


def _success(route: Route, schemas: Schemas) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    for status, tp in (route.responses or {route.success_status: None}).items():
        if isinstance(tp, dict) and int(status) >= 400:  # an error answer of its own
            schema = {k: v for k, v in tp.items() if k != "description"}
            responses[str(status)] = {
                "description": tp["description"],
                "headers": header_refs(route.method, False),
                "content": {"application/json": {"schema": schema}},
            }
            continue
        entry = responses.setdefault(
            str(status),
            {
                "description": "OK" if str(status) == "200" else "Created",
                "headers": header_refs(route.method, success=True, export=route.export),
            },
        )
        if tp == "csv":
            entry.setdefault("content", {})["text/csv"] = {
                "schema": {
                    "type": "string",
                    "description": "A header row, then one line per "
                    "record; nested fields flattened (`rice.score` as `riceScore`)",
                },
                "example": "id,ideaServiceId,title,status\r\n"
                "3f1c2a9e-8b4d-4e61-9a57-0c2d5e7f8a91,IDEA-42,Dark mode,planned\r\n",
            }
        elif tp is not None:
            entry.setdefault("content", {})["application/json"] = schemas.media(tp, "serialization")
    for entry in responses.values():
        # CSV first: a generated client that reads one content type per answer then takes
        # every export as text, whatever its format, instead of failing on CSV (docs/api.md).
        if "text/csv" in entry.get("content", {}):
            entry["content"] = {"text/csv": entry["content"].pop("text/csv"), **entry["content"]}
    return responses


def _operation(route: Route, schemas: Schemas) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "tags": list(route.tags),
        "description": _description(route),
        "parameters": _path_parameters(route) + _query_parameters(route, schemas),
        "security": [{"bearer": []}],
        "x-scope": route.scope,
    }
    if route.method == "POST":
        op["parameters"].append({"$ref": "#/components/parameters/IdempotencyKey"})
    if route.body is not None:
        media = schemas.media(route.body, "validation")
        if route.method == "PATCH":  # an update names at least one field
            schemas.components[route.body.__name__]["minProperties"] = 1
        op["requestBody"] = {
            "required": route.body_required,
            "content": {"application/json": media},
        }
    op["responses"] = _success(route, schemas)
    for status, name in ERROR_RESPONSES.items():  # a route may declare its own error answer
        op["responses"].setdefault(status, {"$ref": f"#/components/responses/{name}"})
    if not op["parameters"]:
        del op["parameters"]
    return op


def _document_operation() -> dict[str, Any]:
    return {
        "operationId": "openapi",
        "summary": "This document",
        "tags": ["Document"],
        "description": "The OpenAPI 3.1 document of the API, the source of the reference page "
        "at `/docs` and of generated clients. No key needed; limited to 60 "
        "requests per minute per client address.",
        "security": [],
        "responses": {
            "200": {
                "description": "OpenAPI 3.1 document",
                "headers": header_refs("GET", True),
                "content": {
                    "application/json": {
                        "schema": {"type": "object", "description": "An OpenAPI 3.1 document"},
                        "example": {
                            "openapi": "3.1.0",
                            "info": {"title": INFO["title"], "version": INFO["version"]},
                            "paths": {},
                        },
                    }
                },
            },
            **{
                status: {"$ref": f"#/components/responses/{ERROR_RESPONSES[status]}"}
                for status in ("405", "429", "500")
            },
        },
    }


def _allows_null(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(o, dict) and _allows_null(o) for o in schema.get("anyOf", []))


def _tidy(node: Any, in_properties: bool = False) -> Any:
    """Drop machine-made titles, and `default: null` on a type that refuses null (an optional
    field whose model default is None only to tell "omitted" from a value has no default)."""
    if isinstance(node, dict):
        if not in_properties:
            if isinstance(node.get("title"), str):
                del node["title"]
            if "default" in node and node["default"] is None and not _allows_null(node):
                del node["default"]
        for key, value in node.items():
            if key not in ("example", "examples", "default", "const", "enum"):
                _tidy(value, in_properties=not in_properties and key == "properties")
    elif isinstance(node, list):
        for value in node:
            _tidy(value)
    return node


# The order a path's operations are listed in, whatever the order of the route table.
VERB_ORDER = ("get", "head", "post", "put", "patch", "delete", "options", "trace")


def build_openapi(routes: tuple[Route, ...] = ROUTE_TABLE) -> dict[str, Any]:
    schemas = Schemas()
    paths: dict[str, Any] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, schemas)
    paths = {
        path: dict(sorted(ops.items(), key=lambda op: VERB_ORDER.index(op[0])))
        for path, ops in paths.items()
    }
    paths[f"{API}/openapi.json"] = {"get": _document_operation()}
    webhooks = webhooks_section(lambda tp: schemas.media(tp, "serialization"))
    used = {tag for path in paths.values() for op in path.values() for tag in op["tags"]}
    components = {
        "schemas": _without_examples(schemas.components),
        "responses": error_responses(),
        "parameters": {"IdempotencyKey": IDEMPOTENCY_KEY},
        "headers": COMPONENT_HEADERS,
        "securitySchemes": SECURITY_SCHEMES,
    }
    return {
        "openapi": "3.1.0",
        "info": INFO,
        "servers": [{"url": "/", "description": "This server"}],
        "tags": [{"name": name, "description": TAGS[name]} for name in sorted(used)],
        "paths": _tidy(paths),
        "webhooks": _tidy(webhooks),
        "components": _tidy(components),
    }


def _without_examples(components: dict[str, Any]) -> dict[str, Any]:
    """The examples were lifted to the request and response media that use them; kept on the
    schemas as well, each would be repeated in every component that embeds it."""
    return {
        name: {k: v for k, v in schema.items() if k != "examples"}
        for name, schema in components.items()
    }


_DOCUMENT: bytes | None = None


async def openapi_handler(_: web.Request) -> web.Response:
    global _DOCUMENT
    if _DOCUMENT is None:
        _DOCUMENT = dumps(build_openapi())
    return web.Response(body=_DOCUMENT, content_type="application/json")
