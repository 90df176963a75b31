"""Roadmap stages through the gateway: create, change, move, make default and delete (scope
roadmap:write); slugs unique per workspace (also under concurrency), positions 0..n-1 in list
order after any sequence of writes (a seeded random sequence against a model, and concurrent
moves), deleting unstages ideas with `idea.assigned`, and another workspace's stages are
not found."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from typing import Any

import aiopg
import jsonschema

from services.ideas import state
from tests.ideas.conftest import Tap
from tests.support.api import Api, Workspace
from tests.support.processes import System
from tests.webhooks.support import Receiver, verify

STAGES = "/api/v1/roadmap/stages"


async def stages(api: Api) -> list[dict[str, Any]]:
    r = await api.get(STAGES)
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def new_stage(api: Api, **body: Any) -> dict[str, Any]:
    body.setdefault("name", f"Stage {uuid.uuid4().hex[:6]}")
    r = await api.post(STAGES, json=body)
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


def refused(r: Any, status: int, code: str, field: str | None = None) -> bool:
    ok = r.status == status and r.error["code"] == code
    return ok and (field is None or r.error.get("field") == field)


def contiguous(listed: list[dict[str, Any]]) -> bool:
    return [s["position"] for s in listed] == list(range(len(listed)))


async def test_a_new_workspace_adds_changes_and_deletes_stages(api: Api) -> None:
    """A new workspace's first write sees Now, Next, Later first; POST answers the stage that
    GET lists (slug from the name, last by default); PATCH changes only what it names; DELETE
    answers {id, deleted, unstaged} and the stage is gone (again: 404)."""
    beta = await new_stage(api, name="Beta Testing!", color="#F59E0B")
    assert list(beta) == [
        "id",
        "name",
        "slug",
        "color",
        "position",
        "isDefault",
        "ideaCount",
        "createdAt",
    ]
    assert (beta["name"], beta["slug"], beta["color"]) == (
        "Beta Testing!",
        "beta-testing",
        "#F59E0B",
    )
    assert (beta["position"], beta["isDefault"], beta["ideaCount"]) == (3, False, 0)
    listed = await stages(api)
    assert [s["slug"] for s in listed] == ["now", "next", "later", "beta-testing"]
    assert listed[3] == beta and contiguous(listed)
    assert (await new_stage(api, name="Café Über"))["slug"] == "cafe-uber"
    assert (await new_stage(api, name="🚀"))["slug"] == "stage"

    r = await api.patch(f"{STAGES}/{beta['id']}", json={"name": "Beta"})
    assert r.status == 200 and r.data == {**beta, "name": "Beta"}, r.body
    r = await api.patch(f"{STAGES}/{beta['id']}", json={"slug": "beta", "color": None})
    assert r.data == {**beta, "name": "Beta", "slug": "beta", "color": None}, r.body
    assert (await stages(api))[3] == r.data

    r = await api.delete(f"{STAGES}/{beta['id']}")
    assert r.status == 200 and r.data == {"id": beta["id"], "deleted": True, "unstaged": 0}
    listed = await stages(api)
    assert beta["id"] not in {s["id"] for s in listed} and contiguous(listed)
    assert refused(await api.delete(f"{STAGES}/{beta['id']}"), 404, "not_found")
    assert refused(await api.patch(f"{STAGES}/{beta['id']}", json={"name": "x"}), 404, "not_found")
    assert refused(await api.delete(f"{STAGES}/{uuid.uuid4()}"), 404, "not_found")
    assert refused(await api.delete(f"{STAGES}/not-a-uuid"), 404, "not_found")


async def test_positions_insert_move_and_past_the_end(api: Api) -> None:
    """A create at p pushes the stages from p on down; a move closes the gap it leaves; a
    position past the end means last."""
    a = await new_stage(api, name="A", position=0)
    assert [s["slug"] for s in await stages(api)] == ["a", "now", "next", "later"]
    await new_stage(api, name="B", position=2)
    await new_stage(api, name="C", position=1_000_000)
    listed = await stages(api)
    assert [s["slug"] for s in listed] == ["a", "now", "b", "next", "later", "c"]
    assert contiguous(listed)
    r = await api.patch(f"{STAGES}/{a['id']}", json={"position": 4})
    assert r.status == 200 and r.data["position"] == 4, r.body
    assert [s["slug"] for s in await stages(api)] == ["now", "b", "next", "later", "a", "c"]
    r = await api.patch(f"{STAGES}/{a['id']}", json={"position": 99})
    assert r.data["position"] == 5
    later = next(s for s in await stages(api) if s["slug"] == "later")
    await api.patch(f"{STAGES}/{later['id']}", json={"position": 0, "name": "Someday"})
    listed = await stages(api)
    assert [s["slug"] for s in listed] == ["later", "now", "b", "next", "c", "a"]
    assert listed[0]["name"] == "Someday" and contiguous(listed)
    b = next(s for s in listed if s["slug"] == "b")
    await api.delete(f"{STAGES}/{b['id']}")
    listed = await stages(api)
    assert [s["slug"] for s in listed] == ["later", "now", "next", "c", "a"]
    assert contiguous(listed)


async def test_the_default_moves_and_default_or_last_stage_cannot_be_deleted(
    api: Api, ws: Workspace, system: System
) -> None:
    """isDefault: true makes the stage the default and the previous one not; deleting the
    default, or the only stage left, is 409 and changes nothing."""
    now, nxt, later = await stages(api)
    assert now["isDefault"] and not nxt["isDefault"]
    r = await api.delete(f"{STAGES}/{now['id']}")
    assert refused(r, 409, "conflict"), r.body
    r = await api.patch(f"{STAGES}/{nxt['id']}", json={"isDefault": True})
    assert r.status == 200 and r.data["isDefault"] is True, r.body
    assert [s["isDefault"] for s in await stages(api)] == [False, True, False]
    r = await api.patch(f"{STAGES}/{nxt['id']}", json={"isDefault": True})  # again: the same
    assert [s["isDefault"] for s in await stages(api)] == [False, True, False]
    assert (await api.delete(f"{STAGES}/{now['id']}")).data["deleted"] is True
    assert (await api.delete(f"{STAGES}/{later['id']}")).data["deleted"] is True
    r = await api.delete(f"{STAGES}/{nxt['id']}")
    assert refused(r, 409, "conflict"), r.body  # the default, and the last one
    only = await stages(api)
    assert [(s["id"], s["position"], s["isDefault"]) for s in only] == [(nxt["id"], 0, True)]
    # A workspace whose stages are gone keeps its stages as they are: the service does not
    # make Now, Next and Later again for a workspace it has already set up.
    async with aiopg.connect(system.database_url) as conn:
        cur = await conn.cursor()
        await state.create_state(cur, uuid.UUID(ws.id))
    assert await stages(api) == only


async def test_slugs_are_unique_in_the_workspace(api: Api, new_workspace: Any) -> None:
    """A slug another stage has is 409 on create (given or made from the name) and on
    rename; concurrent creates of one slug give one stage; another workspace has its own."""
    r = await api.post(STAGES, json={"name": "Later again", "slug": "later"})
    assert refused(r, 409, "conflict", "slug"), r.body
    r = await api.post(STAGES, json={"name": "Next"})
    assert refused(r, 409, "conflict", "slug"), r.body
    now = (await stages(api))[0]
    r = await api.patch(f"{STAGES}/{now['id']}", json={"slug": "next"})
    assert refused(r, 409, "conflict", "slug"), r.body
    r = await api.patch(f"{STAGES}/{now['id']}", json={"slug": "now", "name": "Today"})
    assert r.status == 200 and r.data["name"] == "Today"  # its own slug is no conflict
    rs = await asyncio.gather(*(api.post(STAGES, json={"name": "Twin"}) for _ in range(5)))
    assert sorted(r.status for r in rs) == [200, 409, 409, 409, 409], [r.body for r in rs]
    listed = await stages(api)
    assert [s["slug"] for s in listed] == ["now", "next", "later", "twin"] and contiguous(listed)
    theirs = await new_workspace()
    assert (await new_stage(theirs.api, name="Twin"))["slug"] == "twin"


async def test_bodies_are_validated(api: Api) -> None:
    """Bad names, slugs, colours, positions and bodies: 400 naming the field; nothing made."""
    now = (await stages(api))[0]
    bad_creates = [
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({}, "name"),
        ({"name": None}, "name"),
        ({"name": "ok", "slug": "Upper"}, "slug"),
        ({"name": "ok", "slug": ""}, "slug"),
        ({"name": "ok", "slug": "a" * 51}, "slug"),
        ({"name": "ok", "slug": "a b"}, "slug"),
        ({"name": "ok", "slug": None}, "slug"),
        ({"name": "ok", "color": "red"}, "color"),
        ({"name": "ok", "color": "#12345g"}, "color"),
        ({"name": "ok", "position": -1}, "position"),
        ({"name": "ok", "position": 1.5}, "position"),
        ({"name": "ok", "position": "1"}, "position"),
        ({"name": "ok", "position": True}, "position"),
        ({"name": "ok", "position": None}, "position"),
        ({"name": "ok", "isDefault": True}, "isDefault"),
    ]
    for body, field in bad_creates:
        r = await api.post(STAGES, json=body)
        assert refused(r, 400, "validation_error", field), (body, r.body)
    bad_updates = [
        ({"isDefault": False}, "isDefault"),
        ({"isDefault": None}, "isDefault"),
        ({"name": None}, "name"),
        ({"slug": None}, "slug"),
        ({"position": None}, "position"),
        ({"position": -3}, "position"),
        ({"extra": 1}, "extra"),
    ]
    for body, field in bad_updates:
        r = await api.patch(f"{STAGES}/{now['id']}", json=body)
        assert refused(r, 400, "validation_error", field), (body, r.body)
    r = await api.patch(f"{STAGES}/{now['id']}", json={})
    assert refused(r, 400, "validation_error"), r.body
    assert len(await stages(api)) == 3 and (await stages(api))[0] == now


async def test_deleting_a_stage_unstages_its_ideas_with_events(api: Api, tap: Tap) -> None:
    """Its ideas (a deleted one too) get roadmapStageId null, each emits idea.assigned with
    previousRoadmapStageId; `unstaged` counts them; ideas on other stages stay."""
    beta = await new_stage(api, name="Beta")
    now = (await stages(api))[0]
    ids = []
    for title in ("One", "Two", "Three"):
        idea = (await api.post("/api/v1/ideas", json={"title": title})).data
        ids.append(idea["id"])
        r = await api.put(f"/api/v1/ideas/{idea['id']}/roadmap", json={"stageId": beta["id"]})
        assert r.status == 200, r.body
    await api.delete(f"/api/v1/ideas/{ids[2]}")
    kept = (await api.post("/api/v1/ideas", json={"title": "Stays"})).data
    await api.put(f"/api/v1/ideas/{kept['id']}/roadmap", json={"stageId": now["id"]})
    assert next(s for s in await stages(api) if s["id"] == beta["id"])["ideaCount"] == 2
    r = await api.delete(f"{STAGES}/{beta['id']}")
    assert r.status == 200 and r.data == {"id": beta["id"], "deleted": True, "unstaged": 3}
    events: list[dict[str, Any]] = []
    while len(events) < 3:  # after the creates', assignments' and delete's own events
        (e,) = await tap.take(1)
        if e["type"] == "idea.assigned" and e["data"]["previousRoadmapStageId"] == beta["id"]:
            events.append(e)
    assert sorted(e["data"]["idea"]["id"] for e in events) == sorted(ids)
    assert all(e["data"]["previousRoadmapStageId"] == beta["id"] for e in events)
    assert all(e["data"]["idea"]["roadmapStageId"] is None for e in events)
    for idea_id in ids:
        assert (await api.get(f"/api/v1/ideas/{idea_id}")).data["roadmapStageId"] is None
    assert (await api.get(f"/api/v1/ideas/{kept['id']}")).data["roadmapStageId"] == now["id"]
    r = await api.put(f"/api/v1/ideas/{kept['id']}/roadmap", json={"stageId": beta["id"]})
    assert refused(r, 404, "not_found"), r.body


async def test_another_workspaces_stage_is_not_found_and_unchanged(
    api: Api, new_workspace: Any
) -> None:
    """PATCH and DELETE of another workspace's stage are 404 and change nothing there;
    an idea cannot be put on it."""
    theirs = await new_workspace()
    their_stage = await new_stage(theirs.api, name="Theirs")
    before = await stages(theirs.api)
    path = f"{STAGES}/{their_stage['id']}"
    for r in (
        await api.patch(path, json={"name": "Mine now", "position": 0, "isDefault": True}),
        await api.delete(path),
    ):
        assert refused(r, 404, "not_found"), r.body
    assert await stages(theirs.api) == before
    idea = (await api.post("/api/v1/ideas", json={"title": "Mine"})).data
    r = await api.put(f"/api/v1/ideas/{idea['id']}/roadmap", json={"stageId": their_stage["id"]})
    assert refused(r, 404, "not_found"), r.body
    assert [s["slug"] for s in await stages(api)] == ["now", "next", "later"]


async def test_writes_need_roadmap_write(ws: Workspace, system: System) -> None:
    key = await ws.new_key(system.database_url, scopes="roadmap:read,ideas:read")
    reader = ws.api.with_key(key["key"])
    now = (await stages(reader))[0]
    for r in (
        await reader.post(STAGES, json={"name": "Nope"}),
        await reader.patch(f"{STAGES}/{now['id']}", json={"name": "Nope"}),
        await reader.delete(f"{STAGES}/{now['id']}"),
    ):
        assert refused(r, 403, "insufficient_scope"), r.body


async def test_concurrent_moves_creates_and_deletes_keep_positions_contiguous(api: Api) -> None:
    """Rounds of simultaneous moves, creates and deletes: afterwards the positions are always
    0..n-1 and every stage is listed once."""
    for _ in range(3):
        await new_stage(api)
    rng = random.Random(7)
    for round_ in range(4):
        listed = await stages(api)
        doomed = [s for s in listed if not s["isDefault"]][-1]
        calls = [
            api.patch(f"{STAGES}/{s['id']}", json={"position": rng.randrange(len(listed) + 2)})
            for s in rng.sample([s for s in listed if s != doomed], 4)
        ]
        calls += [
            api.post(STAGES, json={"name": f"R{round_} {i}", "position": i}) for i in range(3)
        ]
        calls.append(api.delete(f"{STAGES}/{doomed['id']}"))
        rs = await asyncio.gather(*calls)
        assert all(r.status == 200 for r in rs), [r.body for r in rs if r.status != 200]
        after = await stages(api)
        assert contiguous(after), [(s["slug"], s["position"]) for s in after]
        assert len({s["id"] for s in after}) == len(after) == len(listed) + 2


async def test_a_stage_deleted_while_ideas_are_assigned_to_it_keeps_none(api: Api) -> None:
    """Assignments racing a delete: afterwards no idea is on the deleted stage (each either
    was unstaged by the delete or was refused 404)."""
    ideas = [(await api.post("/api/v1/ideas", json={"title": f"Race {i}"})).data for i in range(8)]
    for _ in range(3):
        doomed = await new_stage(api)
        calls: list[Any] = [
            api.put(f"/api/v1/ideas/{i['id']}/roadmap", json={"stageId": doomed["id"]})
            for i in ideas
        ]
        calls.insert(4, api.delete(f"{STAGES}/{doomed['id']}"))
        rs = await asyncio.gather(*calls)
        assert all(r.status in (200, 404) for r in rs), [r.body for r in rs]
        deleted = rs[4]
        assert deleted.status == 200, deleted.body
        staged = [(await api.get(f"/api/v1/ideas/{i['id']}")).data["roadmapStageId"] for i in ideas]
        assert doomed["id"] not in staged
        assured = sum(1 for r in rs[:4] + rs[5:] if r.status == 200)
        assert deleted.data["unstaged"] <= assured


async def test_any_sequence_of_writes_keeps_positions_in_list_order(
    api: Api, new_workspace: Any
) -> None:
    """Seeded random sequences of creates (at a position or last), moves (past the end too),
    default changes and deletes, each checked against a model of the list after every step:
    the same stages in the same order, positions 0..n-1, exactly one default."""
    for seed in range(3):
        w = (await new_workspace()).api
        rng = random.Random(seed)
        model = [s["id"] for s in await stages(w)]
        default = model[0]
        for step in range(30):
            op = rng.choice(("create", "create", "move", "move", "default", "delete"))
            where = f"seed {seed} step {step} {op}"
            if op == "create":
                body: dict[str, Any] = {"name": f"S{step}"}
                position = rng.choice((None, rng.randrange(len(model) + 3)))
                if position is not None:
                    body["position"] = position
                made = await new_stage(w, **body)
                at = len(model) if position is None else min(position, len(model))
                model.insert(at, made["id"])
                assert made["position"] == at, where
            elif op == "move":
                moved = rng.choice(model)
                position = rng.randrange(len(model) + 3)
                r = await w.patch(f"{STAGES}/{moved}", json={"position": position})
                assert r.status == 200, (where, r.body)
                model.remove(moved)
                model.insert(min(position, len(model)), moved)
            elif op == "default":
                default = rng.choice(model)
                r = await w.patch(f"{STAGES}/{default}", json={"isDefault": True})
                assert r.status == 200, (where, r.body)
            else:
                gone = rng.choice(model)
                r = await w.delete(f"{STAGES}/{gone}")
                if gone == default or len(model) == 1:
                    assert refused(r, 409, "conflict"), (where, r.body)
                else:
                    assert r.status == 200, (where, r.body)
                    model.remove(gone)
            listed = await stages(w)
            assert [s["id"] for s in listed] == model, where
            assert contiguous(listed), where
            assert [s["id"] for s in listed if s["isDefault"]] == [default], where


async def test_a_deleted_stages_unstagings_are_delivered_to_subscribers(ws: Workspace) -> None:
    """A subscriber to `idea.assigned` gets one delivery per unstaged idea: roadmapStageId
    null, previousRoadmapStageId the deleted stage, valid against the document's `webhooks`
    schema, signed."""
    api = ws.api
    receiver = await Receiver().start()
    try:
        path = receiver.new_path()
        r = await api.post(
            "/api/v1/webhooks", json={"targetUrl": receiver.url(path), "events": ["idea.assigned"]}
        )
        assert r.status == 200, r.body
        secret = r.data["secret"]
        gone = await new_stage(api, name="Gone")
        ideas = [
            (await api.post("/api/v1/ideas", json={"title": f"On {i}"})).data for i in range(2)
        ]
        for idea in ideas:
            await api.put(f"/api/v1/ideas/{idea['id']}/roadmap", json={"stageId": gone["id"]})
        assert (await api.delete(f"{STAGES}/{gone['id']}")).data["unstaged"] == 2
        deadline = time.monotonic() + 15
        while len(receiver.at(path)) < 4:  # two assignments, two unstagings
            assert time.monotonic() < deadline, [g.json for g in receiver.at(path)]
            await asyncio.sleep(0.1)
        unstaged = [
            g for g in receiver.at(path) if g.json["data"]["idea"]["roadmapStageId"] is None
        ]
        assert sorted(g.json["data"]["idea"]["id"] for g in unstaged) == sorted(
            i["id"] for i in ideas
        )
        assert all(g.json["data"]["previousRoadmapStageId"] == gone["id"] for g in unstaged)
        assert all(verify(secret, g) for g in unstaged)
        doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
        post = doc["webhooks"]["idea.assigned"]["post"]
        schema = {
            **post["requestBody"]["content"]["application/json"]["schema"],
            "components": doc["components"],
        }
        for delivery in receiver.at(path):
            jsonschema.Draft202012Validator(schema).validate(delivery.json)
    finally:
        await receiver.stop()
