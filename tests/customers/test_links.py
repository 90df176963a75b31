"""Idea-customer links across the service boundary: create, conflicts, not found, both lists."""

from __future__ import annotations

import asyncio
import uuid

from tests.customers.conftest import link, new_customer, new_idea
from tests.support.api import Api


async def test_link_right_after_create_on_both_sides(api: Api) -> None:
    """A customer and an idea created just before (in either order) link at once."""
    idea = await new_idea(api)
    customer = await new_customer(api)
    r = await api.post(f"/api/v1/ideas/{idea['id']}/customers", json={"customerId": customer["id"]})
    assert r.status == 200, r.body
    assert r.data["ideaId"] == idea["id"] and r.data["customerId"] == customer["id"]
    assert r.data["linkedAt"].endswith("Z")
    customer2 = await new_customer(api)
    idea2 = await new_idea(api)
    await link(api, idea2["id"], customer2["id"])


async def test_second_link_conflicts(api: Api) -> None:
    """Linking the same pair again: 409 conflict; concurrent duplicates make one link."""
    idea, customer = await new_idea(api), await new_customer(api)
    await link(api, idea["id"], customer["id"])
    r = await api.post(f"/api/v1/ideas/{idea['id']}/customers", json={"customerId": customer["id"]})
    assert r.status == 409 and r.error["code"] == "conflict"
    other = await new_customer(api)
    rs = await asyncio.gather(
        *(
            api.post(f"/api/v1/ideas/{idea['id']}/customers", json={"customerId": other["id"]})
            for _ in range(5)
        )
    )
    assert sorted(r.status for r in rs) == [200, 409, 409, 409, 409]
    assert (await api.get(f"/api/v1/customers/{other['id']}")).data["ideaCount"] == 1


async def test_missing_or_foreign_side_is_not_found(api: Api, new_workspace) -> None:
    """An unknown or other-workspace idea or customer answers 404; nothing is linked."""
    other = await new_workspace()
    idea, customer = await new_idea(api), await new_customer(api)
    their_idea, their_customer = await new_idea(other.api), await new_customer(other.api)
    cases = [
        (str(uuid.uuid4()), customer["id"]),
        (idea["id"], str(uuid.uuid4())),
        (their_idea["id"], customer["id"]),
        (idea["id"], their_customer["id"]),
        ("not-a-uuid", customer["id"]),
    ]
    for idea_id, customer_id in cases:
        r = await api.post(f"/api/v1/ideas/{idea_id}/customers", json={"customerId": customer_id})
        assert r.status == 404 and r.error["code"] == "not_found", (idea_id, customer_id)
    assert (await api.get(f"/api/v1/customers/{customer['id']}")).data["ideaCount"] == 0
    assert (await api.get(f"/api/v1/ideas/{idea['id']}/customers")).data == []
    for path in (
        f"/api/v1/ideas/{their_idea['id']}/customers",
        f"/api/v1/ideas/{uuid.uuid4()}/customers",
        f"/api/v1/customers/{their_customer['id']}/ideas",
        f"/api/v1/customers/{uuid.uuid4()}/ideas",
    ):
        r = await api.get(path)
        assert r.status == 404 and r.error["code"] == "not_found", path


async def test_link_body_validation(api: Api) -> None:
    idea = await new_idea(api)
    for body, field in (
        ({}, "customerId"),
        ({"customerId": "nope"}, "customerId"),
        ({"customerId": str(uuid.uuid4()), "x": 1}, "x"),
    ):
        r = await api.post(f"/api/v1/ideas/{idea['id']}/customers", json=body)
        assert r.status == 400 and r.error["field"] == field, (body, r.body)


async def test_customers_of_an_idea(api: Api) -> None:
    """GET /ideas/{id}/customers: customers as linked, newest link first, keyset pages."""
    idea = await new_idea(api)
    made = [await new_customer(api, arr=i * 10, email=f"c{i}@x.io") for i in range(5)]
    linked = [await link(api, idea["id"], c["id"]) for c in made]
    got, cursor = [], None
    for _ in range(5):
        r = await api.get(
            f"/api/v1/ideas/{idea['id']}/customers", params={"limit": 2, "cursor": cursor}
        )
        assert r.status == 200, r.body
        got += r.data
        cursor = r.json["pagination"]["nextCursor"]
        if cursor is None:
            break
    assert [c["id"] for c in got] == [c["id"] for c in reversed(made)]
    first = got[-1]
    assert set(first) == {
        "id",
        "name",
        "email",
        "domain",
        "arr",
        "mrr",
        "plan",
        "source",
        "linkedAt",
    }
    assert first["linkedAt"] == linked[0]["linkedAt"] and first["arr"] == 0
    assert (await api.get(f"/api/v1/ideas/{idea['id']}/customers")).json["pagination"] == {
        "limit": 25,
        "hasMore": False,
        "nextCursor": None,
    }


async def test_ideas_of_a_customer(api: Api) -> None:
    """GET /customers/{id}/ideas: Idea bodies, newest link first; ideaCount counts the links."""
    customer = await new_customer(api)
    ideas = [await new_idea(api) for _ in range(3)]
    for idea in ideas:
        await link(api, idea["id"], customer["id"])
    r = await api.get(f"/api/v1/customers/{customer['id']}/ideas", params={"limit": 2})
    assert r.status == 200, r.body
    page2 = await api.get(
        f"/api/v1/customers/{customer['id']}/ideas",
        params={"limit": 2, "cursor": r.json["pagination"]["nextCursor"]},
    )
    got = r.data + page2.data
    assert [i["id"] for i in got] == [i["id"] for i in reversed(ideas)]
    assert got[0]["title"] == ideas[2]["title"] and "ideaServiceId" in got[0]
    assert page2.json["pagination"]["hasMore"] is False
    assert (await api.get(f"/api/v1/customers/{customer['id']}")).data["ideaCount"] == 3


async def test_deleted_ideas_leave_the_customer_list(api: Api) -> None:
    """A deleted idea is not listed under its customer; pages still fill."""
    customer = await new_customer(api)
    ideas = [await new_idea(api) for _ in range(4)]
    for idea in ideas:
        await link(api, idea["id"], customer["id"])
    assert (await api.delete(f"/api/v1/ideas/{ideas[2]['id']}")).status == 200
    r = await api.get(f"/api/v1/customers/{customer['id']}/ideas", params={"limit": 2})
    assert [i["id"] for i in r.data] == [ideas[3]["id"], ideas[1]["id"]]
    assert r.json["pagination"]["hasMore"] is True
    r = await api.get(
        f"/api/v1/customers/{customer['id']}/ideas",
        params={"limit": 2, "cursor": r.json["pagination"]["nextCursor"]},
    )
    assert [i["id"] for i in r.data] == [ideas[0]["id"]] and r.json["pagination"][
        "hasMore"
    ] is False
