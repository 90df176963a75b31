"""Customers: create, get, update, validation and externalId uniqueness, through the gateway."""

from __future__ import annotations

import uuid

import orjson

from tests.customers.conftest import Tap, new_customer
from tests.support.api import Api


async def test_create_returns_customer_full(api: Api) -> None:
    """A created customer has every CustomerFull field, source api, and its metadata as given."""
    meta = {"tier": "gold", "seats": 40, "nested": {"a": [1, 2.5, None, True]}, "ünï": "çødé"}
    r = await api.post(
        "/api/v1/customers",
        json={
            "name": "Acme",
            "email": "ops@acme.io",
            "domain": "acme.io",
            "arr": 120000.5,
            "mrr": 10000,
            "plan": "enterprise",
            "externalId": "crm-1",
            "metadata": meta,
        },
    )
    assert r.status == 200, r.body
    c = r.data
    assert c["name"] == "Acme" and c["email"] == "ops@acme.io" and c["domain"] == "acme.io"
    assert c["arr"] == 120000.5 and c["mrr"] == 10000 and c["plan"] == "enterprise"
    assert c["source"] == "api" and c["externalId"] == "crm-1" and c["crmCompanyId"] is None
    assert c["ideaCount"] == 0 and c["metadata"] == meta
    assert c["createdAt"].endswith("Z") and c["updatedAt"] is not None
    got = await api.get(f"/api/v1/customers/{c['id']}")
    assert got.status == 200 and got.data == c


async def test_minimal_create_has_nulls(api: Api) -> None:
    """Only a name: every optional field is present and null."""
    c = await new_customer(api)
    for key in ("email", "domain", "arr", "mrr", "plan", "externalId", "crmCompanyId", "metadata"):
        assert c[key] is None, key


async def test_create_validation_names_the_field(api: Api) -> None:
    """Bad bodies answer 400 validation_error naming the field; nothing is created."""
    cases = [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 256}, "name"),
        ({"name": 5}, "name"),
        ({"name": "a", "arr": -1}, "arr"),
        ({"name": "a", "arr": "10"}, "arr"),
        ({"name": "a", "mrr": True}, "mrr"),
        ({"name": "a", "metadata": [1]}, "metadata"),
        ({"name": "a", "email": "not-an-email"}, "email"),
        ({"name": "a", "colour": "red"}, "colour"),
    ]
    for body, field in cases:
        r = await api.post("/api/v1/customers", json=body)
        assert r.status == 400, (body, r.body)
        assert r.error["code"] == "validation_error" and r.error["field"] == field, (body, r.error)
    listed = await api.get("/api/v1/customers")
    assert listed.json["pagination"]["total"] == 0


def metadata_of(size: int, char: str = "x") -> dict[str, str]:
    """A metadata object whose compact UTF-8 JSON is `size` bytes (`{"k":"..."}`)."""
    value = {"k": char * ((size - 8) // len(char.encode()))}
    assert len(orjson.dumps(value)) == size
    return value


async def test_metadata_over_16_kib_is_refused_on_create_and_update(api: Api) -> None:
    """16,384 bytes of JSON is accepted; one byte more is 400 on `metadata` and changes nothing."""
    at_limit = await new_customer(api, metadata=metadata_of(16384))
    assert at_limit["metadata"] == metadata_of(16384)
    for over in (metadata_of(16385), metadata_of(16386, "é"), {"k": ["x" * 100] * 200}):
        r = await api.post("/api/v1/customers", json={"name": "Big", "metadata": over})
        assert r.status == 400 and r.error["code"] == "validation_error", r.json
        assert r.error["field"] == "metadata" and "16 KiB" in r.error["message"]
    small = await new_customer(api, metadata={"tier": "gold"})
    r = await api.patch(
        f"/api/v1/customers/{small['id']}", json={"name": "Renamed", "metadata": metadata_of(16385)}
    )
    assert r.status == 400 and r.error["field"] == "metadata", r.json
    assert (await api.get(f"/api/v1/customers/{small['id']}")).data == small
    assert (await api.get("/api/v1/customers")).json["pagination"]["total"] == 2


async def test_external_id_unique_per_workspace(api: Api, new_workspace) -> None:
    """A second customer with the same externalId: 409; another workspace may reuse it."""
    await new_customer(api, externalId="ext-1")
    r = await api.post("/api/v1/customers", json={"name": "Dup", "externalId": "ext-1"})
    assert r.status == 409 and r.error["code"] == "conflict"
    other = await new_workspace()
    await new_customer(other.api, externalId="ext-1")
    c = await new_customer(api, externalId="ext-2")
    r = await api.patch(f"/api/v1/customers/{c['id']}", json={"externalId": "ext-1"})
    assert r.status == 409 and r.error["code"] == "conflict"


async def test_update_keeps_omitted_and_null_clears(api: Api) -> None:
    """PATCH changes the given fields, keeps the omitted ones, and null clears."""
    c = await new_customer(
        api, email="a@b.co", domain="b.co", arr=100, plan="pro", metadata={"k": 1}
    )
    r = await api.patch(f"/api/v1/customers/{c['id']}", json={"arr": 250.25, "email": None})
    assert r.status == 200, r.body
    u = r.data
    assert u["arr"] == 250.25 and u["email"] is None
    assert u["domain"] == "b.co" and u["plan"] == "pro" and u["metadata"] == {"k": 1}
    assert u["name"] == c["name"] and u["createdAt"] == c["createdAt"]
    assert u["updatedAt"] > c["updatedAt"]
    r = await api.patch(f"/api/v1/customers/{c['id']}", json={"metadata": None, "arr": None})
    assert r.data["metadata"] is None and r.data["arr"] is None
    assert (await api.get(f"/api/v1/customers/{c['id']}")).data == r.data


async def test_update_validation(api: Api) -> None:
    """An empty body, a null name or a bad value: 400 and nothing changes."""
    c = await new_customer(api, arr=10)
    for body, field in (
        ({}, "body"),
        ({"name": None}, "name"),
        ({"arr": -5}, "arr"),
        ({"unknown": 1}, "unknown"),
    ):
        r = await api.patch(f"/api/v1/customers/{c['id']}", json=body)
        assert r.status == 400 and r.error["field"] == field, (body, r.body)
    assert (await api.get(f"/api/v1/customers/{c['id']}")).data == c


async def test_other_workspace_and_unknown_are_not_found(api: Api, new_workspace) -> None:
    """Another workspace's customer, an unknown id and a non-UUID id are 404 not_found."""
    other = await new_workspace()
    theirs = await new_customer(other.api)
    for path in (
        f"/api/v1/customers/{theirs['id']}",
        f"/api/v1/customers/{uuid.uuid4()}",
        "/api/v1/customers/not-a-uuid",
    ):
        r = await api.get(path)
        assert r.status == 404 and r.error["code"] == "not_found", path
        r = await api.patch(path, json={"name": "x"})
        assert r.status == 404 and r.error["code"] == "not_found", path
    assert (await other.api.get(f"/api/v1/customers/{theirs['id']}")).data["name"] == theirs["name"]


async def test_scopes(system, ws) -> None:
    """customers:read may read but not write; writes need customers:write."""
    key = await ws.new_key(system.database_url, scopes="customers:read")
    reader = ws.api.with_key(key["key"])
    assert (await reader.get("/api/v1/customers")).status == 200
    r = await reader.post("/api/v1/customers", json={"name": "x"})
    assert r.status == 403 and r.error["code"] == "insufficient_scope"


async def test_events_carry_customer_full(api: Api, ws, tap: Tap) -> None:
    """customer.created and customer.updated carry exactly the CustomerFull the API answered."""
    c = await new_customer(api, arr=5, metadata={"x": [1, {"y": None}]})
    created = await tap.wait_for(
        lambda e: e["type"] == "customer.created" and e["data"]["customer"]["id"] == c["id"]
    )
    assert created["data"] == {"customer": c} and created["workspaceId"] == ws.id
    u = (await api.patch(f"/api/v1/customers/{c['id']}", json={"plan": "scale"})).data
    updated = await tap.wait_for(
        lambda e: e["type"] == "customer.updated" and e["data"]["customer"]["id"] == c["id"]
    )
    assert updated["data"] == {"customer": u}
    assert set(updated) == {"id", "type", "createdAt", "workspaceId", "data"}
