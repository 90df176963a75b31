"""The served OpenAPI document: a valid 3.1 document that describes every route of the table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from openapi_spec_validator import OpenAPIV31SpecValidator

from libs.api.table import ROUTE_TABLE
from tests.support.api import Api


async def test_document_is_valid_openapi_31(api: Api) -> None:
    """The document passes the OpenAPI 3.1 meta-schema (defaults, refs, parameters)."""
    doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
    errors = [e.message for e in OpenAPIV31SpecValidator(doc).iter_errors()]
    assert errors == []


async def test_every_route_is_documented_with_its_answer(api: Api) -> None:
    """Each route of the table is in the document with a described success answer."""
    doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
    for route in ROUTE_TABLE:
        op = doc["paths"][route.path][route.method.lower()]
        assert op["operationId"] == route.operation_id
        success = [s for s in op["responses"] if s.startswith("2")]
        assert success, route.operation_id
        assert any(op["responses"][s].get("content") for s in success), route.operation_id
        if route.scope:
            assert route.scope in op["description"]


async def test_document_states_the_body_rules_the_services_enforce(api: Api) -> None:
    """Rules the services enforce on bodies are in the document, so that a client (or a schema
    fuzzer) generating valid bodies from it is not refused: update bodies need a property,
    webhook targets are https, events do not repeat, the automation event is `new_idea`."""
    doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
    schemas = doc["components"]["schemas"]
    assert schemas["UpdateIdeaRequest"]["minProperties"] == 1
    assert schemas["UpdateCustomerRequest"]["minProperties"] == 1
    assert schemas["CreateWebhookRequest"]["properties"]["targetUrl"]["pattern"] == "^https://"
    assert schemas["CreateWebhookRequest"]["properties"]["events"]["uniqueItems"] is True
    hook = schemas["AutomationSubscribeRequest"]["properties"]
    assert hook["hookUrl"]["pattern"] == "^https://"
    assert hook["event"]["enum"] == ["new_idea"]
    # ...and the services do refuse what the document rules out.
    idea = (await api.post("/api/v1/ideas", json={"title": "Document rules"})).data["id"]
    customer = (await api.post("/api/v1/customers", json={"name": "Document rules"})).data["id"]
    for path in (f"/api/v1/ideas/{idea}", f"/api/v1/customers/{customer}"):
        r = await api.patch(path, json={})
        assert r.status == 400 and r.error["code"] == "validation_error", path
    r = await api.post(
        "/api/v1/webhooks",
        json={
            "targetUrl": "https://hooks.example.com/x",
            "events": ["idea.created", "idea.created"],
        },
    )
    assert r.status == 400 and r.error["field"] == "events"
    r = await api.post(
        "/api/v1/automation/webhooks/subscribe",
        json={"hookUrl": "https://hooks.example.com/x", "event": "other"},
    )
    assert r.status == 400


def _walk(node: object, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for n, value in enumerate(node):
            yield from _walk(value, f"{path}/{n}")


async def test_shared_enums_are_components_referred_to(api: Api) -> None:
    """IdeaStatus, IdeaSource and WebhookEventType are listed once, as components."""
    doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
    for name, member in (
        ("IdeaStatus", "under_review"),
        ("IdeaSource", "helpscout"),
        ("WebhookEventType", "idea.scored"),
    ):
        places = [
            p
            for p, node in _walk(doc)
            if isinstance(node.get("enum"), list) and member in node["enum"]
        ]
        assert places == [f"#/components/schemas/{name}"], (name, places)
        assert doc["components"]["schemas"][name]["description"]


async def test_cross_cutting_headers_are_declared(api: Api) -> None:
    """Idempotency-Key on POSTs; X-Request-Id and RateLimit-* on every answer; Retry-After on
    429; Allow on 405; Idempotent-Replayed on POST successes."""
    doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
    comps = doc["components"]

    def headers(response: dict[str, Any]) -> set[str]:
        if "$ref" in response:
            response = comps["responses"][response["$ref"].rsplit("/", 1)[1]]
        return set(response.get("headers", {}))

    for path, item in doc["paths"].items():
        for method, op in item.items():
            params = {p.get("$ref", p.get("name")) for p in op.get("parameters", [])}
            key = "#/components/parameters/IdempotencyKey"
            assert (key in params) == (method == "post"), (method, path)
            for status, response in op["responses"].items():
                got = headers(response)
                assert {
                    "X-Request-Id",
                    "RateLimit-Limit",
                    "RateLimit-Remaining",
                    "RateLimit-Reset",
                } <= got, (method, path, status)
                if status.startswith("2") and method == "post":
                    assert "Idempotent-Replayed" in got, (method, path, status)
            assert "Retry-After" in headers(op["responses"]["429"])
    assert "Allow" in headers({"$ref": "#/components/responses/MethodNotAllowed"})


async def test_contract_constraints_and_no_titles(api: Api) -> None:
    """minProperties on update bodies, https patterns, tags declared, no schema titles,
    every property described, an example on every request body."""
    doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
    schemas = doc["components"]["schemas"]
    for body in ("UpdateIdeaRequest", "UpdateCustomerRequest"):
        assert schemas[body]["minProperties"] == 1
    assert schemas["CreateWebhookRequest"]["properties"]["targetUrl"]["pattern"] == "^https://"
    assert schemas["AutomationSubscribeRequest"]["properties"]["hookUrl"]["pattern"] == "^https://"
    declared = {t["name"]: t["description"] for t in doc["tags"]}
    assert all(declared.values())
    for item in doc["paths"].values():
        for op in item.values():
            assert set(op["tags"]) <= set(declared) and op["summary"] and op["description"]
            assert all(p.get("description") or "$ref" in p for p in op.get("parameters", []))
            if "requestBody" in op:
                assert "example" in op["requestBody"]["content"]["application/json"]
    for where, node in _walk(schemas):
        assert not isinstance(node.get("title"), str) or where.endswith("/properties"), where
        if where.endswith("/properties"):
            undescribed = [
                n for n, p in node.items() if not p.get("description") and "$ref" not in p
            ]
            assert undescribed == [], where


async def test_webhooks_section_describes_every_event(api: Api) -> None:
    """The 3.1 `webhooks` section has the payload of each event type, webhook.test and new_idea."""
    doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
    events = doc["components"]["schemas"]["WebhookEventType"]["enum"]
    assert len(events) == 14
    assert set(doc["webhooks"]) == {*events, "webhook.test", "new_idea"}
    for name, item in doc["webhooks"].items():
        media = item["post"]["requestBody"]["content"]["application/json"]
        assert "$ref" in media["schema"] and "example" in media, name


async def test_the_user_export_lists_comments_as_comment_objects(api: Api) -> None:
    """The export's `comments` are Comment objects in the document (they were generic objects,
    so a client generated from it got untyped maps)."""
    doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
    export = doc["components"]["schemas"]["UserExport"]
    assert export["properties"]["comments"]["items"] == {"$ref": "#/components/schemas/Comment"}
