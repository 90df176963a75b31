"""The served OpenAPI document: a valid 3.1 document that describes every route of the table."""

from __future__ import annotations

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
    r = await api.post("/api/v1/webhooks", json={"targetUrl": "https://hooks.example.com/x",
                                                 "events": ["idea.created", "idea.created"]})
    assert r.status == 400 and r.error["field"] == "events"
    r = await api.post("/api/v1/automation/webhooks/subscribe",
                       json={"hookUrl": "https://hooks.example.com/x", "event": "other"})
    assert r.status == 400
