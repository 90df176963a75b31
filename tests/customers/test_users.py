"""End users through the gateway: create, identify (idempotent under
concurrency), list with search, customer filter and pages, get, update; uniqueness of e-mail
and externalId, validation, scopes and workspace isolation."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.customers.conftest import new_customer
from tests.support.api import Api, Workspace

USERS = "/api/v1/users"


async def new_user(api: Api, **fields: Any) -> dict[str, Any]:
    body = {"name": f"Dana {uuid.uuid4().hex[:6]}", **fields}
    r = await api.post(USERS, json=body)
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def test_create_returns_the_user_and_get_shows_it(api: Api) -> None:
    """Every User field, in the document's order; voteCount 0; updatedAt null until a change."""
    customer = await new_customer(api)
    body = {
        "name": "Dana Lee",
        "email": "Dana@Acme.example",
        "externalId": "chat-1",
        "customerId": customer["id"],
        "avatarUrl": "https://cdn.acme.example/dana.png",
        "metadata": {"plan": "team", "seats": [1, 2.5, None]},
    }
    r = await api.post(USERS, json=body)
    assert r.status == 200, r.body
    user = r.data
    assert list(user) == [
        "id",
        "name",
        "email",
        "externalId",
        "customerId",
        "avatarUrl",
        "metadata",
        "voteCount",
        "createdAt",
        "updatedAt",
    ]
    assert {k: user[k] for k in body} == body
    assert user["voteCount"] == 0 and user["updatedAt"] is None
    got = await api.get(f"{USERS}/{user['id']}")
    assert got.status == 200 and got.data == user


async def test_email_and_external_id_are_unique_in_the_workspace(
    api: Api, new_workspace: Any
) -> None:
    """A second user with the same e-mail (any case) or externalId is 409 naming the field;
    another workspace may have them."""
    await new_user(api, email="sam@acme.example", externalId="x-1")
    for body, field in (
        ({"name": "B", "email": "SAM@acme.EXAMPLE"}, "email"),
        ({"name": "B", "externalId": "x-1"}, "externalId"),
    ):
        r = await api.post(USERS, json=body)
        assert r.status == 409 and r.error["code"] == "conflict", r.body
        assert r.error.get("field") == field
    other = await new_workspace()
    await new_user(other.api, email="sam@acme.example", externalId="x-1")
    assert (await api.get(USERS)).json["pagination"]["total"] == 1


async def test_validation_names_the_field(api: Api) -> None:
    """Bad bodies are 400 naming the field; nothing is created."""
    cases = [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 256}, "name"),
        ({"name": "a", "email": "not-an-email"}, "email"),
        ({"name": "a", "externalId": ""}, "externalId"),
        ({"name": "a", "customerId": "nope"}, "customerId"),
        ({"name": "a", "avatarUrl": "http://cdn.example/a.png"}, "avatarUrl"),
        ({"name": "a", "metadata": [1]}, "metadata"),
        ({"name": "a", "metadata": {"k": "x" * 16400}}, "metadata"),
        ({"name": "a", "voteCount": 3}, "voteCount"),
    ]
    for body, field in cases:
        r = await api.post(USERS, json=body)
        assert r.status == 400, (body, r.body)
        assert r.error["code"] == "validation_error" and r.error["field"] == field, (body, r.error)
    r = await api.post(f"{USERS}/identify", json={"name": "no key"})
    assert r.status == 400 and r.error["field"] == "externalId", r.body
    r = await api.patch(f"{USERS}/{(await new_user(api))['id']}", json={})
    assert r.status == 400 and r.error["code"] == "validation_error", r.body
    assert (await api.get(USERS)).json["pagination"]["total"] == 1


async def test_unknown_customer_is_not_found(api: Api, new_workspace: Any) -> None:
    """A customerId that is not the workspace's (unknown or another's) is 404 on create,
    identify and update."""
    theirs = await new_customer((await new_workspace()).api)
    user = await new_user(api)
    for customer_id in (str(uuid.uuid4()), theirs["id"]):
        for method, path, body in (
            ("POST", USERS, {"name": "a", "customerId": customer_id}),
            ("POST", f"{USERS}/identify", {"email": "n@x.example", "customerId": customer_id}),
            ("PATCH", f"{USERS}/{user['id']}", {"customerId": customer_id}),
        ):
            r = await api.request(method, path, json=body)
            assert r.status == 404 and r.error["code"] == "not_found", (method, r.body)
    assert (await api.get(f"{USERS}/{user['id']}")).data["customerId"] is None


async def test_identify_finds_by_external_id_then_email_else_creates(api: Api) -> None:
    """Identify answers 200 either way: a new user, the same user found by externalId or by
    e-mail (any case), with the given fields applied."""
    acme = await new_customer(api)
    r = await api.post(f"{USERS}/identify", json={"email": "lee@acme.example"})
    assert r.status == 200, r.body
    first = r.data
    assert first["name"] is None and first["externalId"] is None
    r = await api.post(
        f"{USERS}/identify",
        json={"email": "LEE@acme.example", "externalId": "c-9", "name": "Lee"},
    )
    assert r.status == 200 and r.data["id"] == first["id"], r.body
    assert r.data["externalId"] == "c-9" and r.data["name"] == "Lee"
    assert r.data["email"] == "LEE@acme.example" and r.data["updatedAt"] is not None
    r = await api.post(f"{USERS}/identify", json={"externalId": "c-9", "customerId": acme["id"]})
    assert r.status == 200 and r.data["id"] == first["id"] and r.data["customerId"] == acme["id"]
    # a new externalId and a new e-mail: a new user
    r = await api.post(
        f"{USERS}/identify", json={"externalId": "c-10", "email": "other@acme.example"}
    )
    assert r.status == 200 and r.data["id"] != first["id"]
    listed = await api.get(USERS)
    assert listed.json["pagination"]["total"] == 2


async def test_identify_with_an_email_another_user_has_is_conflict(api: Api) -> None:
    """Found by externalId, an e-mail that another user has: 409, nothing changes."""
    a = await new_user(api, externalId="a", email="a@x.example")
    await new_user(api, externalId="b", email="b@x.example")
    r = await api.post(f"{USERS}/identify", json={"externalId": "a", "email": "B@x.example"})
    assert r.status == 409 and r.error["code"] == "conflict" and r.error["field"] == "email"
    assert (await api.get(f"{USERS}/{a['id']}")).data == a


async def test_identify_unchanged_keeps_updated_at(api: Api) -> None:
    """An identify that changes nothing leaves `updatedAt` as it was."""
    await api.post(f"{USERS}/identify", json={"email": "same@x.example", "name": "Same"})
    r1 = await api.post(f"{USERS}/identify", json={"email": "same@x.example", "name": "Same"})
    r2 = await api.post(f"{USERS}/identify", json={"email": "same@x.example", "name": "Same"})
    assert r1.data == r2.data and r1.data["updatedAt"] is None


async def test_ten_parallel_identifies_of_one_new_email_make_one_user(api: Api) -> None:
    """Ten concurrent identifies of one new e-mail (and ten of one new externalId): one user
    each, every answer 200 with its id."""
    for body in ({"email": "burst@acme.example"}, {"externalId": "burst-1", "name": "B"}):
        answers = await asyncio.gather(
            *(api.post(f"{USERS}/identify", json=body) for _ in range(10))
        )
        assert all(r.status == 200 for r in answers), [r.body for r in answers]
        assert len({r.data["id"] for r in answers}) == 1
    assert (await api.get(USERS)).json["pagination"]["total"] == 2


async def test_update_changes_the_given_fields(api: Api) -> None:
    """PATCH applies what it names, null clears, updatedAt moves; unknown user 404."""
    acme = await new_customer(api)
    user = await new_user(api, email="p@x.example", metadata={"a": 1})
    r = await api.patch(
        f"{USERS}/{user['id']}", json={"customerId": acme["id"], "metadata": None, "name": None}
    )
    assert r.status == 200, r.body
    assert r.data["customerId"] == acme["id"] and r.data["metadata"] is None
    assert r.data["name"] is None and r.data["email"] == "p@x.example"
    assert r.data["updatedAt"] is not None and r.data["createdAt"] == user["createdAt"]
    r2 = await api.patch(f"{USERS}/{user['id']}", json={"customerId": None})
    assert r2.data["customerId"] is None and r2.data["updatedAt"] > r.data["updatedAt"]
    assert (await api.patch(f"{USERS}/{uuid.uuid4()}", json={"name": "x"})).status == 404
    await new_user(api, email="taken@x.example")
    r = await api.patch(f"{USERS}/{user['id']}", json={"email": "TAKEN@x.example"})
    assert r.status == 409 and r.error["field"] == "email"


async def test_list_searches_filters_and_pages(api: Api) -> None:
    """Newest first; `search` on name or e-mail; `customer_id`; keyset pages with the total."""
    acme, globex = await new_customer(api), await new_customer(api)
    made = [
        await new_user(api, name="Ann Acme", email="ann@acme.example", customerId=acme["id"]),
        await new_user(api, name="Bob Acme", customerId=acme["id"]),
        await new_user(api, name="Cy", email="cy@globex.example", customerId=globex["id"]),
        await new_user(api, name="Di 100%_off"),
    ]
    r = await api.get(USERS)
    assert [u["id"] for u in r.data] == [u["id"] for u in reversed(made)]
    assert r.json["pagination"] == {"limit": 25, "hasMore": False, "nextCursor": None, "total": 4}
    r = await api.get(USERS, params={"search": "ACME"})
    assert {u["id"] for u in r.data} == {made[0]["id"], made[1]["id"]}
    r = await api.get(USERS, params={"search": "%_"})
    assert [u["id"] for u in r.data] == [made[3]["id"]]
    r = await api.get(USERS, params={"customer_id": acme["id"]})
    assert {u["id"] for u in r.data} == {made[0]["id"], made[1]["id"]}
    assert r.json["pagination"]["total"] == 2
    seen, cursor = [], None
    while True:
        page = await api.get(USERS, params={"limit": 1, "cursor": cursor})
        assert page.status == 200 and page.json["pagination"]["total"] == 4
        seen += [u["id"] for u in page.data]
        cursor = page.json["pagination"]["nextCursor"]
        if cursor is None:
            break
    assert seen == [u["id"] for u in reversed(made)]
    r = await api.get(USERS, params={"limit": 1, "cursor": cursor or "bogus"})
    assert r.status == 400 and r.error["field"] == "cursor"
    first = await api.get(USERS, params={"limit": 1})
    r = await api.get(
        USERS, params={"limit": 1, "search": "a", "cursor": first.json["pagination"]["nextCursor"]}
    )
    assert r.status == 400 and r.error["field"] == "cursor"
    for params, field in (({"customer_id": "x"}, "customer_id"), ({"limit": 0}, "limit")):
        r = await api.get(USERS, params=params)
        assert r.status == 400 and r.error["field"] == field


async def test_users_are_workspace_scoped(api: Api, new_workspace: Any) -> None:
    """Another workspace's user is 404 to read or change, and never listed."""
    mine = await new_user(api)
    other = await new_workspace()
    theirs = await new_user(other.api)
    assert (await api.get(f"{USERS}/{theirs['id']}")).status == 404
    assert (await api.patch(f"{USERS}/{theirs['id']}", json={"name": "x"})).status == 404
    assert [u["id"] for u in (await api.get(USERS)).data] == [mine["id"]]
    assert (await other.api.get(f"{USERS}/{theirs['id']}")).data["name"] == theirs["name"]


async def test_user_routes_need_the_customers_scopes(ws: Workspace, system: Any) -> None:
    """customers:read reads users, customers:write writes them; other keys are refused 403."""
    user = await new_user(ws.api)
    reader = ws.api.with_key(
        (await ws.new_key(system.database_url, scopes="customers:read"))["key"]
    )
    stranger = ws.api.with_key((await ws.new_key(system.database_url, scopes="ideas:read"))["key"])
    assert (await reader.get(f"{USERS}/{user['id']}")).status == 200
    assert (await reader.get(USERS)).status == 200
    for r in (
        await reader.post(USERS, json={"name": "x"}),
        await reader.post(f"{USERS}/identify", json={"email": "x@y.example"}),
        await reader.patch(f"{USERS}/{user['id']}", json={"name": "x"}),
        await stranger.get(USERS),
    ):
        assert r.status == 403 and r.error["code"] == "insufficient_scope", r.body
