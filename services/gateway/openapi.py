"""The OpenAPI 3.1 document, built once from the route table and the pydantic models."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel, TypeAdapter

from libs.common.contract import API, Route
from libs.common.web import dumps

from .routing import ROUTE_TABLE

REF = "#/components/schemas/{model}"
ERROR_SCHEMA = {
    "type": "object", "required": ["error"], "additionalProperties": False,
    "properties": {"error": {
        "type": "object", "required": ["code", "message"], "additionalProperties": False,
        "properties": {"code": {"type": "string"}, "message": {"type": "string"},
                       "field": {"type": "string"}},
    }},
}
ERROR_STATUSES = {
    "400": "Invalid JSON or a field failed validation (`field` names it)",
    "401": "Missing, malformed, invalid or revoked key",
    "403": "The key lacks the scope, or the plan lacks the feature",
    "404": "Not found in this workspace",
    "405": "Method not allowed",
    "409": "Conflict (duplicate, or an Idempotency-Key reused or in flight)",
    "413": "Body over 1 MiB",
    "422": "A resource limit is reached",
    "429": "Rate limited; see Retry-After",
    "500": "Unexpected error",
    "503": "A service is temporarily unavailable",
}
RATE_HEADERS = {
    name: {"schema": {"type": "integer"}, "description": desc} for name, desc in (
        ("RateLimit-Limit", "Requests allowed in the window"),
        ("RateLimit-Remaining", "Requests left in the window"),
        ("RateLimit-Reset", "Seconds until the window resets"),
    )
}


class _Schemas:
    def __init__(self) -> None:
        self.components: dict[str, Any] = {"Error": ERROR_SCHEMA}

    def ref(self, tp: Any) -> dict[str, Any]:
        schema = TypeAdapter(tp).json_schema(ref_template=REF, mode="serialization")
        self.components.update(schema.pop("$defs", {}))
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            self.components[tp.__name__] = schema
            return {"$ref": REF.format(model=tp.__name__)}
        return schema

    def body(self, tp: type[BaseModel]) -> dict[str, Any]:
        schema = tp.model_json_schema(ref_template=REF, mode="validation")
        self.components.update(schema.pop("$defs", {}))
        self.components[tp.__name__] = schema
        return {"$ref": REF.format(model=tp.__name__)}


def _parameters(route: Route, schemas: _Schemas) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = []
    for name in route.path_params:
        params.append({"name": name, "in": "path", "required": True,
                       "schema": {"type": "string", "format": "uuid"}})
    if route.query is not None:
        schema = route.query.model_json_schema(ref_template=REF, mode="validation")
        schemas.components.update(schema.pop("$defs", {}))
        required = set(schema.get("required", []))
        for name, prop in schema.get("properties", {}).items():
            params.append({"name": name, "in": "query", "required": name in required,
                           "schema": prop, **({"description": prop["description"]}
                                              if "description" in prop else {})})
    return params


def _operation(route: Route, schemas: _Schemas) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": route.operation_id, "summary": route.summary, "tags": list(route.tags),
        "parameters": _parameters(route, schemas),
        "security": [{"bearer": []}],
        "x-scope": route.scope,
    }
    if route.description:
        op["description"] = route.description
    if route.scope:
        op["description"] = (route.description + "\n\n" if route.description else "") + \
            f"Scope: `{route.scope}`." + (" Not on the starter plan." if route.plan_gated else "")
    if route.body is not None:
        op["requestBody"] = {"required": route.body_required, "content": {
            "application/json": {"schema": schemas.body(route.body)}}}
    responses: dict[str, Any] = {}
    for status, tp in (route.responses or {route.success_status: None}).items():
        if tp == "csv":
            content = {"text/csv": {"schema": {"type": "string"}}}
            responses.setdefault(str(status), {"description": "OK", "headers": RATE_HEADERS,
                                               "content": {}})["content"].update(content)
            continue
        entry: dict[str, Any] = {"description": "OK", "headers": RATE_HEADERS}
        if tp is not None:
            entry["content"] = {"application/json": {"schema": schemas.ref(tp)}}
        if str(status) in responses:
            responses[str(status)]["content"].update(entry.get("content", {}))
        else:
            responses[str(status)] = entry
    for status, desc in ERROR_STATUSES.items():
        responses.setdefault(status, {"description": desc, "content": {
            "application/json": {"schema": {"$ref": REF.format(model="Error")}}}})
    op["responses"] = responses
    return op


def _allows_null(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(o, dict) and _allows_null(o) for o in schema.get("anyOf", []))


def _drop_null_defaults(node: Any) -> Any:
    """An optional field whose model default is None only to tell "omitted" from a value has no
    default in the document: `default: null` on a type that refuses null would be invalid."""
    if isinstance(node, dict):
        if "default" in node and node["default"] is None and not _allows_null(node):
            del node["default"]
        for value in node.values():
            _drop_null_defaults(value)
    elif isinstance(node, list):
        for value in node:
            _drop_null_defaults(value)
    return node


def build_openapi(routes: tuple[Route, ...] = ROUTE_TABLE) -> dict[str, Any]:
    schemas = _Schemas()
    paths: dict[str, Any] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, schemas)
    paths[f"{API}/openapi.json"] = {"get": {
        "operationId": "openapi", "summary": "This document", "security": [],
        "responses": {"200": {"description": "OpenAPI 3.1 document",
                              "content": {"application/json": {"schema": {"type": "object"}}}}},
    }}
    return _drop_null_defaults({
        "openapi": "3.1.0",
        "info": {"title": "Idea Management Service API", "version": "1.1.0",
                 "description": "Ideas, votes, RICE, customers, roadmap, analytics, exports "
                                "and signed webhooks. Conventions: docs/api.md."},
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas.components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "API key: ims_live_… or ims_test_…"}},
        },
    })


_DOCUMENT: bytes | None = None


async def openapi_handler(_: web.Request) -> web.Response:
    global _DOCUMENT
    if _DOCUMENT is None:
        _DOCUMENT = dumps(build_openapi())
    return web.Response(body=_DOCUMENT, content_type="application/json")
