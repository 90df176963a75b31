"""The idea fields written through the gateway: ideaType, productId, decisionOwnerId,
decisionDeadline, actionable, validationScore (create, batch create, PATCH), url and
closureCategory (PATCH); the filters `product_id` and `decision_owner`, the analytics reports
that read them, their events, a member's rename reaching the ideas they own, and the MCP
tools."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.ideas.conftest import Tap
from tests.mcp.support import call, mcp_session
from tests.support.api import Api, Workspace

IDEAS = "/api/v1/ideas"


def refused(r: Any, status: int, code: str, field: str | None = None) -> bool:
    ok = r.status == status and r.error["code"] == code
    return ok and (field is None or r.error.get("field") == field)


async def member(api: Api, name: str, email: str, role: str = "member") -> dict[str, Any]:
    r = await api.post("/api/v1/members", json={"name": name, "email": email, "role": role})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def product(api: Api, name: str) -> dict[str, Any]:
    r = await api.post("/api/v1/products", json={"name": name})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def listed(api: Api, **params: Any) -> list[str]:
    r = await api.get(IDEAS, params={"limit": 100, **params})
    assert r.status == 200, r.body
    assert r.json["pagination"]["total"] == len(r.data)
    return sorted(i["id"] for i in r.data)


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def test_fields_on_create_batch_and_patch(api: Api) -> None:
    """Every field set on create shows on the Idea and IdeaDetail; batch items take them;
    PATCH changes each, `null` clears the nullable ones; the defaults are null and
    `actionable` true."""
    dana = await member(api, "Dana Lee", "Dana@Acme.example")
    web = await product(api, "Web App")
    due = datetime(2031, 5, 1, 12, 30, tzinfo=UTC)
    body = {
        "title": "Dark mode",
        "ideaType": "feature_request",
        "productId": web["id"],
        "decisionOwnerId": dana["id"],
        "decisionDeadline": "2031-05-01T14:30:00+02:00",
        "actionable": False,
        "validationScore": 72.5,
    }
    r = await api.post(IDEAS, json=body)
    assert r.status == 200, r.body
    idea = r.data
    got = {
        k: idea[k]
        for k in ("ideaType", "productId", "decisionOwnerName", "decisionDeadline", "actionable")
    }
    assert got == {
        "ideaType": "feature_request",
        "productId": web["id"],
        "decisionOwnerName": "Dana Lee",
        "decisionDeadline": iso(due),
        "actionable": False,
    }
    assert idea["validation"]["score"] == 72.5
    detail = (await api.get(f"{IDEAS}/{idea['id']}")).data
    assert {k: detail[k] for k in got} == got and detail["validation"]["score"] == 72.5

    plain = (await api.post(IDEAS, json={"title": "Plain"})).data
    assert (plain["ideaType"], plain["productId"], plain["decisionOwnerName"]) == (None,) * 3
    assert (plain["decisionDeadline"], plain["actionable"]) == (None, True)
    assert plain["validation"]["score"] is None

    r = await api.post(
        f"{IDEAS}/batch",
        json={"ideas": [{"title": "B1", "productId": web["id"], "decisionOwnerId": dana["id"]}]},
    )
    assert r.status == 200, r.body
    [b1] = r.data["ideas"]
    assert (b1["productId"], b1["decisionOwnerName"]) == (web["id"], "Dana Lee")

    path = f"{IDEAS}/{plain['id']}"
    ada = await member(api, "Ada", "ada@acme.example")
    changes: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"ideaType": "bug"}, {"ideaType": "bug"}),
        ({"productId": web["id"]}, {"productId": web["id"]}),
        ({"decisionOwnerId": ada["id"]}, {"decisionOwnerName": "Ada"}),
        (
            {"decisionDeadline": "2030-01-02T03:04:05Z"},
            {"decisionDeadline": "2030-01-02T03:04:05.000000Z"},
        ),
        ({"actionable": False}, {"actionable": False}),
        ({"url": "https://acme.example/x"}, {"url": "https://acme.example/x"}),
        ({"ideaType": None, "productId": None}, {"ideaType": None, "productId": None}),
        (
            {"decisionOwnerId": None, "decisionDeadline": None},
            {"decisionOwnerName": None, "decisionDeadline": None},
        ),
        ({"url": None, "actionable": True}, {"url": None, "actionable": True}),
    ]
    for change, expect in changes:
        r = await api.patch(path, json=change)
        assert r.status == 200, (change, r.body)
        assert {k: r.data[k] for k in expect} == expect, change
        assert {k: (await api.get(path)).data[k] for k in expect} == expect
    r = await api.patch(path, json={"validationScore": 0})
    assert r.data["validation"]["score"] == 0
    r = await api.patch(path, json={"validationScore": None})
    assert r.data["validation"]["score"] is None


async def test_fields_are_validated(api: Api) -> None:
    """Out-of-range or mistyped values: 400 naming the field, and nothing changes."""
    idea = (await api.post(IDEAS, json={"title": "V"})).data
    cases = [
        ({"ideaType": ""}, "ideaType"),
        ({"ideaType": "x" * 51}, "ideaType"),
        ({"productId": "nope"}, "productId"),
        ({"decisionOwnerId": 7}, "decisionOwnerId"),
        ({"decisionDeadline": "2030-01-01"}, "decisionDeadline"),
        ({"decisionDeadline": 1700000000}, "decisionDeadline"),
        ({"actionable": "yes"}, "actionable"),
        ({"validationScore": -1}, "validationScore"),
        ({"validationScore": 100.5}, "validationScore"),
    ]
    for body, field in cases:
        r = await api.post(IDEAS, json={"title": "x", **body})
        assert refused(r, 400, "validation_error", field), (body, r.body)
        r = await api.patch(f"{IDEAS}/{idea['id']}", json=body)
        assert refused(r, 400, "validation_error", field), (body, r.body)
    for body, field in [
        ({"actionable": None}, "actionable"),
        ({"url": "x" * 2001}, "url"),
        ({"closureCategory": None, "status": "shipped"}, "closureCategory"),
        ({"closureCategory": "", "status": "shipped"}, "closureCategory"),
        ({"closureCategory": "x" * 51, "status": "shipped"}, "closureCategory"),
    ]:
        r = await api.patch(f"{IDEAS}/{idea['id']}", json=body)
        assert refused(r, 400, "validation_error", field), (body, r.body)
    r = await api.post(f"{IDEAS}/batch", json={"ideas": [{"title": "a", "validationScore": 101}]})
    assert refused(r, 400, "validation_error", "ideas[0].validationScore"), r.body
    assert (await api.get(f"{IDEAS}/{idea['id']}")).data["status"] == "new"
    assert (await api.get(IDEAS)).json["pagination"]["total"] == 1


async def test_closure_category_only_with_a_decided_status_change(api: Api) -> None:
    """`closureCategory` replaces the derived category when it comes with a change to
    shipped, rejected, duplicate or archived (the Decision records it too); without such a
    change it is 400 on `closureCategory` and nothing changes."""
    idea = (await api.post(IDEAS, json={"title": "C"})).data
    path = f"{IDEAS}/{idea['id']}"
    for body in (
        {"closureCategory": "rejected_cost"},
        {"closureCategory": "rejected_cost", "status": "planned"},
        {"closureCategory": "rejected_cost", "status": "new"},
        {"closureCategory": "rejected_cost", "title": "Other"},
    ):
        r = await api.patch(path, json=body)
        assert refused(r, 400, "validation_error", "closureCategory"), (body, r.body)
    assert (await api.get(path)).data["title"] == "C"
    # the body's own rule is checked before the records it names: 400, not 404
    r = await api.patch(path, json={"closureCategory": "x", "productId": str(uuid.uuid4())})
    assert refused(r, 400, "validation_error", "closureCategory"), r.body
    r = await api.patch(path, json={"status": "rejected", "closureCategory": "rejected_cost"})
    assert r.status == 200, r.body
    assert (r.data["status"], r.data["closureCategory"]) == ("rejected", "rejected_cost")
    decisions = (await api.get(f"{path}/decisions")).data
    assert decisions[-1]["closureCategory"] == "rejected_cost"
    # already rejected: no change of status, so no closureCategory
    r = await api.patch(path, json={"status": "rejected", "closureCategory": "other"})
    assert refused(r, 400, "validation_error", "closureCategory")
    r = await api.patch(path, json={"status": "shipped", "closureCategory": "shipped_beta"})
    assert r.status == 200 and r.data["closureCategory"] == "shipped_beta"
    other = (await api.post(IDEAS, json={"title": "D"})).data
    r = await api.patch(f"{IDEAS}/{other['id']}", json={"status": "archived"})
    assert r.data["closureCategory"] == "archived"  # derived when not given


async def test_filters_follow_fields_set_through_the_api(api: Api, new_workspace: Any) -> None:
    """`product_id` and `decision_owner` (the owner's e-mail, any case) find exactly the ideas
    set through the API, at once; a cleared field leaves the filter; another workspace's
    filters find none of them."""
    dana = await member(api, "Dana Lee", "Dana@Acme.example")
    ada = await member(api, "Ada", "ada@acme.example")
    web, mobile = await product(api, "Web"), await product(api, "Mobile")
    ids = []
    for n, (p, o) in enumerate([(web, dana), (web, ada), (mobile, dana), (None, None)]):
        body: dict[str, Any] = {"title": f"F{n}"}
        if p:
            body["productId"] = p["id"]
        if o:
            body["decisionOwnerId"] = o["id"]
        ids.append((await api.post(IDEAS, json=body)).data["id"])
    assert await listed(api, product_id=web["id"]) == sorted(ids[:2])
    assert await listed(api, product_id=mobile["id"]) == [ids[2]]
    assert await listed(api, decision_owner="dana@acme.example") == sorted([ids[0], ids[2]])
    assert await listed(api, decision_owner="DANA@ACME.EXAMPLE") == sorted([ids[0], ids[2]])
    assert await listed(api, decision_owner="ada@acme.example") == [ids[1]]
    r = await api.patch(
        f"{IDEAS}/{ids[3]}", json={"productId": mobile["id"], "decisionOwnerId": ada["id"]}
    )
    assert r.status == 200
    assert await listed(api, product_id=mobile["id"]) == sorted([ids[2], ids[3]])
    assert await listed(api, decision_owner="ada@acme.example") == sorted([ids[1], ids[3]])
    await api.patch(f"{IDEAS}/{ids[0]}", json={"productId": None, "decisionOwnerId": None})
    assert await listed(api, product_id=web["id"]) == [ids[1]]
    assert await listed(api, decision_owner="dana@acme.example") == [ids[2]]
    theirs = await new_workspace()
    assert await listed(theirs.api, product_id=mobile["id"]) == []
    assert await listed(theirs.api, decision_owner="ada@acme.example") == []


async def test_a_members_new_name_and_email_reach_the_ideas_they_own(api: Api, tap: Tap) -> None:
    """PATCH /members with a new name or e-mail: the ideas they own show the new
    `decisionOwnerName` and answer the filter by the new e-mail, each emitting `idea.updated`;
    removing the member leaves the ideas' owner name (the record of the decision)."""
    dana = await member(api, "Dana Lee", "dana@acme.example")
    ideas = [
        (await api.post(IDEAS, json={"title": f"O{n}", "decisionOwnerId": dana["id"]})).data
        for n in range(2)
    ]
    other = (await api.post(IDEAS, json={"title": "Not hers"})).data
    await tap.take(3)
    r = await api.patch(
        f"/api/v1/members/{dana['id']}", json={"name": "Dana Smith", "email": "DSmith@acme.example"}
    )
    assert r.status == 200, r.body
    events = await tap.take(2)
    assert {e["type"] for e in events} == {"idea.updated"}
    assert sorted(e["data"]["idea"]["id"] for e in events) == sorted(i["id"] for i in ideas)
    assert {e["data"]["idea"]["decisionOwnerName"] for e in events} == {"Dana Smith"}
    assert await listed(api, decision_owner="dsmith@acme.example") == sorted(i["id"] for i in ideas)
    assert await listed(api, decision_owner="dana@acme.example") == []
    for i in ideas:
        assert (await api.get(f"{IDEAS}/{i['id']}")).data["decisionOwnerName"] == "Dana Smith"
    assert (await api.get(f"{IDEAS}/{other['id']}")).data["decisionOwnerName"] is None
    # a role change alone touches no idea
    assert (await api.patch(f"/api/v1/members/{dana['id']}", json={"role": "admin"})).status == 200
    assert (await api.delete(f"/api/v1/members/{dana['id']}")).status == 200
    assert (await api.get(f"{IDEAS}/{ideas[0]['id']}")).data["decisionOwnerName"] == "Dana Smith"
    r = await api.patch(f"{IDEAS}/{ideas[0]['id']}", json={"decisionOwnerId": dana["id"]})
    assert refused(r, 404, "not_found")
    # the only events since the rename are none: the role change and the removal emit nothing
    r = await api.patch(f"{IDEAS}/{other['id']}", json={"ideaType": "x"})
    [after] = await tap.take(1)
    assert after["data"]["idea"]["id"] == other["id"]


async def test_field_changes_emit_idea_updated(api: Api, tap: Tap) -> None:
    """A PATCH of product, owner or deadline alone emits `idea.updated` carrying the new
    values, one per PATCH."""
    dana = await member(api, "Dana", "dana@acme.example")
    web = await product(api, "Web")
    idea = (await api.post(IDEAS, json={"title": "Ev"})).data
    await tap.take(1)
    for change, key, value in (
        ({"productId": web["id"]}, "productId", web["id"]),
        ({"decisionOwnerId": dana["id"]}, "decisionOwnerName", "Dana"),
        (
            {"decisionDeadline": "2030-01-01T00:00:00Z"},
            "decisionDeadline",
            "2030-01-01T00:00:00.000000Z",
        ),
    ):
        r = await api.patch(f"{IDEAS}/{idea['id']}", json=change)
        [ev] = await tap.take(1)
        assert ev["type"] == "idea.updated" and ev["data"]["idea"][key] == value
        assert ev["data"]["idea"] == {k: r.data[k] for k in ev["data"]["idea"]}


async def test_decisions_report_and_product_breakdown_from_api_fields(api: Api) -> None:
    """The decisions report's `byOwner` counts decisions per owner set through the API
    (owner = the e-mail, name = the member's name) and `overdue` the undecided ideas whose
    deadline has passed; ideas-over-time `group_by=product` breaks down by `productId`."""
    dana = await member(api, "Dana Lee", "Dana@Acme.example")
    ada = await member(api, "Ada", "ada@acme.example")
    web = await product(api, "Web")
    past = iso(datetime.now(UTC) - timedelta(days=2))
    future = iso(datetime.now(UTC) + timedelta(days=20))
    plan = [
        (dana, "shipped", past, web),
        (dana, "rejected", None, web),
        (dana, None, past, None),  # undecided, overdue
        (ada, None, past, web),  # undecided, overdue
        (ada, None, future, None),  # undecided, not yet due
        (ada, "archived", past, None),  # decided: never overdue
    ]
    for n, (owner, status, deadline, prod) in enumerate(plan):
        idea = (await api.post(IDEAS, json={"title": f"D{n}"})).data
        change: dict[str, Any] = {"decisionOwnerId": owner["id"], "decisionDeadline": deadline}
        if prod:
            change["productId"] = prod["id"]
        if status:
            change["status"] = status
        r = await api.patch(f"{IDEAS}/{idea['id']}", json=change)
        assert r.status == 200, r.body
    d = (await api.get("/api/v1/analytics/decisions")).data
    by_owner = {o["owner"]: (o["name"], o["total"], o["overdue"]) for o in d["byOwner"]}
    assert by_owner == {
        "dana@acme.example": ("Dana Lee", 2, 1),
        "ada@acme.example": ("Ada", 1, 1),
    }
    assert d["summary"]["total"] == 3
    r = await api.get("/api/v1/analytics/ideas-over-time", params={"group_by": "product"})
    assert r.status == 200, r.body
    totals: dict[str, int] = {}
    for bucket in r.data["buckets"]:
        for key, n in bucket["breakdown"].items():
            totals[key] = totals.get(key, 0) + n
    assert totals == {web["id"]: 3, "none": 3}


async def test_concurrent_owner_change_and_rename(api: Api) -> None:
    """A member renamed while ideas are given to them at once: every idea they own ends with
    the new name (none keeps the old one). Three rounds."""
    for round_ in range(3):
        m = await member(api, f"Old {round_}", f"owner{round_}@acme.example")
        ideas = [(await api.post(IDEAS, json={"title": f"R{n}"})).data["id"] for n in range(6)]
        rs = await asyncio.gather(
            *(api.patch(f"{IDEAS}/{i}", json={"decisionOwnerId": m["id"]}) for i in ideas),
            api.patch(f"/api/v1/members/{m['id']}", json={"name": f"New {round_}"}),
        )
        assert all(r.status == 200 for r in rs), [r.body for r in rs]
        names = {(await api.get(f"{IDEAS}/{i}")).data["decisionOwnerName"] for i in ideas}
        assert names == {f"New {round_}"}, (round_, names)


async def test_concurrent_product_delete_and_assignment(api: Api) -> None:
    """A product deleted while ideas are put on it at once: afterwards no idea has the gone
    product (each PATCH either came first and was cleared, or came after and was 404).
    Three rounds."""
    for round_ in range(3):
        p = await product(api, f"Doomed {round_}")
        ideas = [(await api.post(IDEAS, json={"title": f"P{n}"})).data["id"] for n in range(6)]
        await api.patch(f"{IDEAS}/{ideas[0]}", json={"productId": p["id"]})
        rs = await asyncio.gather(
            *(api.patch(f"{IDEAS}/{i}", json={"productId": p["id"]}) for i in ideas),
            api.delete(f"/api/v1/products/{p['id']}"),
        )
        assert all(r.status in (200, 404) for r in rs), [r.body for r in rs]
        assert rs[-1].status == 200
        left = [i for i in ideas if (await api.get(f"{IDEAS}/{i}")).data["productId"] == p["id"]]
        assert left == [], round_


async def test_mcp_create_and_update_idea_take_the_fields(ws: Workspace) -> None:
    """The `create_idea` and `update_idea` tools take the fields their REST twins take."""
    dana = await member(ws.api, "Dana", "dana@acme.example")
    web = await product(ws.api, "Web")
    async with mcp_session(ws.api.base_url, ws.key) as session:
        idea = await call(
            session,
            "create_idea",
            title="From a model",
            ideaType="bug",
            productId=web["id"],
            decisionOwnerId=dana["id"],
            decisionDeadline="2030-01-01T00:00:00Z",
            actionable=False,
            validationScore=40,
        )
        assert (idea["ideaType"], idea["productId"], idea["decisionOwnerName"]) == (
            "bug",
            web["id"],
            "Dana",
        )
        assert (idea["actionable"], idea["validation"]["score"]) == (False, 40)
        detail = await call(
            session,
            "update_idea",
            id=idea["ideaServiceId"],
            productId=None,
            url="https://acme.example/i",
            status="shipped",
            closureCategory="shipped_beta",
        )
        assert (detail["productId"], detail["url"], detail["closureCategory"]) == (
            None,
            "https://acme.example/i",
            "shipped_beta",
        )
    assert (await ws.api.get(f"{IDEAS}/{idea['id']}")).data["closureCategory"] == "shipped_beta"
    assert uuid.UUID(idea["id"])


async def test_a_url_set_by_patch_is_the_duplicate_rules(api: Api) -> None:
    """A `url` set through PATCH is the one the automation API's duplicate rule compares (its
    normalized form); cleared with null, it no longer is."""
    idea = (await api.post(IDEAS, json={"title": "Patched url"})).data
    r = await api.patch(
        f"{IDEAS}/{idea['id']}", json={"url": "https://Example.com/p/9?utm_source=x"}
    )
    assert r.status == 200 and r.data["url"] == "https://Example.com/p/9?utm_source=x"
    auto = "/api/v1/automation/ideas"
    r = await api.post(auto, json={"title": "Elsewhere", "url": "https://example.com/p/9/"})
    assert r.status == 200 and r.json["status"] == "skipped", r.body
    assert (await api.get(f"{IDEAS}/{idea['id']}")).data["signalCount"] == 1
    assert (await api.patch(f"{IDEAS}/{idea['id']}", json={"url": None})).status == 200
    r = await api.post(auto, json={"title": "Elsewhere again", "url": "https://example.com/p/9"})
    assert r.status == 201, r.body
