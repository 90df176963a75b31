"""Members and products through the gateway (scope workspace:write): create, change, delete,
validation, e-mails unique per workspace ignoring case, the last owner kept, products' parents
(no loops, no deleting a parent), isolation, and the rules under concurrency."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.ideas.conftest import Tap
from tests.support.api import Api, Workspace

MEMBERS = "/api/v1/members"
PRODUCTS = "/api/v1/products"


def refused(r: Any, status: int, code: str, field: str | None = None) -> bool:
    ok = r.status == status and r.error["code"] == code
    return ok and (field is None or r.error.get("field") == field)


async def new_member(api: Api, **body: Any) -> dict[str, Any]:
    body.setdefault("name", "Dana Lee")
    body.setdefault("email", f"m-{uuid.uuid4().hex[:8]}@acme.example")
    r = await api.post(MEMBERS, json=body)
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def new_product(api: Api, name: str = "Dashboard", parent: str | None = None) -> Any:
    r = await api.post(PRODUCTS, json={"name": name, "parentId": parent})
    assert r.status == 200, r.body
    return r.data


async def roles(api: Api) -> dict[str, str]:
    return {m["id"]: m["role"] for m in (await api.get(MEMBERS)).data}


# ---- members ------------------------------------------------------------------------------


async def test_member_create_change_delete(api: Api) -> None:
    """POST answers the Member with its defaults (role `member`, dashboard access, no
    `lastActiveAt`) that GET /members lists; PATCH changes only what it names; DELETE answers
    {id, deleted} and the member is gone (404 after)."""
    dana = await new_member(api, name="Dana Lee", email="Dana@Acme.example")
    assert dana == {
        "id": dana["id"],
        "name": "Dana Lee",
        "email": "Dana@Acme.example",
        "role": "member",
        "dashboardAccess": True,
        "lastActiveAt": None,
    }
    assert (await api.get(MEMBERS)).data == [dana]
    r = await api.patch(f"{MEMBERS}/{dana['id']}", json={"role": "viewer"})
    assert r.status == 200 and r.data == {**dana, "role": "viewer"}, r.body
    r = await api.patch(
        f"{MEMBERS}/{dana['id']}",
        json={"name": "Dana L.", "email": "dana.l@acme.example", "dashboardAccess": False},
    )
    changed = {
        **dana,
        "role": "viewer",
        "name": "Dana L.",
        "email": "dana.l@acme.example",
        "dashboardAccess": False,
    }
    assert r.status == 200 and r.data == changed, r.body
    ada = await new_member(api, name="Ada", role="admin", dashboardAccess=False)
    assert (ada["role"], ada["dashboardAccess"]) == ("admin", False)
    assert (await api.get(MEMBERS)).data == [ada, changed]  # by name
    r = await api.delete(f"{MEMBERS}/{dana['id']}")
    assert r.status == 200 and r.data == {"id": dana["id"], "deleted": True}, r.body
    assert (await api.get(MEMBERS)).data == [ada]
    assert refused(await api.delete(f"{MEMBERS}/{dana['id']}"), 404, "not_found")
    assert refused(await api.patch(f"{MEMBERS}/{dana['id']}", json={"name": "x"}), 404, "not_found")
    assert refused(await api.delete(f"{MEMBERS}/not-a-uuid"), 404, "not_found")


async def test_member_bodies_are_validated(api: Api) -> None:
    """Bad names, e-mails, roles and bodies: 400 naming the field, and nothing is made."""
    kept = await new_member(api, email="kept@acme.example")
    bad_creates = [
        ({"email": "a@b.co"}, "name"),
        ({"name": "", "email": "a@b.co"}, "name"),
        ({"name": "x" * 101, "email": "a@b.co"}, "name"),
        ({"name": "A"}, "email"),
        ({"name": "A", "email": "not-an-email"}, "email"),
        ({"name": "A", "email": "a@b"}, "email"),
        ({"name": "A", "email": "a" * 250 + "@b.co"}, "email"),
        ({"name": "A", "email": "a@b.co", "role": "boss"}, "role"),
        ({"name": "A", "email": "a@b.co", "role": None}, "role"),
        ({"name": "A", "email": "a@b.co", "dashboardAccess": "yes"}, "dashboardAccess"),
        ({"name": "A", "email": "a@b.co", "extra": 1}, "extra"),
    ]
    for body, field in bad_creates:
        r = await api.post(MEMBERS, json=body)
        assert refused(r, 400, "validation_error", field), (body, r.body)
    bad_updates = [
        ({}, "body"),
        ({"name": None}, "name"),
        ({"email": None}, "email"),
        ({"role": None}, "role"),
        ({"dashboardAccess": None}, "dashboardAccess"),
        ({"email": "nope"}, "email"),
        ({"role": "root"}, "role"),
    ]
    for body, field in bad_updates:
        r = await api.patch(f"{MEMBERS}/{kept['id']}", json=body)
        assert refused(r, 400, "validation_error", field), (body, r.body)
    assert (await api.get(MEMBERS)).data == [kept]


async def test_member_emails_are_unique_per_workspace_ignoring_case(
    api: Api, new_workspace: Any
) -> None:
    """A second e-mail in any case is 409 `conflict`, as a create or a change; a member may
    change the case of its own; another workspace has its own members."""
    dana = await new_member(api, email="dana@acme.example")
    other = await new_member(api, email="other@acme.example")
    assert refused(
        await api.post(MEMBERS, json={"name": "D", "email": "DANA@acme.example"}), 409, "conflict"
    )
    r = await api.patch(f"{MEMBERS}/{other['id']}", json={"email": "Dana@Acme.Example"})
    assert refused(r, 409, "conflict")
    r = await api.patch(f"{MEMBERS}/{dana['id']}", json={"email": "DANA@acme.example"})
    assert r.status == 200 and r.data["email"] == "DANA@acme.example"
    assert sorted(m["email"] for m in (await api.get(MEMBERS)).data) == [
        "DANA@acme.example",
        "other@acme.example",
    ]
    theirs = await new_workspace()
    assert (
        await theirs.api.post(MEMBERS, json={"name": "D", "email": "dana@acme.example"})
    ).status == 200


async def test_concurrent_creates_of_one_email_make_one_member(api: Api) -> None:
    """Five creates of one e-mail (in different cases) at once: one 200 and four 409s."""
    rs = await asyncio.gather(
        *(
            api.post(MEMBERS, json={"name": f"Twin {n}", "email": email})
            for n, email in enumerate(
                ["twin@acme.example", "Twin@ACME.example"] * 2 + ["TWIN@acme.EXAMPLE"]
            )
        )
    )
    assert sorted(r.status for r in rs) == [200, 409, 409, 409, 409], [r.body for r in rs]
    assert all(r.error["code"] == "conflict" for r in rs if r.status == 409)
    assert len((await api.get(MEMBERS)).data) == 1


async def test_the_last_owner_stays(api: Api) -> None:
    """Without an owner anyone may go; once there is one, deleting or demoting the last owner is
    409 `conflict` and changes nothing; with a second owner the first may go."""
    plain = await new_member(api)
    assert (await api.delete(f"{MEMBERS}/{plain['id']}")).status == 200
    first = await new_member(api, role="owner")
    assert refused(await api.delete(f"{MEMBERS}/{first['id']}"), 409, "conflict")
    for role in ("admin", "member", "viewer"):
        r = await api.patch(f"{MEMBERS}/{first['id']}", json={"role": role, "name": "Renamed"})
        assert refused(r, 409, "conflict"), r.body
    assert (await api.get(MEMBERS)).data == [first]  # the name did not change either
    r = await api.patch(f"{MEMBERS}/{first['id']}", json={"role": "owner", "name": "Still"})
    assert r.status == 200 and r.data["name"] == "Still"
    second = await new_member(api, role="admin")
    r = await api.patch(f"{MEMBERS}/{second['id']}", json={"role": "owner"})
    assert r.status == 200
    r = await api.patch(f"{MEMBERS}/{first['id']}", json={"role": "viewer"})
    assert r.status == 200
    assert refused(await api.delete(f"{MEMBERS}/{second['id']}"), 409, "conflict")
    assert (await api.delete(f"{MEMBERS}/{first['id']}")).status == 200
    assert await roles(api) == {second["id"]: "owner"}


async def test_concurrent_changes_keep_an_owner(new_workspace: Any) -> None:
    """Two owners, and at once one is demoted and the other deleted (or both demoted, or both
    deleted): exactly one change succeeds, the other is 409, and one owner remains. Three
    rounds of each, each in a fresh workspace."""

    def change(api: Api, op: str, m: dict[str, Any]) -> Any:
        if op == "patch":
            return api.patch(f"{MEMBERS}/{m['id']}", json={"role": "member"})
        return api.delete(f"{MEMBERS}/{m['id']}")

    for round_ in range(3):
        for ops in (("patch", "delete"), ("patch", "patch"), ("delete", "delete")):
            api = (await new_workspace()).api
            a = await new_member(api, role="owner")
            b = await new_member(api, role="owner")
            rs = await asyncio.gather(change(api, ops[0], a), change(api, ops[1], b))
            assert sorted(r.status for r in rs) == [200, 409], (round_, ops, [r.body for r in rs])
            assert [r.error["code"] for r in rs if r.status == 409] == ["conflict"]
            owners = [m for m, role in (await roles(api)).items() if role == "owner"]
            assert len(owners) == 1, (round_, ops)


async def test_another_workspaces_member_is_not_found(api: Api, new_workspace: Any) -> None:
    """Another workspace's member: PATCH and DELETE are 404 and change nothing; as an idea's
    decision owner, 404 on create and PATCH and nothing is made or changed."""
    theirs = await new_workspace()
    foreign = await new_member(theirs.api, role="owner", name="Theirs")
    extra = await new_member(theirs.api, name="Extra")
    idea = (await api.post("/api/v1/ideas", json={"title": "Mine"})).data
    for m in (foreign, extra):
        path = f"{MEMBERS}/{m['id']}"
        assert refused(await api.patch(path, json={"name": "Hijacked"}), 404, "not_found")
        assert refused(await api.patch(path, json={"role": "viewer"}), 404, "not_found")
        assert refused(await api.delete(path), 404, "not_found")
        r = await api.post("/api/v1/ideas", json={"title": "Never", "decisionOwnerId": m["id"]})
        assert refused(r, 404, "not_found"), r.body
        r = await api.patch(
            f"/api/v1/ideas/{idea['id']}", json={"title": "Changed", "decisionOwnerId": m["id"]}
        )
        assert refused(r, 404, "not_found"), r.body
    assert (await theirs.api.get(MEMBERS)).data == [extra, foreign]
    detail = (await api.get(f"/api/v1/ideas/{idea['id']}")).data
    assert (detail["title"], detail["decisionOwnerName"]) == ("Mine", None)
    assert (await api.get("/api/v1/ideas")).json["pagination"]["total"] == 1
    assert (await api.get(MEMBERS)).data == []


async def test_member_and_product_writes_need_workspace_write(ws: Workspace, system: Any) -> None:
    """`workspace:read` lists members and products but cannot write them; `workspace:write`
    writes them."""
    reader = ws.api.with_key(
        (await ws.new_key(system.database_url, scopes="workspace:read"))["key"]
    )
    writer = ws.api.with_key(
        (await ws.new_key(system.database_url, scopes="workspace:write"))["key"]
    )
    member = await new_member(writer)
    product = await new_product(writer)
    for r in (
        await reader.post(MEMBERS, json={"name": "N", "email": "n@acme.example"}),
        await reader.patch(f"{MEMBERS}/{member['id']}", json={"name": "N"}),
        await reader.delete(f"{MEMBERS}/{member['id']}"),
        await reader.post(PRODUCTS, json={"name": "P"}),
        await reader.patch(f"{PRODUCTS}/{product['id']}", json={"name": "P"}),
        await reader.delete(f"{PRODUCTS}/{product['id']}"),
    ):
        assert refused(r, 403, "insufficient_scope") and "workspace:write" in r.error["message"]
    assert (await reader.get(MEMBERS)).data == [member]
    assert (await reader.get(PRODUCTS)).data == [product]
    assert (await writer.delete(f"{MEMBERS}/{member['id']}")).status == 200
    assert (await writer.delete(f"{PRODUCTS}/{product['id']}")).status == 200


# ---- products -----------------------------------------------------------------------------


async def test_product_create_rename_move_delete(api: Api) -> None:
    """POST answers the Product (ideaCount 0) that GET /products lists; PATCH renames and moves
    (null: top level); DELETE answers {id, deleted}; a second DELETE is 404."""
    web = await new_product(api, "Web App")
    assert web == {"id": web["id"], "name": "Web App", "parentId": None, "ideaCount": 0}
    editor = await new_product(api, "Editor", web["id"])
    assert editor["parentId"] == web["id"]
    assert (await api.get(PRODUCTS)).data == [editor, web]
    r = await api.patch(f"{PRODUCTS}/{editor['id']}", json={"name": "Canvas"})
    assert r.status == 200 and r.data == {**editor, "name": "Canvas"}, r.body
    r = await api.patch(f"{PRODUCTS}/{editor['id']}", json={"parentId": None})
    assert r.status == 200 and r.data["parentId"] is None
    r = await api.patch(f"{PRODUCTS}/{web['id']}", json={"parentId": editor["id"], "name": "Web"})
    assert r.status == 200 and (r.data["parentId"], r.data["name"]) == (editor["id"], "Web")
    r = await api.delete(f"{PRODUCTS}/{web['id']}")
    assert r.status == 200 and r.data == {"id": web["id"], "deleted": True}
    assert [p["id"] for p in (await api.get(PRODUCTS)).data] == [editor["id"]]
    assert refused(await api.delete(f"{PRODUCTS}/{web['id']}"), 404, "not_found")
    assert refused(await api.patch(f"{PRODUCTS}/{web['id']}", json={"name": "x"}), 404, "not_found")


async def test_product_bodies_are_validated(api: Api) -> None:
    """Bad names, parents and bodies: 400 naming the field, and nothing is made or changed."""
    kept = await new_product(api, "Kept")
    for body, field in [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "P", "parentId": "nope"}, "parentId"),
        ({"name": "P", "parentId": 5}, "parentId"),
    ]:
        r = await api.post(PRODUCTS, json=body)
        assert refused(r, 400, "validation_error", field), (body, r.body)
    for body, field in [({}, "body"), ({"name": None}, "name"), ({"parentId": "x"}, "parentId")]:
        r = await api.patch(f"{PRODUCTS}/{kept['id']}", json=body)
        assert refused(r, 400, "validation_error", field), (body, r.body)
    assert (await api.post(PRODUCTS, json={"name": "x" * 100})).status == 200
    assert sorted(p["name"] for p in (await api.get(PRODUCTS)).data) == ["Kept", "x" * 100]


async def test_a_product_cannot_be_its_own_ancestor(api: Api) -> None:
    """Itself, its child or its grandchild as parent: 400 on `parentId`, nothing changes."""
    top = await new_product(api, "Top")
    mid = await new_product(api, "Mid", top["id"])
    leaf = await new_product(api, "Leaf", mid["id"])
    before = (await api.get(PRODUCTS)).data
    for parent in (top["id"], mid["id"], leaf["id"]):
        r = await api.patch(f"{PRODUCTS}/{top['id']}", json={"parentId": parent, "name": "T2"})
        assert refused(r, 400, "validation_error", "parentId"), r.body
    r = await api.patch(f"{PRODUCTS}/{mid['id']}", json={"parentId": leaf["id"]})
    assert refused(r, 400, "validation_error", "parentId")
    assert (await api.get(PRODUCTS)).data == before
    r = await api.patch(f"{PRODUCTS}/{leaf['id']}", json={"parentId": top["id"]})
    assert r.status == 200  # a move that makes no loop


async def test_concurrent_moves_cannot_make_a_loop(new_workspace: Any) -> None:
    """Two products moved under each other at once: one move succeeds, the other is 400 on
    `parentId`; the tree has no loop. Five rounds."""
    for round_ in range(5):
        api = (await new_workspace()).api
        a, b = await new_product(api, "A"), await new_product(api, "B")
        rs = await asyncio.gather(
            api.patch(f"{PRODUCTS}/{a['id']}", json={"parentId": b["id"]}),
            api.patch(f"{PRODUCTS}/{b['id']}", json={"parentId": a["id"]}),
        )
        assert sorted(r.status for r in rs) == [200, 400], (round_, [r.body for r in rs])
        parents = {p["id"]: p["parentId"] for p in (await api.get(PRODUCTS)).data}
        assert None in parents.values(), parents


async def test_deleting_a_product(api: Api, tap: Tap) -> None:
    """A product with children: 409 `conflict`; otherwise deleted, its ideas get `productId`
    null (each emits `idea.updated`) and the `product_id` filter finds none; `ideaCount`
    counts non-deleted ideas."""
    parent = await new_product(api, "Parent")
    child = await new_product(api, "Child", parent["id"])
    ideas = [
        (await api.post("/api/v1/ideas", json={"title": f"I{n}", "productId": child["id"]})).data
        for n in range(3)
    ]
    await tap.take(3)
    assert (await api.delete(f"/api/v1/ideas/{ideas[2]['id']}")).status == 200
    await tap.take(2)  # status_changed, deleted
    counts = {p["id"]: p["ideaCount"] for p in (await api.get(PRODUCTS)).data}
    assert counts == {parent["id"]: 0, child["id"]: 2}
    assert refused(await api.delete(f"{PRODUCTS}/{parent['id']}"), 409, "conflict")
    assert (await api.delete(f"{PRODUCTS}/{child['id']}")).status == 200
    events = await tap.take(3)
    assert sorted(e["data"]["idea"]["id"] for e in events) == sorted(i["id"] for i in ideas)
    assert all(e["type"] == "idea.updated" for e in events)
    assert all(e["data"]["idea"]["productId"] is None for e in events)
    for idea in ideas:
        assert (await api.get(f"/api/v1/ideas/{idea['id']}")).data["productId"] is None
    r = await api.get("/api/v1/ideas", params={"product_id": child["id"], "status": "new"})
    assert r.data == [] and r.json["pagination"]["total"] == 0
    assert (await api.delete(f"{PRODUCTS}/{parent['id']}")).status == 200  # no child now


async def test_another_workspaces_product_is_not_found(api: Api, new_workspace: Any) -> None:
    """Another workspace's product: PATCH, DELETE, as a parent and as an idea's product are 404
    and change nothing."""
    theirs = await new_workspace()
    foreign = await new_product(theirs.api, "Theirs")
    mine = await new_product(api, "Mine")
    idea = (await api.post("/api/v1/ideas", json={"title": "Kept", "productId": mine["id"]})).data
    for bad in (foreign["id"], str(uuid.uuid4())):
        path = f"{PRODUCTS}/{bad}"
        assert refused(await api.patch(path, json={"name": "Hijacked"}), 404, "not_found")
        assert refused(await api.delete(path), 404, "not_found")
        r = await api.post(PRODUCTS, json={"name": "Under", "parentId": bad})
        assert refused(r, 404, "not_found")
        r = await api.patch(f"{PRODUCTS}/{mine['id']}", json={"name": "X", "parentId": bad})
        assert refused(r, 404, "not_found")
        r = await api.post("/api/v1/ideas", json={"title": "Never", "productId": bad})
        assert refused(r, 404, "not_found")
        r = await api.post(
            "/api/v1/ideas/batch",
            json={"ideas": [{"title": "N1"}, {"title": "N2", "productId": bad}]},
        )
        assert refused(r, 404, "not_found")
        r = await api.patch(f"/api/v1/ideas/{idea['id']}", json={"title": "C", "productId": bad})
        assert refused(r, 404, "not_found")
    assert (await theirs.api.get(PRODUCTS)).data == [foreign]
    assert (await api.get(PRODUCTS)).data == [{**mine, "ideaCount": 1}]
    detail = (await api.get(f"/api/v1/ideas/{idea['id']}")).data
    assert (detail["title"], detail["productId"]) == ("Kept", mine["id"])
    r = await api.post("/api/v1/ideas", json={"title": "Next"})
    assert r.data["ideaServiceId"] == "IDEA-2"  # the refused creates reserved no number
    r = await theirs.api.get("/api/v1/ideas", params={"product_id": mine["id"]})
    assert r.data == []
