"""Unlinking a customer from an idea through the gateway: DELETE /ideas/{id}/customers/{customerId}
(scope customers:write). The link goes at once, `totalCustomerARR` follows within 1 second,
whatever the order or repetition of the events; a pair not linked, or another workspace's, is
404 and changes nothing; a link a merge copied goes like any other."""

from __future__ import annotations

import uuid
from typing import Any

from tests.customers.conftest import Tap, idea_arr, link, new_customer, new_idea, poll
from tests.support.api import Api, Workspace


def unlink_path(idea_id: str, customer_id: str) -> str:
    return f"/api/v1/ideas/{idea_id}/customers/{customer_id}"


async def linked(api: Api, idea_id: str) -> list[str]:
    r = await api.get(f"/api/v1/ideas/{idea_id}/customers")
    assert r.status == 200, r.body
    return sorted(c["id"] for c in r.data)


async def idea_count(api: Api, customer_id: str) -> int:
    return (await api.get(f"/api/v1/customers/{customer_id}")).data["ideaCount"]  # type: ignore[no-any-return]


async def test_unlink_takes_the_customers_arr_off_the_idea(api: Api) -> None:
    """The answer is {ideaId, customerId, unlinked}; the link lists and counts follow at once,
    `totalCustomerARR` within 1 s; the last unlink leaves null and `has_customers=false`; a
    new link of the pair counts again."""
    idea = await new_idea(api)
    a, b = await new_customer(api, arr=1000), await new_customer(api, arr=250.5)
    await link(api, idea["id"], a["id"])
    await link(api, idea["id"], b["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 1250.5) == 1250.5
    r = await api.delete(unlink_path(idea["id"], a["id"]))
    assert r.status == 200, r.body
    assert r.data == {"ideaId": idea["id"], "customerId": a["id"], "unlinked": True}
    assert await linked(api, idea["id"]) == [b["id"]]
    assert (await idea_count(api, a["id"]), await idea_count(api, b["id"])) == (0, 1)
    assert await poll(lambda: idea_arr(api, idea["id"]), 250.5) == 250.5
    assert (await api.delete(unlink_path(idea["id"], b["id"]))).status == 200
    assert await poll(lambda: idea_arr(api, idea["id"]), None) is None
    listed = await api.get("/api/v1/ideas", params={"has_customers": "false"})
    assert idea["id"] in [i["id"] for i in listed.data]
    # linked again: a new link, which the removal of the old one does not hide
    await link(api, idea["id"], a["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 1000) == 1000
    assert await linked(api, idea["id"]) == [a["id"]]


async def test_a_pair_not_linked_is_not_found_and_nothing_changes(
    api: Api, new_workspace: Any
) -> None:
    """Never linked, already unlinked, an unknown side, another workspace's idea or customer
    (even a linked pair of theirs): 404 `not_found`; every link stays."""
    idea, customer, loose = (
        await new_idea(api),
        await new_customer(api, arr=10),
        await new_customer(api),
    )
    await link(api, idea["id"], customer["id"])
    other = await new_workspace()
    their_idea, their_customer = await new_idea(other.api), await new_customer(other.api, arr=7)
    await link(other.api, their_idea["id"], their_customer["id"])
    cases = [
        (idea["id"], loose["id"]),
        (idea["id"], str(uuid.uuid4())),
        (str(uuid.uuid4()), customer["id"]),
        (idea["id"], their_customer["id"]),
        (their_idea["id"], customer["id"]),
        (their_idea["id"], their_customer["id"]),
        ("not-a-uuid", customer["id"]),
        (idea["id"], "not-a-uuid"),
    ]
    for idea_id, customer_id in cases:
        r = await api.delete(unlink_path(idea_id, customer_id))
        assert r.status == 404 and r.error["code"] == "not_found", (idea_id, customer_id, r.body)
    assert await linked(api, idea["id"]) == [customer["id"]]
    assert await linked(other.api, their_idea["id"]) == [their_customer["id"]]
    assert await poll(lambda: idea_arr(api, idea["id"]), 10) == 10
    assert await poll(lambda: idea_arr(other.api, their_idea["id"]), 7) == 7
    assert (await api.delete(unlink_path(idea["id"], customer["id"]))).status == 200
    r = await api.delete(unlink_path(idea["id"], customer["id"]))
    assert r.status == 404 and r.error["code"] == "not_found"


async def test_unlink_needs_customers_write(ws: Workspace, system: Any) -> None:
    """A key with customers:read only is refused 403; the link stays."""
    idea, customer = await new_idea(ws.api), await new_customer(ws.api)
    await link(ws.api, idea["id"], customer["id"])
    reader = ws.api.with_key(
        (await ws.new_key(system.database_url, scopes="customers:read,ideas:read"))["key"]
    )
    r = await reader.delete(unlink_path(idea["id"], customer["id"]))
    assert r.status == 403 and r.error["code"] == "insufficient_scope"
    assert await linked(ws.api, idea["id"]) == [customer["id"]]


async def test_unlink_survives_repeated_and_late_events(api: Api, tap: Tap) -> None:
    """`link.deleted` delivered again, and the removed link's `link.created` arriving late,
    change nothing; a later link of the pair is not undone by the old removal arriving again."""
    idea = await new_idea(api)
    a, b = await new_customer(api, arr=100), await new_customer(api, arr=20)
    await link(api, idea["id"], a["id"])
    await link(api, idea["id"], b["id"])
    created = await tap.wait_for(
        lambda e: e["type"] == "link.created" and e["data"]["customerId"] == a["id"]
    )
    assert await poll(lambda: idea_arr(api, idea["id"]), 120) == 120
    assert (await api.delete(unlink_path(idea["id"], a["id"]))).status == 200
    deleted = await tap.wait_for(
        lambda e: e["type"] == "link.deleted" and e["data"]["customerId"] == a["id"]
    )
    assert deleted["data"]["ideaId"] == idea["id"]
    assert deleted["data"]["linkedAt"] == created["data"]["linkedAt"]
    assert await poll(lambda: idea_arr(api, idea["id"]), 20) == 20
    # the same events again, with new ids (a new id is not skipped as a replay)
    await tap.republish({**deleted, "id": str(uuid.uuid4())})
    await tap.republish({**created, "id": str(uuid.uuid4())})
    await tap.republish(created)
    await tap.wait_for(lambda e: e is not created and e.get("id") == created["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 120, within=1.0) == 20
    # linked again, then the old removal once more: the new link stays
    await link(api, idea["id"], a["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 120) == 120
    await tap.republish({**deleted, "id": str(uuid.uuid4())})
    assert await poll(lambda: idea_arr(api, idea["id"]), 20, within=1.0) == 120


async def test_a_link_a_merge_copied_unlinks_like_any_other(api: Api) -> None:
    """Merged duplicate D's customer is linked to primary P too; unlinking it from P takes it
    off P only (D keeps its link), and the unmerge later leaves P without it."""
    primary, duplicate = await new_idea(api), await new_idea(api)
    direct, via_merge = await new_customer(api, arr=1), await new_customer(api, arr=40)
    await link(api, primary["id"], direct["id"])
    await link(api, duplicate["id"], via_merge["id"])
    r = await api.post(f"/api/v1/ideas/{duplicate['id']}/merge", json={"intoId": primary["id"]})
    assert r.status == 200, r.body
    both = sorted([direct["id"], via_merge["id"]])
    assert await poll(lambda: linked(api, primary["id"]), both, within=5.0) == both
    assert await poll(lambda: idea_arr(api, primary["id"]), 41) == 41
    r = await api.delete(unlink_path(primary["id"], via_merge["id"]))
    assert r.status == 200, r.body
    assert await linked(api, primary["id"]) == [direct["id"]]
    assert await linked(api, duplicate["id"]) == [via_merge["id"]]
    assert await poll(lambda: idea_arr(api, primary["id"]), 1) == 1
    assert (await api.post(f"/api/v1/ideas/{duplicate['id']}/unmerge")).status == 200
    assert await poll(lambda: idea_arr(api, duplicate["id"]), 40) == 40
    assert await linked(api, primary["id"]) == [direct["id"]]
    assert await poll(lambda: idea_arr(api, primary["id"]), 1) == 1


async def test_a_copied_link_unlinked_then_linked_directly_survives_the_unmerge(api: Api) -> None:
    """Unlinked from the primary, then linked there directly: the new link is the primary's
    own, and the unmerge (which removes only the links the merge made) leaves it."""
    primary, duplicate = await new_idea(api), await new_idea(api)
    customer = await new_customer(api, arr=300)
    await link(api, duplicate["id"], customer["id"])
    r = await api.post(f"/api/v1/ideas/{duplicate['id']}/merge", json={"intoId": primary["id"]})
    assert r.status == 200, r.body
    assert await poll(lambda: linked(api, primary["id"]), [customer["id"]], within=5.0) == [
        customer["id"]
    ]
    assert (await api.delete(unlink_path(primary["id"], customer["id"]))).status == 200
    assert await poll(lambda: idea_arr(api, primary["id"]), None) is None
    await link(api, primary["id"], customer["id"])
    assert await poll(lambda: idea_arr(api, primary["id"]), 300) == 300
    assert (await api.post(f"/api/v1/ideas/{duplicate['id']}/unmerge")).status == 200
    await poll(lambda: idea_arr(api, primary["id"]), None, within=1.0)  # give it the chance
    assert await linked(api, primary["id"]) == [customer["id"]]
    assert await idea_arr(api, primary["id"]) == 300
    assert await linked(api, duplicate["id"]) == [customer["id"]]
