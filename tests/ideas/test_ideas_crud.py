"""Ideas: create, read, update, RICE, status decisions, delete, votes, roadmap, sub-resources."""

from __future__ import annotations

import uuid

from tests.support.api import Api


async def create(api: Api, **fields: object) -> dict:
    r = await api.post("/api/v1/ideas", json={"title": "Dark mode", **fields})
    assert r.status == 200, r.json
    return r.data  # type: ignore[no-any-return]


async def test_create_defaults_and_numbering(api: Api) -> None:
    """New ideas are `new`, source `api`, numbered IDEA-1, IDEA-2 per workspace."""
    a = await create(api, summary="Please", category="ui", url="https://x.io/a")
    b = await create(api, source="slack")
    assert a["ideaServiceId"] == "IDEA-1" and b["ideaServiceId"] == "IDEA-2"
    assert a["status"] == "new" and a["source"] == "api" and b["source"] == "slack"
    assert a["summary"] == "Please" and a["category"] == "ui" and a["url"] == "https://x.io/a"
    assert a["voteCount"] == 0 and a["rice"]["score"] is None and a["totalCustomerARR"] is None
    got = (await api.get(f"/api/v1/ideas/{a['id']}")).data
    assert got["tags"] == [] and got["externalWorkItem"] is None
    assert {k: got[k] for k in a} == a


async def test_review_inbox_captures(new_workspace) -> None:
    """A workspace in review inbox mode creates ideas as `captured`."""
    ws = await new_workspace(inbox_mode="review")
    assert (await create(ws.api))["status"] == "captured"


async def test_create_validation_names_field(api: Api) -> None:
    """Every create rule answers 400 validation_error naming the field."""
    cases = [
        ({}, "title"),
        ({"title": ""}, "title"),
        ({"title": "x" * 501}, "title"),
        ({"title": "t", "summary": "x" * 5001}, "summary"),
        ({"title": "t", "category": "x" * 101}, "category"),
        ({"title": "t", "url": "x" * 2001}, "url"),
        ({"title": 5}, "title"),
        ({"title": "t", "extra": 1}, "extra"),
    ]
    for body, field in cases:
        r = await api.post("/api/v1/ideas", json=body)
        assert r.status == 400 and r.error["code"] == "validation_error", body
        assert r.error["field"] == field, (body, r.error)
    r = await api.post("/api/v1/ideas", body=b"{nope", headers={"Content-Type": "application/json"})
    assert r.status == 400 and r.error["code"] == "invalid_json"


async def test_get_unknown_and_foreign_idea_is_404(api: Api, new_workspace) -> None:
    """Another workspace's idea, an unknown id and a non-UUID id answer 404."""
    other = await new_workspace()
    idea = await create(other.api)
    for path in (
        f"/api/v1/ideas/{idea['id']}",
        f"/api/v1/ideas/{uuid.uuid4()}",
        "/api/v1/ideas/not-a-uuid",
    ):
        r = await api.get(path)
        assert r.status == 404 and r.error["code"] == "not_found", path
    r = await api.patch(f"/api/v1/ideas/{idea['id']}", json={"title": "x"})
    assert r.status == 404


async def test_rice_arithmetic_and_priority(api: Api) -> None:
    """score = reach x impact x confidence / effort; priority by thresholds; source manual."""
    idea = await create(api)
    path = f"/api/v1/ideas/{idea['id']}"
    r = await api.patch(path, json={"riceReach": 100, "riceImpact": 2})
    assert r.data["rice"]["score"] is None and r.data["rice"]["source"] == "manual"
    r = await api.patch(path, json={"riceConfidence": 0.5, "riceEffort": 4})
    rice = r.data["rice"]
    assert rice["score"] == 25.0 and rice["priority"] == "medium"
    assert (rice["reach"], rice["impact"], rice["confidence"], rice["effort"]) == (100, 2, 0.5, 4)
    for reach, priority in ((10000, "critical"), (400, "high"), (8, "low"), (40, "medium")):
        r = await api.patch(path, json={"riceReach": reach})
        assert r.data["rice"]["priority"] == priority, reach
    assert (await api.patch(path, json={"riceReach": 4000})).data["rice"]["score"] == 1000.0


async def test_update_validation(api: Api) -> None:
    """Bad update bodies are 400 with the field; an empty body too."""
    idea = await create(api)
    path = f"/api/v1/ideas/{idea['id']}"
    cases = [
        ({"riceConfidence": 1.5}, "riceConfidence"),
        ({"riceEffort": 0}, "riceEffort"),
        ({"riceReach": -1}, "riceReach"),
        ({"riceImpact": -0.1}, "riceImpact"),
        ({"status": "nope"}, "status"),
        ({"title": ""}, "title"),
        ({"decisionReason": "x" * 5001}, "decisionReason"),
        ({"foo": 1}, "foo"),
        ({"riceReach": "1"}, "riceReach"),
        ({"title": None}, "title"),
    ]
    for body, field in cases:
        r = await api.patch(path, json=body)
        assert r.status == 400 and r.error["field"] == field, (body, r.json)
    r = await api.patch(path, json={})
    assert r.status == 400 and r.error["code"] == "validation_error"


async def test_status_changes_record_decisions(api: Api) -> None:
    """Each status change appends a Decision; decided statuses set decidedAt and closure."""
    idea = await create(api)
    path = f"/api/v1/ideas/{idea['id']}"
    r = await api.patch(path, json={"status": "planned", "title": "Dark mode v2"})
    assert r.data["status"] == "planned" and r.data["title"] == "Dark mode v2"
    assert r.data["decidedAt"] is None and r.data["closureCategory"] is None
    r = await api.patch(path, json={"status": "shipped", "decisionReason": "Done"})
    d = r.data
    assert d["closureCategory"] == "shipped" and d["decidedAt"] and d["shippedAt"]
    assert d["decisionReason"] == "Done"
    await api.patch(path, json={"summary": "no status change"})
    r = await api.get(f"{path}/decisions")
    hist = r.data
    assert [(h["previousStatus"], h["newStatus"]) for h in hist] == [
        ("new", "planned"),
        ("planned", "shipped"),
    ]
    assert hist[1]["reason"] == "Done" and hist[1]["closureCategory"] == "shipped"
    assert hist[0]["closureCategory"] is None and hist[0]["eventType"] == "status_changed"
    assert all(h["actorName"] == "API key" and h["source"] == "api" for h in hist)
    page = await api.get(f"{path}/decisions", params={"limit": 1})
    assert page.json["pagination"]["hasMore"] is True
    page2 = await api.get(
        f"{path}/decisions", params={"limit": 1, "cursor": page.json["pagination"]["nextCursor"]}
    )
    assert page2.data[0]["id"] == hist[1]["id"] and page2.json["pagination"]["nextCursor"] is None


async def test_closure_categories(api: Api) -> None:
    """rejected -> rejected_scope, duplicate, archived; an existing one is kept."""
    for status, closure in (
        ("rejected", "rejected_scope"),
        ("duplicate", "duplicate"),
        ("archived", "archived"),
    ):
        idea = await create(api)
        r = await api.patch(f"/api/v1/ideas/{idea['id']}", json={"status": status})
        assert r.data["closureCategory"] == closure and r.data["decidedAt"]
        r = await api.patch(f"/api/v1/ideas/{idea['id']}", json={"status": "shipped"})
        assert r.data["closureCategory"] == closure and r.data["shippedAt"]


async def test_soft_delete(api: Api) -> None:
    """DELETE keeps the record (GET finds it), hides it from lists, is idempotent."""
    idea = await create(api)
    path = f"/api/v1/ideas/{idea['id']}"
    for _ in range(2):
        r = await api.delete(path)
        assert r.status == 200 and r.data == {"id": idea["id"], "deleted": True}
    assert (await api.get(path)).data["status"] == "deleted"
    assert (await api.get("/api/v1/ideas")).data == []
    r = await api.get("/api/v1/ideas", params={"status": "deleted"})
    assert [i["id"] for i in r.data] == [idea["id"]] and r.json["pagination"]["total"] == 1
    hist = (await api.get(f"{path}/decisions")).data
    assert [(h["previousStatus"], h["newStatus"]) for h in hist] == [("new", "deleted")]
    assert (await api.delete(f"/api/v1/ideas/{uuid.uuid4()}")).status == 404


async def test_votes_replace_and_breakdown(api: Api, ws) -> None:
    """A second vote by the same voter replaces the first; voteCount sums values."""
    idea = await create(api)
    path = f"/api/v1/ideas/{idea['id']}"
    r = await api.post(f"{path}/vote")
    assert r.data == {"ideaId": idea["id"], "voter": f"key:{ws.key_id}", "value": 1, "voteCount": 1}
    assert (await api.post(f"{path}/vote", json={"voter": "ann"})).data["voteCount"] == 2
    assert (await api.post(f"{path}/vote", json={"voter": "ann", "value": -1})).data[
        "voteCount"
    ] == 0
    assert (await api.post(f"{path}/vote", json={"voter": "bob", "value": -1})).data[
        "voteCount"
    ] == -1
    b = (await api.get(f"{path}/votes")).data
    assert (b["voteCount"], b["upvotes"], b["downvotes"]) == (-1, 1, 2)
    assert b["publicVoteCount"] == 0 and b["requestCount"] == 0
    assert {v["voter"]: v["value"] for v in b["votes"]} == {
        f"key:{ws.key_id}": 1,
        "ann": -1,
        "bob": -1,
    }
    assert b["votes"][0]["voter"] == "bob"
    for body, field in (
        ({"value": 2}, "value"),
        ({"value": 0}, "value"),
        ({"voter": "x" * 256}, "voter"),
        ({"other": 1}, "other"),
    ):
        r = await api.post(f"{path}/vote", json=body)
        assert r.status == 400 and r.error["field"] == field
    assert (await api.get(path)).data["voteCount"] == -1


async def test_roadmap_assignment(api: Api) -> None:
    """PUT roadmap sets and clears the stage; unknown stage 404; stages count ideas."""
    stages = (await api.get("/api/v1/roadmap/stages")).data
    assert [(s["name"], s["slug"], s["isDefault"], s["position"]) for s in stages] == [
        ("Now", "now", True, 0),
        ("Next", "next", False, 1),
        ("Later", "later", False, 2),
    ]
    idea = await create(api)
    path = f"/api/v1/ideas/{idea['id']}/roadmap"
    r = await api.put(path, json={"stageId": stages[1]["id"]})
    assert r.data == {"ideaId": idea["id"], "roadmapStageId": stages[1]["id"]}
    counts = {s["slug"]: s["ideaCount"] for s in (await api.get("/api/v1/roadmap/stages")).data}
    assert counts == {"now": 0, "next": 1, "later": 0}
    r = await api.get("/api/v1/ideas", params={"roadmapStageId": stages[1]["id"]})
    assert [i["id"] for i in r.data] == [idea["id"]]
    assert (await api.put(path, json={"stageId": str(uuid.uuid4())})).status == 404
    r = await api.put(path, json={"stageId": None})
    assert r.data["roadmapStageId"] is None
    assert (await api.put(path, json={})).error["field"] == "stageId"
    assert (await api.put(path, json={"stageId": "zzz"})).error["field"] == "stageId"


async def test_empty_subresources(api: Api) -> None:
    """A new idea's read-only lists are empty arrays; an unknown idea's are 404."""
    idea = await create(api)
    for sub in ("evidence", "participants", "meetings", "support-tickets"):
        r = await api.get(f"/api/v1/ideas/{idea['id']}/{sub}")
        assert r.status == 200 and r.data == [], sub
        assert (await api.get(f"/api/v1/ideas/{uuid.uuid4()}/{sub}")).status == 404
    r = await api.get(f"/api/v1/ideas/{idea['id']}/signals")
    assert r.data == [] and r.json["pagination"] == {
        "limit": 25,
        "hasMore": False,
        "nextCursor": None,
    }


async def test_workspace_info(api: Api, ws) -> None:
    """Workspace counts: total excludes deleted, active excludes closed statuses."""
    ideas = [await create(api) for _ in range(4)]
    await api.patch(f"/api/v1/ideas/{ideas[0]['id']}", json={"status": "shipped"})
    await api.delete(f"/api/v1/ideas/{ideas[1]['id']}")
    info = (await api.get("/api/v1/workspace")).data
    assert info["id"] == ws.id and info["plan"] == "enterprise"
    assert (info["ideasTotal"], info["ideasThisMonth"], info["activeIdeas"]) == (3, 3, 2)
    assert info["publicSubmissionEnabled"] is False and info["inboxMode"] == "direct"
    for path in ("/api/v1/tags", "/api/v1/products", "/api/v1/members"):
        assert (await api.get(path)).data == []
