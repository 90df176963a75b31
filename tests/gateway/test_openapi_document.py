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
