"""Error statuses and codes across routes (docs/api.md): bodies, sizes, methods, path ids."""

from __future__ import annotations

import io
import uuid

import orjson

from tests.support.api import Api

JSON = {"Content-Type": "application/json"}


async def test_bodies_that_are_not_objects_name_the_body(api: Api) -> None:
    """JSON that is not an object, or no body at all, is 400 validation_error on `body`."""
    for raw in (b"[]", b"null", b'"x"', b"5"):
        r = await api.post("/api/v1/ideas", body=raw, headers=JSON)
        assert r.status == 400 and r.error == {
            "code": "validation_error",
            "field": "body",
            "message": r.error["message"],
        }, raw
    r = await api.post("/api/v1/customers", body=b"", headers=JSON)
    assert r.status == 400 and r.error["code"] == "validation_error"


async def test_invalid_json_on_every_body_method(api: Api) -> None:
    """A body that is not JSON is 400 invalid_json on POST, PATCH and PUT routes alike."""
    idea = (await api.post("/api/v1/ideas", json={"title": "t"})).data["id"]
    customer = (await api.post("/api/v1/customers", json={"name": "c"})).data["id"]
    routes = [
        ("POST", "/api/v1/ideas/batch"),
        ("PATCH", "/api/v1/ideas/batch/status"),
        ("PATCH", f"/api/v1/ideas/{idea}"),
        ("PUT", f"/api/v1/ideas/{idea}/roadmap"),
        ("POST", f"/api/v1/ideas/{idea}/vote"),
        ("POST", f"/api/v1/ideas/{idea}/customers"),
        ("POST", "/api/v1/customers"),
        ("PATCH", f"/api/v1/customers/{customer}"),
        ("POST", "/api/v1/automation/ideas"),
    ]
    for method, path in routes:
        r = await api.request(method, path, body=b'{"title": "x",}', headers=JSON)
        assert r.status == 400 and r.error["code"] == "invalid_json", (method, path)
        assert "field" not in r.error


async def test_body_over_one_mebibyte_is_413(api: Api) -> None:
    """Over 1 MiB: 413 validation_error, on the main and the automation API; nothing made."""
    big = {"title": "x", "summary": "y" * (1024 * 1024)}
    for path in ("/api/v1/ideas", "/api/v1/automation/ideas"):
        r = await api.post(path, body=io.BytesIO(orjson.dumps(big)), headers=JSON)
        assert r.status == 413 and r.error["code"] == "validation_error", path
    assert (await api.get("/api/v1/ideas")).json["pagination"]["total"] == 0


async def test_wrong_method_on_known_paths_is_405(api: Api) -> None:
    """Known paths with another method answer 405 method_not_allowed and `Allow` their methods."""
    idea = (await api.post("/api/v1/ideas", json={"title": "t"})).data["id"]
    for method, path in (
        ("DELETE", "/api/v1/ideas"),
        ("GET", "/api/v1/ideas/batch"),
        ("POST", f"/api/v1/ideas/{idea}"),
        ("GET", f"/api/v1/ideas/{idea}/vote"),
        ("DELETE", f"/api/v1/customers/{uuid.uuid4()}"),
        ("PUT", "/api/v1/workspace"),
        ("PUT", "/api/v1/roadmap/stages"),
        ("GET", f"/api/v1/roadmap/stages/{uuid.uuid4()}"),
        ("GET", "/api/v1/automation/webhooks/subscribe"),
        ("DELETE", "/api/v1/automation/ideas"),
    ):
        r = await api.request(method, path)
        assert r.status == 405 and r.error["code"] == "method_not_allowed", (method, path)
        assert method not in r.headers["Allow"].split(", ") and r.headers["Allow"], r.headers
    # A path whose methods two processes answer (GET /workspace the ideas service's, PATCH the
    # gateway's) lists them all.
    r = await api.request("PUT", "/api/v1/workspace")
    assert set(r.headers["Allow"].split(", ")) == {"GET", "HEAD", "PATCH"}, r.headers


async def test_non_uuid_ids_are_not_found_everywhere(api: Api) -> None:
    """Every `{id}` route answers 404 not_found to an id that is not a UUID."""
    for method, path in (
        ("GET", "/api/v1/ideas/x/votes"),
        ("POST", "/api/v1/ideas/x/vote"),
        ("GET", "/api/v1/ideas/x/signals"),
        ("GET", "/api/v1/ideas/x/decisions"),
        ("GET", "/api/v1/ideas/x/evidence"),
        ("PUT", "/api/v1/ideas/x/roadmap"),
        ("DELETE", "/api/v1/ideas/x"),
        ("GET", "/api/v1/ideas/x/customers"),
        ("PATCH", "/api/v1/customers/x"),
        ("GET", "/api/v1/customers/x/ideas"),
        ("GET", "/api/v1/webhooks/x"),
        ("DELETE", "/api/v1/automation/webhooks/subscribe/x"),
    ):
        r = await api.request(method, path, json={"stageId": None} if method == "PUT" else None)
        assert r.status == 404 and r.error["code"] == "not_found", (method, path)


async def test_automation_routes_need_their_scopes(system, ws) -> None:
    """/auth takes any key; GET ideas needs ideas:read, POST ideas:write, hooks webhooks:manage."""
    reader = ws.api.with_key((await ws.new_key(system.database_url, scopes="ideas:read"))["key"])
    writer = ws.api.with_key((await ws.new_key(system.database_url, scopes="ideas:write"))["key"])
    assert (await writer.get("/api/v1/automation/auth")).json["valid"] is True
    assert (await reader.get("/api/v1/automation/ideas")).status == 200
    for client, method, path in (
        (writer, "GET", "/api/v1/automation/ideas"),
        (reader, "POST", "/api/v1/automation/ideas"),
        (writer, "POST", "/api/v1/automation/webhooks/subscribe"),
        (reader, "DELETE", f"/api/v1/automation/webhooks/subscribe/{uuid.uuid4()}"),
    ):
        r = await client.request(method, path, json={"title": "t"} if method == "POST" else None)
        assert r.status == 403 and r.error["code"] == "insufficient_scope", (method, path)
    r = await writer.post("/api/v1/automation/ideas", json={"title": "t"})
    assert r.status == 201 and r.json["status"] == "created"


async def test_nul_characters_are_validation_errors(api: Api) -> None:
    """U+0000 (which PostgreSQL text cannot hold) is 400 naming the field, never a 500."""
    idea = (await api.post("/api/v1/ideas", json={"title": "t"})).data["id"]
    cases = [
        ("POST", "/api/v1/ideas", {"title": "a\0b"}, "title"),
        (
            "POST",
            "/api/v1/ideas/batch",
            {"ideas": [{"title": "a"}, {"title": "b\0"}]},
            "ideas[1].title",
        ),
        ("PATCH", f"/api/v1/ideas/{idea}", {"summary": "\0"}, "summary"),
        ("POST", f"/api/v1/ideas/{idea}/vote", {"voter": "v\0"}, "voter"),
        ("POST", "/api/v1/customers", {"name": "a", "metadata": {"k\0": 1}}, "metadata"),
        ("POST", "/api/v1/automation/ideas", {"title": "x", "authorName": "\0"}, "authorName"),
    ]
    for method, path, body, field in cases:
        r = await api.request(method, path, json=body)
        assert r.status == 400 and r.error["field"] == field, (path, r.json)
    for path, param in (("/api/v1/ideas", "search"), ("/api/v1/customers", "plan")):
        r = await api.get(path, params={param: "a\0b"})
        assert r.status == 400 and r.error["field"] == param, path
    assert (await api.get("/api/v1/ideas")).json["pagination"]["total"] == 1


async def test_url_that_does_not_parse_is_still_a_url(api: Api) -> None:
    """`url` is free text: one urlsplit refuses is stored as given and still finds duplicates."""
    r = await api.post("/api/v1/ideas", json={"title": "a", "url": "http://[::1"})
    assert r.status == 200 and r.data["url"] == "http://[::1"
    r = await api.post("/api/v1/automation/ideas", json={"title": "b", "url": "http://[::1"})
    assert r.status == 200 and r.json["status"] == "skipped"


async def test_date_times_out_of_range_are_validation_errors(api: Api) -> None:
    """A date-time whose UTC value falls outside years 1..9999 is 400 on its parameter."""
    for value in ("9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"):
        for param in ("since", "updated_since"):
            r = await api.get("/api/v1/ideas", params={param: value})
            assert r.status == 400 and r.error["field"] == param, (param, value, r.json)
