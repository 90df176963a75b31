"""Tags through the gateway: create, rename, recolour, delete (scope workspace:write), names
unique per workspace ignoring case (also under concurrency), and `tagIds` on ideas: create,
batch create, PATCH, IdeaDetail's `tags`, the `tag_id` filter, `ideaCount`, isolation."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.ideas.conftest import Tap
from tests.mcp.support import call, mcp_session
from tests.support.api import Api, Workspace

TAGS = "/api/v1/tags"


async def new_tag(api: Api, name: str | None = None, color: str | None = None) -> dict[str, Any]:
    r = await api.post(TAGS, json={"name": name or f"tag-{uuid.uuid4().hex[:8]}", "color": color})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def detail_tags(api: Api, idea_id: str) -> list[str]:
    r = await api.get(f"/api/v1/ideas/{idea_id}")
    assert r.status == 200, r.body
    return [t["id"] for t in r.data["tags"]]


async def tagged(api: Api, tag_id: str) -> list[str]:
    r = await api.get("/api/v1/ideas", params={"tag_id": tag_id, "limit": 100})
    assert r.status == 200, r.body
    assert r.json["pagination"]["total"] == len(r.data)
    return sorted(i["id"] for i in r.data)


async def counts(api: Api) -> dict[str, int]:
    return {t["id"]: t["ideaCount"] for t in (await api.get(TAGS)).data}


def refused(r: Any, status: int, code: str, field: str | None = None) -> bool:
    ok = r.status == status and r.error["code"] == code
    return ok and (field is None or r.error.get("field") == field)


async def test_tag_create_rename_recolour_delete(api: Api) -> None:
    """POST answers the Tag (ideaCount 0) that GET /tags then lists; PATCH changes only what
    it names; DELETE answers {id, deleted} and the tag is gone (a second DELETE or PATCH: 404)."""
    tag = await new_tag(api, "Dark mode", "#1E293B")
    assert set(tag) == {"id", "name", "color", "ideaCount"}
    assert (tag["name"], tag["color"], tag["ideaCount"]) == ("Dark mode", "#1E293B", 0)
    assert (await api.get(TAGS)).data == [tag]
    r = await api.patch(f"{TAGS}/{tag['id']}", json={"name": "Night mode"})
    assert r.status == 200 and r.data == {**tag, "name": "Night mode"}, r.body
    r = await api.patch(f"{TAGS}/{tag['id']}", json={"color": None})
    assert r.data == {**tag, "name": "Night mode", "color": None}, r.body
    r = await api.patch(f"{TAGS}/{tag['id']}", json={"color": "#00ff00", "name": "Night"})
    assert (r.data["name"], r.data["color"]) == ("Night", "#00ff00")
    assert (await api.get(TAGS)).data == [r.data]
    plain = await new_tag(api, "plain")
    assert plain["color"] is None
    r = await api.delete(f"{TAGS}/{tag['id']}")
    assert r.status == 200 and r.data == {"id": tag["id"], "deleted": True}, r.body
    assert (await api.get(TAGS)).data == [plain]
    assert refused(await api.delete(f"{TAGS}/{tag['id']}"), 404, "not_found")
    assert refused(await api.patch(f"{TAGS}/{tag['id']}", json={"name": "x"}), 404, "not_found")
    assert refused(await api.delete(f"{TAGS}/{uuid.uuid4()}"), 404, "not_found")
    assert refused(await api.delete(f"{TAGS}/not-a-uuid"), 404, "not_found")


async def test_tag_bodies_are_validated(api: Api) -> None:
    """Bad names, colours and bodies: 400 naming the field, and nothing is made."""
    tag = await new_tag(api, "valid")
    bad_creates = [
        ({"name": ""}, "name"),
        ({"name": "x" * 51}, "name"),
        ({}, "name"),
        ({"name": None}, "name"),
        ({"name": "ok", "color": "red"}, "color"),
        ({"name": "ok", "color": "#12345"}, "color"),
        ({"name": "ok", "color": "#1234567"}, "color"),
        ({"name": "ok", "colour": "#123456"}, "colour"),
        ({"name": 5}, "name"),
    ]
    for body, field in bad_creates:
        assert refused(await api.post(TAGS, json=body), 400, "validation_error", field), body
    bad_updates = [
        ({}, "body"),
        ({"name": None}, "name"),
        ({"name": ""}, "name"),
        ({"color": "#GGGGGG"}, "color"),
    ]
    for body, field in bad_updates:
        r = await api.patch(f"{TAGS}/{tag['id']}", json=body)
        assert refused(r, 400, "validation_error", field), (body, r.body)
    assert (await api.post(TAGS, json={"name": "x" * 50})).status == 200
    assert sorted(t["name"] for t in (await api.get(TAGS)).data) == ["valid", "x" * 50]


async def test_tag_names_are_unique_per_workspace_ignoring_case(
    api: Api, new_workspace: Any
) -> None:
    """A second `UX` in any case is 409 `conflict`, as a create or a rename; a tag may change
    its own name's case; another workspace has names of its own."""
    ux = await new_tag(api, "UX")
    other = await new_tag(api, "mobile")
    assert refused(await api.post(TAGS, json={"name": "ux"}), 409, "conflict")
    assert refused(await api.post(TAGS, json={"name": "Ux", "color": "#000000"}), 409, "conflict")
    r = await api.patch(f"{TAGS}/{other['id']}", json={"name": "uX"})
    assert refused(r, 409, "conflict")
    r = await api.patch(f"{TAGS}/{ux['id']}", json={"name": "ux"})
    assert r.status == 200 and r.data["name"] == "ux"
    assert sorted(t["name"] for t in (await api.get(TAGS)).data) == ["mobile", "ux"]
    theirs = await new_workspace()
    assert (await theirs.api.post(TAGS, json={"name": "UX"})).status == 200


async def test_concurrent_creates_of_one_name_make_one_tag(api: Api) -> None:
    """Two creates of the same name at once: one 200 and one 409; then five at once: one 200."""
    rs = await asyncio.gather(*(api.post(TAGS, json={"name": "Twin"}) for _ in range(2)))
    assert sorted(r.status for r in rs) == [200, 409], [r.body for r in rs]
    assert all(r.error["code"] == "conflict" for r in rs if r.status == 409)
    rs = await asyncio.gather(*(api.post(TAGS, json={"name": "Five"}) for _ in range(5)))
    assert sorted(r.status for r in rs) == [200, 409, 409, 409, 409]
    names = [t["name"] for t in (await api.get(TAGS)).data]
    assert sorted(names) == ["Five", "Twin"]


async def test_workspace_write_scope(ws: Workspace, system: Any) -> None:
    """Tag writes need `workspace:write`: `workspace:read` may list but not write; a key with
    only `workspace:write` may write tags and nothing else."""
    reader = ws.api.with_key(
        (await ws.new_key(system.database_url, scopes="workspace:read"))["key"]
    )
    r = await reader.post(TAGS, json={"name": "nope"})
    assert refused(r, 403, "insufficient_scope")
    assert "workspace:write" in r.error["message"]
    assert (await reader.get(TAGS)).data == []
    writer = ws.api.with_key(
        (await ws.new_key(system.database_url, scopes="workspace:write"))["key"]
    )
    tag = (await writer.post(TAGS, json={"name": "yes"})).data
    assert refused(await writer.patch(f"{TAGS}/{tag['id']}", json={}), 400, "validation_error")
    assert (await writer.patch(f"{TAGS}/{tag['id']}", json={"name": "ok"})).status == 200
    assert refused(await writer.get(TAGS), 403, "insufficient_scope")
    assert refused(
        await writer.post("/api/v1/ideas", json={"title": "t"}), 403, "insufficient_scope"
    )
    assert (await writer.delete(f"{TAGS}/{tag['id']}")).status == 200


async def test_tag_ids_on_create_batch_and_patch(api: Api) -> None:
    """`tagIds` on create and batch create put the tags on; PATCH replaces the set (an empty
    list clears it); IdeaDetail's `tags` (by name), the `tag_id` filter and `ideaCount`
    follow at once."""
    b_tag, a_tag = await new_tag(api, "beta", "#222222"), await new_tag(api, "alpha")
    r = await api.post(
        "/api/v1/ideas", json={"title": "Tagged", "tagIds": [b_tag["id"], a_tag["id"]]}
    )
    assert r.status == 200, r.body
    one = r.data
    detail = (await api.get(f"/api/v1/ideas/{one['id']}")).data
    assert detail["tags"] == [
        {"id": a_tag["id"], "name": "alpha", "color": None},
        {"id": b_tag["id"], "name": "beta", "color": "#222222"},
    ]
    r = await api.post(
        "/api/v1/ideas/batch",
        json={"ideas": [{"title": "B1", "tagIds": [a_tag["id"]]}, {"title": "B2"}]},
    )
    assert r.status == 200, r.body
    b1, b2 = r.data["ideas"]
    assert await detail_tags(api, b1["id"]) == [a_tag["id"]]
    assert await detail_tags(api, b2["id"]) == []
    assert await tagged(api, a_tag["id"]) == sorted([one["id"], b1["id"]])
    assert await tagged(api, b_tag["id"]) == [one["id"]]
    assert await counts(api) == {a_tag["id"]: 2, b_tag["id"]: 1}

    r = await api.patch(f"/api/v1/ideas/{b1['id']}", json={"tagIds": [b_tag["id"]]})
    assert r.status == 200, r.body
    assert [t["id"] for t in r.data["tags"]] == [b_tag["id"]]  # the answer shows the new set
    assert await tagged(api, a_tag["id"]) == [one["id"]]
    assert await tagged(api, b_tag["id"]) == sorted([one["id"], b1["id"]])
    r = await api.patch(
        f"/api/v1/ideas/{b2['id']}", json={"title": "B2'", "tagIds": [a_tag["id"], b_tag["id"]]}
    )
    assert r.status == 200 and r.data["title"] == "B2'"
    assert await counts(api) == {a_tag["id"]: 2, b_tag["id"]: 3}
    r = await api.patch(f"/api/v1/ideas/{one['id']}", json={"tagIds": []})
    assert r.status == 200 and r.data["tags"] == []
    assert await tagged(api, a_tag["id"]) == [b2["id"]]
    # ideaCount leaves deleted ideas out; the deleted idea keeps its tags
    assert (await api.delete(f"/api/v1/ideas/{b2['id']}")).status == 200
    assert await counts(api) == {a_tag["id"]: 0, b_tag["id"]: 1}
    assert len(await detail_tags(api, b2["id"])) == 2


async def test_deleting_a_tag_takes_it_off_every_idea(api: Api) -> None:
    """After DELETE /tags/{id}: no idea shows it, the filter finds none, other tags stay."""
    gone, kept = await new_tag(api, "gone"), await new_tag(api, "kept")
    both = [gone["id"], kept["id"]]
    ideas = [
        (await api.post("/api/v1/ideas", json={"title": f"T{n}", "tagIds": both})).data["id"]
        for n in range(3)
    ]
    assert await tagged(api, gone["id"]) == sorted(ideas)
    assert (await api.delete(f"{TAGS}/{gone['id']}")).status == 200
    for idea in ideas:
        assert await detail_tags(api, idea) == [kept["id"]]
    assert await tagged(api, gone["id"]) == []
    assert await counts(api) == {kept["id"]: 3}
    r = await api.patch(f"/api/v1/ideas/{ideas[0]}", json={"tagIds": [gone["id"]]})
    assert refused(r, 404, "not_found")


async def test_unknown_or_foreign_tags_are_not_found_and_change_nothing(
    api: Api, new_workspace: Any
) -> None:
    """A tag id that is not a tag of the workspace (unknown, or another workspace's) is 404
    `not_found` on create, batch create and PATCH, and nothing is created or changed."""
    theirs = await new_workspace()
    foreign = await new_tag(theirs.api, "theirs")
    mine = await new_tag(api, "mine")
    idea = (await api.post("/api/v1/ideas", json={"title": "Kept", "tagIds": [mine["id"]]})).data
    for bad in (foreign["id"], str(uuid.uuid4())):
        r = await api.post("/api/v1/ideas", json={"title": "Never", "tagIds": [mine["id"], bad]})
        assert refused(r, 404, "not_found"), r.body
        r = await api.post(
            "/api/v1/ideas/batch",
            json={"ideas": [{"title": "Never 1"}, {"title": "Never 2", "tagIds": [bad]}]},
        )
        assert refused(r, 404, "not_found"), r.body
        r = await api.patch(
            f"/api/v1/ideas/{idea['id']}", json={"title": "Changed", "tagIds": [bad]}
        )
        assert refused(r, 404, "not_found"), r.body
        r = await api.patch(f"/api/v1/ideas/{idea['id']}", json={"tagIds": [mine["id"], bad]})
        assert refused(r, 404, "not_found"), r.body
        for path in (f"{TAGS}/{bad}",):
            assert refused(await api.patch(path, json={"name": "mine2"}), 404, "not_found")
            assert refused(await api.delete(path), 404, "not_found")
    listed = (await api.get("/api/v1/ideas")).data
    assert [i["id"] for i in listed] == [idea["id"]] and listed[0]["title"] == "Kept"
    assert await detail_tags(api, idea["id"]) == [mine["id"]]
    # the next idea is IDEA-2: the refused creates reserved no number
    assert (await api.post("/api/v1/ideas", json={"title": "Next"})).data[
        "ideaServiceId"
    ] == "IDEA-2"
    assert (await theirs.api.get(TAGS)).data == [foreign]
    # their tag filter over my ideas, and mine over theirs, find nothing
    assert await tagged(api, foreign["id"]) == []
    assert await tagged(theirs.api, mine["id"]) == []


async def test_tag_ids_are_validated(api: Api) -> None:
    """Repeated, too many, not uuids, or null on PATCH: 400 naming the field."""
    tag = await new_tag(api)
    idea = (await api.post("/api/v1/ideas", json={"title": "V"})).data
    cases = [
        ({"title": "x", "tagIds": [tag["id"], tag["id"]]}, "tagIds"),
        ({"title": "x", "tagIds": [str(uuid.uuid4()) for _ in range(51)]}, "tagIds"),
        ({"title": "x", "tagIds": ["nope"]}, "tagIds[0]"),
        ({"title": "x", "tagIds": tag["id"]}, "tagIds"),
        ({"title": "x", "tagIds": None}, "tagIds"),
    ]
    for body, field in cases:
        r = await api.post("/api/v1/ideas", json=body)
        assert refused(r, 400, "validation_error", field), (field, r.body)
    r = await api.post("/api/v1/ideas/batch", json={"ideas": [{"title": "a", "tagIds": [1]}]})
    assert refused(r, 400, "validation_error", "ideas[0].tagIds[0]"), r.body
    for body, field in [({"tagIds": None}, "tagIds"), ({"tagIds": [tag["id"]] * 2}, "tagIds")]:
        r = await api.patch(f"/api/v1/ideas/{idea['id']}", json=body)
        assert refused(r, 400, "validation_error", field), r.body
    assert (await api.get("/api/v1/ideas")).json["pagination"]["total"] == 1


async def test_tag_change_emits_idea_updated(api: Api, tap: Tap) -> None:
    """A PATCH of `tagIds` alone emits `idea.updated` (with the Idea); a create with tags
    emits `idea.created` as any create."""
    tag = await new_tag(api)
    idea = (await api.post("/api/v1/ideas", json={"title": "Ev", "tagIds": [tag["id"]]})).data
    [created] = await tap.take(1)
    assert created["type"] == "idea.created" and created["data"]["idea"]["id"] == idea["id"]
    r = await api.patch(f"/api/v1/ideas/{idea['id']}", json={"tagIds": []})
    [updated] = await tap.take(1)
    assert updated["type"] == "idea.updated"
    assert updated["data"]["idea"] == {k: r.data[k] for k in updated["data"]["idea"]}


async def test_mcp_create_and_update_idea_take_tag_ids(ws: Workspace) -> None:
    """The `create_idea` and `update_idea` tools take `tagIds` as REST does."""
    a, b = await new_tag(ws.api, "a"), await new_tag(ws.api, "b")
    async with mcp_session(ws.api.base_url, ws.key) as session:
        idea = await call(session, "create_idea", title="From a model", tagIds=[a["id"]])
        assert await detail_tags(ws.api, idea["id"]) == [a["id"]]
        detail = await call(session, "update_idea", id=idea["ideaServiceId"], tagIds=[b["id"]])
        assert [t["id"] for t in detail["tags"]] == [b["id"]]
    assert await detail_tags(ws.api, idea["id"]) == [b["id"]]


async def test_a_tag_deleted_while_ideas_take_it_leaves_no_idea_with_it(api: Api) -> None:
    """Ideas tagged (create and PATCH) at the same time as the tag is deleted: each write either
    came first (the delete then takes the tag off) or is 404; afterwards no idea has the tag
    and the `tag_id` filter finds none."""
    ideas = [
        (await api.post("/api/v1/ideas", json={"title": f"Race {n}"})).data["id"] for n in range(12)
    ]
    for _ in range(5):
        tag = await new_tag(api)
        writes = [
            api.patch(f"/api/v1/ideas/{idea}", json={"tagIds": [tag["id"]]}) for idea in ideas
        ]
        creates = [
            api.post("/api/v1/ideas", json={"title": f"Racer {n}", "tagIds": [tag["id"]]})
            for n in range(6)
        ]
        delete = api.delete(f"{TAGS}/{tag['id']}")
        rs = await asyncio.gather(*writes[:6], *creates[:3], delete, *writes[6:], *creates[3:])
        assert {r.status for r in rs} <= {200, 404}, [r.body for r in rs if r.status >= 500]
        assert await tagged(api, tag["id"]) == []
        assert await counts(api) == {}
