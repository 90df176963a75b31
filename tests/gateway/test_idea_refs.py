"""An idea by its `IDEA-<n>` in every path whose `{id}` names an idea (docs/api.md)."""

from __future__ import annotations

from tests.support.api import Workspace


async def test_an_idea_answers_by_its_number_exactly_as_by_its_uuid(new_workspace) -> None:
    ws: Workspace = await new_workspace()
    api = ws.api
    idea = (
        await api.post("/api/v1/ideas", json={"title": "Dark mode", "category": "feature"})
    ).data
    ref, uuid = idea["ideaServiceId"], idea["id"]
    assert ref.startswith("IDEA-")
    for spelling in (ref, ref.lower(), "Idea-" + ref[5:]):
        by_ref = await api.get(f"/api/v1/ideas/{spelling}")
        by_uuid = await api.get(f"/api/v1/ideas/{uuid}")
        assert by_ref.status == by_uuid.status == 200
        assert by_ref.json == by_uuid.json
    head = await api.request("HEAD", f"/api/v1/ideas/{ref}", check=False)
    assert head.status == 200 and head.body == b""

    # writes under it, in the ideas service and in the customers service
    voted = await api.post(f"/api/v1/ideas/{ref}/vote")
    assert voted.status == 200 and voted.data["ideaId"] == uuid and voted.data["voteCount"] == 1
    patched = await api.patch(f"/api/v1/ideas/{ref.lower()}", json={"status": "planned"})
    assert patched.status == 200 and patched.data["status"] == "planned"
    customer = (await api.post("/api/v1/customers", json={"name": "Globex", "arr": 100})).data
    linked = await api.post(f"/api/v1/ideas/{ref}/customers", json={"customerId": customer["id"]})
    assert linked.status == 200 and linked.data["ideaId"] == uuid
    listed = await api.get(f"/api/v1/ideas/{ref}/customers")
    assert listed.status == 200 and [c["id"] for c in listed.data] == [customer["id"]]
    decisions = await api.get(f"/api/v1/ideas/{ref}/decisions")
    assert decisions.status == 200 and decisions.data[0]["newStatus"] == "planned"


async def test_a_number_no_idea_of_the_workspace_carries_is_not_found(new_workspace) -> None:
    mine: Workspace = await new_workspace()
    other: Workspace = await new_workspace()
    theirs = (await other.api.post("/api/v1/ideas", json={"title": "Theirs"})).data
    # the other workspace's IDEA-1 is no idea of mine: not found, and nothing changes there
    for method, path in (
        ("GET", f"/api/v1/ideas/{theirs['ideaServiceId']}"),
        ("POST", f"/api/v1/ideas/{theirs['ideaServiceId']}/vote"),
        ("GET", "/api/v1/ideas/IDEA-99999999"),
        ("GET", "/api/v1/ideas/IDEA-99999999999999999999"),
        ("DELETE", "/api/v1/ideas/idea-0"),
    ):
        r = await mine.api.request(method, path)
        assert r.status == 404 and r.error["code"] == "not_found", (method, path, r.body)
    assert (await other.api.get(f"/api/v1/ideas/{theirs['id']}")).data["voteCount"] == 0
    # anything else that is not a uuid stays not found
    for path in ("/api/v1/ideas/IDEA-", "/api/v1/ideas/IDEA-x1", "/api/v1/ideas/42"):
        r = await mine.api.get(path)
        assert r.status == 404 and r.error["code"] == "not_found", path
