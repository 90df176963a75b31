"""Query conventions of docs/api.md, on every operation of the served document: date-time
parameters take RFC 3339 only, and an empty `cursor=` is the same as no cursor.

The operations come from the OpenAPI document, so a route added later is covered the day it is
added."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

from tests.support.api import Api
from tests.support.openapi_check import OpenApi

# Lax pydantic took each of these for a date-time: a Unix time, a bare date, no offset.
NOT_RFC3339 = ("0.5", "1700000000", "2024-01-01", "2024-01-01T00:00:00")
# A valid one, with a fraction and an offset, inside every report's two-year range.
RECENT = (datetime.now(timezone(timedelta(hours=2))) - timedelta(days=1)).isoformat(
    timespec="milliseconds"
)


def _is_date_time(schema: dict[str, Any]) -> bool:
    options = schema.get("anyOf", [schema])
    return any(o.get("format") == "date-time" for o in options)


def query_parameters(openapi: OpenApi) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for path, item in openapi.doc["paths"].items():
        op = item.get("get")
        for param in (op or {}).get("parameters", []):
            if param["in"] == "query":
                yield path, op, param


async def test_date_time_parameters_refuse_anything_but_rfc3339(
    new_workspace: Any, openapi: OpenApi
) -> None:
    """`0.5`, a Unix time, a bare date or a date-time without offset: 400 naming the parameter."""
    found: dict[str, list[str]] = {}
    for path, _, param in query_parameters(openapi):
        if _is_date_time(param["schema"]):
            found.setdefault(path, []).append(param["name"])
    assert len(found) >= 8, found  # ideas list, five dated reports, three dated exports
    for path, names in found.items():
        # A workspace per operation: exports count ten an hour per workspace.
        api = (await new_workspace()).api
        for name in names:
            for value in NOT_RFC3339:
                r = await api.get(path, params={name: value})
                assert r.status == 400, (path, name, value, r.status)
                assert r.error["code"] == "validation_error" and r.error["field"] == name, (
                    path,
                    name,
                    value,
                    r.json,
                )
        r = await api.get(path, params={names[0]: RECENT})
        assert r.status == 200, (path, r.json)


async def test_empty_cursor_is_the_first_page_on_every_paginated_list(api: Api) -> None:
    """`cursor=` answers exactly what no cursor answers, on every list that pages."""
    idea = (await api.post("/api/v1/ideas", json={"title": "Paged"})).data["id"]
    customer = (await api.post("/api/v1/customers", json={"name": "Paged"})).data["id"]
    r = await api.post(f"/api/v1/ideas/{idea}/customers", json={"customerId": customer})
    assert r.status == 200, r.json
    hook = await api.post(
        "/api/v1/webhooks",
        json={"targetUrl": "https://hooks.example.com/p", "events": ["idea.created"]},
    )
    assert hook.status == 200, hook.json
    user = (await api.post("/api/v1/users", json={"name": "Paged", "customerId": customer})).data
    ids = {"ideas": idea, "customers": customer, "webhooks": hook.data["id"], "users": user["id"]}
    paths = sorted({path for path, _, p in query_parameters(api.openapi) if p["name"] == "cursor"})
    assert len(paths) >= 6, paths
    for template in paths:
        path = template.replace("{id}", ids[template.split("/")[3]])
        plain = await api.get(path, params={"limit": 1})
        empty = await api.get(path, params={"limit": 1, "cursor": ""})
        assert plain.status == 200 and empty.status == 200, (path, empty.json)
        assert empty.json == plain.json, path
