"""`ideasctl seed` and `ideasctl demo`: realistic data for every resource, deterministic."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import orjson

from tests.ideas.test_signals import FIGURES, all_signals, close, expected, linked
from tests.support.api import Api
from tests.support.processes import ROOT, System


async def ctl(system: System, *args: str) -> dict[str, Any]:
    env = {**os.environ, "DATABASE_URL": system.database_url}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.ctl",
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return orjson.loads(out)  # type: ignore[no-any-return]


async def titles(api: Api) -> list[tuple[str, str, str]]:
    out, cursor = [], None
    while True:
        r = await api.get("/api/v1/ideas", params={"limit": 100, "cursor": cursor, "order": "asc"})
        out += [(i["ideaServiceId"], i["title"], i["status"]) for i in r.data]
        cursor = r.json["pagination"]["nextCursor"]
        if cursor is None:
            return out


async def test_seed_fills_every_resource(system: System, new_workspace) -> None:
    """Seeded data shows through every read endpoint, and the same seed gives the same data."""
    a, b = await new_workspace(), await new_workspace()
    result = await ctl(system, "seed", "--workspace", a.id, "--ideas", "400", "--customers", "30")
    assert result["ideas"] == 400
    await ctl(system, "seed", "--workspace", b.id, "--ideas", "400", "--customers", "30")
    got = await titles(a.api)
    assert got == await titles(b.api) and len(got) > 380  # deleted ideas are left out
    statuses = {s for _, _, s in got}
    assert {"new", "shipped", "planned", "rejected"} <= statuses
    api = a.api
    info = (await api.get("/api/v1/workspace")).data
    assert info["ideasTotal"] == len(got)
    tags = (await api.get("/api/v1/tags")).data
    assert len(tags) >= 10 and sum(t["ideaCount"] for t in tags) > 0
    products = (await api.get("/api/v1/products")).data
    assert any(p["parentId"] for p in products) and any(p["parentId"] is None for p in products)
    members = (await api.get("/api/v1/members")).data
    assert {m["role"] for m in members} >= {"owner", "admin", "member"}
    stages = (await api.get("/api/v1/roadmap/stages")).data
    assert [s["slug"] for s in stages] == ["now", "next", "later"]
    seen: dict[str, int] = {}
    ideas = (await api.get("/api/v1/ideas", params={"limit": 100, "sort": "signalCount"})).data
    for idea in ideas[:40]:
        for sub in (
            "signals",
            "decisions",
            "evidence",
            "participants",
            "meetings",
            "support-tickets",
            "votes",
        ):
            r = await api.get(f"/api/v1/ideas/{idea['id']}/{sub}")
            assert r.status == 200
            data = r.data if sub != "votes" else r.data["votes"]
            seen[sub] = seen.get(sub, 0) + len(data)
    assert seen["signals"] > 0 and seen["decisions"] > 0 and seen["votes"] > 0
    scored = await api.get("/api/v1/ideas", params={"sort": "riceScore", "limit": 5})
    assert scored.data[0]["rice"]["score"] is not None
    if result["customers"]:  # the customers schema is part of this build
        linked = await api.get("/api/v1/ideas", params={"has_customers": "true"})
        assert 0 < linked.json["pagination"]["total"] < len(got)
        top = await api.get("/api/v1/ideas", params={"sort": "totalCustomerARR", "limit": 1})
        assert top.data[0]["totalCustomerARR"] > 0


async def test_seed_refuses_unknown_workspace(system: System) -> None:
    """seed with a workspace that does not exist exits 1 with a message."""
    env = {**os.environ, "DATABASE_URL": system.database_url}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.ctl",
        "seed",
        "--workspace",
        "00000000-0000-4000-8000-000000000000",
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    assert proc.returncode == 1 and b"not found" in err


async def test_demo_prints_a_working_key(system: System, api: Api) -> None:
    """demo creates a seeded pro workspace and a key that works."""
    out = await ctl(system, "demo", "--ideas", "50", "--customers", "5")
    assert set(out) == {"workspaceId", "key", "baseUrl"}
    demo = api.with_key(out["key"])
    info = (await demo.get("/api/v1/workspace")).data
    assert info["id"] == out["workspaceId"] and info["plan"] == "pro" and info["name"] == "Demo"
    assert info["ideasTotal"] > 40


async def test_seed_uses_the_tags_a_workspace_already_has(system: System, new_workspace) -> None:
    """Tag names are unique per workspace ignoring case: a seed into a workspace that made `UX`
    through the API puts the seed's `ux` ideas on that tag instead of failing, and adds the
    tags it lacks."""
    ws = await new_workspace()
    mine = (await ws.api.post("/api/v1/tags", json={"name": "UX", "color": "#000000"})).data
    await ctl(system, "seed", "--workspace", ws.id, "--ideas", "60", "--customers", "3")
    tags = (await ws.api.get("/api/v1/tags")).data
    names = [t["name"].lower() for t in tags]
    assert len(names) == len(set(names)) == 12 and "UX" in [t["name"] for t in tags]
    ux = next(t for t in tags if t["id"] == mine["id"])
    listed = await ws.api.get("/api/v1/ideas", params={"tag_id": mine["id"], "limit": 100})
    assert ux["ideaCount"] == listed.json["pagination"]["total"] > 0


async def test_seed_keeps_the_stages_a_workspace_chose(system: System, new_workspace) -> None:
    """The seed adds the default stages only to a workspace new to the ideas service, through
    its own storage function: a stage the workspace deleted through the API does not come back,
    and the positions stay 0, 1, 2, ... (the seed used to add Now, Next and Later again)."""
    ws = await new_workspace()
    stages = (await ws.api.get("/api/v1/roadmap/stages")).data
    later = next(s for s in stages if s["slug"] == "later")
    assert (await ws.api.delete(f"/api/v1/roadmap/stages/{later['id']}")).status == 200
    soon = (await ws.api.post("/api/v1/roadmap/stages", json={"name": "Soon"})).data
    await ctl(system, "seed", "--workspace", ws.id, "--ideas", "30", "--customers", "2")
    after = (await ws.api.get("/api/v1/roadmap/stages")).data
    assert [s["slug"] for s in after] == ["now", "next", "soon"]
    assert [s["position"] for s in after] == [0, 1, 2] and after[2]["id"] == soon["id"]
    staged = {
        i["roadmapStageId"] for i in (await ws.api.get("/api/v1/ideas", params={"limit": 100})).data
    }
    assert staged <= {s["id"] for s in after} | {None}


async def test_seed_writes_members_and_owners_as_the_api_does(
    system: System, new_workspace
) -> None:
    """The seed's members and decision owners are the routes' own: a seeded member renamed
    through PATCH /members is the new `decisionOwnerName` of every idea they own, and a seed
    into a workspace that added one of its members' e-mails (in another case) through the API
    keeps that member (no second one) and makes them the owner of the seed's ideas."""
    a = await new_workspace()
    await ctl(system, "seed", "--workspace", a.id, "--ideas", "200", "--customers", "3")
    members = (await a.api.get("/api/v1/members")).data
    assert len(members) == 12 and "owner" in [m["role"] for m in members]

    async def owned(api: Api, email: str) -> list[dict[str, Any]]:
        r = await api.get("/api/v1/ideas", params={"decision_owner": email, "limit": 100})
        return r.data  # type: ignore[no-any-return]

    busy = None  # a member who owns ideas
    for m in members:
        if await owned(a.api, m["email"]):
            busy = m
            break
    assert busy is not None
    before = await owned(a.api, busy["email"])
    assert before and {i["decisionOwnerName"] for i in before} == {busy["name"]}
    r = await a.api.patch(f"/api/v1/members/{busy['id']}", json={"name": "Renamed Owner"})
    assert r.status == 200, r.body
    after = await owned(a.api, busy["email"])
    assert sorted(i["id"] for i in after) == sorted(i["id"] for i in before)
    assert {i["decisionOwnerName"] for i in after} == {"Renamed Owner"}

    b = await new_workspace()
    mine = (
        await b.api.post(
            "/api/v1/members", json={"name": "Made Through The API", "email": busy["email"].upper()}
        )
    ).data
    await ctl(system, "seed", "--workspace", b.id, "--ideas", "200", "--customers", "3")
    members_b = (await b.api.get("/api/v1/members")).data
    assert len(members_b) == 12 and mine in members_b
    theirs = await owned(b.api, busy["email"])
    assert theirs and {i["decisionOwnerName"] for i in theirs} == {"Made Through The API"}


async def test_seed_writes_the_evidence_through_the_routes_storage(
    system: System, new_workspace
) -> None:
    """The seed writes signals, evidence, participants, meetings and tickets through the storage
    functions of the routes: each idea's signal figures and evidence count agree with its rows,
    its decision owner is its one owner participant, a seeded signal from a customer's e-mail or
    domain carries that customer as `autoLinkedCustomerId` and the customer is linked to the
    idea, a seeded ticket posted again through the API is updated in place, and deleting a
    seeded signal takes its part back."""
    ws = await new_workspace()
    await ctl(system, "seed", "--workspace", ws.id, "--ideas", "300", "--customers", "20")
    api = ws.api
    customers = (await api.get("/api/v1/customers", params={"limit": 100})).data
    assert len(customers) == 20
    by_email = {c["email"].lower(): c["id"] for c in customers}
    by_domain = {c["domain"].lower(): c["id"] for c in customers}
    owned = {}  # idea id -> the member whose e-mail the decision_owner filter finds
    for m in (await api.get("/api/v1/members")).data:
        r = await api.get("/api/v1/ideas", params={"decision_owner": m["email"], "limit": 100})
        assert r.json["pagination"]["nextCursor"] is None
        owned.update({i["id"]: m for i in r.data})
    ideas, cursor = [], None
    while True:
        r = await api.get("/api/v1/ideas", params={"limit": 100, "cursor": cursor})
        ideas += r.data
        if (cursor := r.json["pagination"]["nextCursor"]) is None:
            break
    seen = {"signals": 0, "matched": 0, "evidence": 0, "owners": 0, "crowds": 0, "tickets": 0}
    ticket: tuple[str, dict[str, Any]] | None = None
    twice: tuple[str, list[dict[str, Any]]] | None = None
    for idea in ideas:
        signals = await all_signals(api, idea["id"])
        assert close(expected(signals), {k: idea[k] for k in FIGURES}), idea["id"]
        seen["signals"] += len(signals)
        if len(signals) > 1:
            twice = (idea["id"], signals)
        for s in signals:
            email = s["userEmail"].lower()
            want = by_email.get(email) or by_domain.get(email.rpartition("@")[2])
            assert s["autoLinkedCustomerId"] == want, s
            if want is not None:
                seen["matched"] += 1
                assert want in await linked(api, idea["id"])
        evidence = (await api.get(f"/api/v1/ideas/{idea['id']}/evidence")).data
        assert idea["validation"]["evidenceCount"] == (len(evidence) or None)
        seen["evidence"] += len(evidence)
        people = (await api.get(f"/api/v1/ideas/{idea['id']}/participants")).data
        assert len({p["email"] for p in people}) == len(people)  # a member takes part once
        owners = [p for p in people if p["role"] == "owner"]
        if idea["id"] not in owned:
            assert owners == [] and idea["decisionOwnerName"] is None
        else:
            owner = owned[idea["id"]]
            assert [(p["name"], p["email"]) for p in owners] == [(owner["name"], owner["email"])]
            seen["owners"] += 1
            seen["crowds"] += len(people) == 3
        for p in people:
            assert (p["decidedAt"] is None) == (p["decision"] == "pending"), p
        tickets = (await api.get(f"/api/v1/ideas/{idea['id']}/support-tickets")).data
        seen["tickets"] += len(tickets)
        if tickets:
            ticket = (idea["id"], tickets[0])
    assert all(seen.values()), seen
    assert ticket is not None and twice is not None
    idea_id, t = ticket
    r = await api.post(
        f"/api/v1/ideas/{idea_id}/support-tickets",
        json={
            "platform": t["platform"],
            "externalId": t["externalId"],
            "subject": t["subject"],
            "status": "closed",
        },
    )
    assert r.status == 200, r.body
    assert r.data["id"] == t["id"] and r.data["status"] == "closed"
    assert r.data["customerEmail"] == t["customerEmail"]  # omitted fields keep their values
    idea_id, signals = twice
    gone = await api.delete(f"/api/v1/ideas/{idea_id}/signals/{signals[0]['id']}")
    assert gone.status == 200, gone.body
    detail = (await api.get(f"/api/v1/ideas/{idea_id}")).data
    assert close(expected(signals[1:]), {k: detail[k] for k in FIGURES})


async def test_seed_makes_end_users_who_vote_for_their_companies(
    system: System, new_workspace
) -> None:
    """The seed's end users belong to its customers and vote on their behalf: the users' voteCount
    is their +1 votes, each such vote links the user's customer to the idea with its ARR in
    totalCustomerARR (as the projection rebuilt from the links has it)."""
    import psycopg2

    from services.ideas.projection import rebuild

    ws = await new_workspace()
    result = await ctl(system, "seed", "--workspace", ws.id, "--ideas", "300", "--customers", "12")
    assert result["users"] >= 12 and result["userVotes"] > 0
    users = (await ws.api.get("/api/v1/users", params={"limit": 100})).data
    assert len(users) == result["users"] and all(u["customerId"] for u in users)
    assert sum(u["voteCount"] for u in users) > 0
    conn = psycopg2.connect(system.database_url)
    try:
        with conn.cursor() as cur:
            # every +1 of a user is behind a link of the user's customer to that idea
            cur.execute(
                "SELECT count(*) FROM ideas.votes v JOIN customers.users u"
                " ON u.workspace_id = v.workspace_id AND u.id = v.user_id"
                " WHERE v.workspace_id = %s AND v.value = 1 AND NOT EXISTS (SELECT 1"
                "  FROM customers.idea_links l WHERE l.workspace_id = v.workspace_id"
                "   AND l.idea_id = v.idea_id AND l.customer_id = u.customer_id)",
                (ws.id,),
            )
            assert cur.fetchone()[0] == 0
            cur.execute(
                "SELECT count(*) FROM customers.idea_links WHERE workspace_id = %s AND NOT direct",
                (ws.id,),
            )
            assert cur.fetchone()[0] > 0
            cur.execute(
                "SELECT id, total_customer_arr, customer_count FROM ideas.ideas"
                " WHERE workspace_id = %s ORDER BY id",
                (ws.id,),
            )
            before = cur.fetchall()
        counts = rebuild(conn, ws.id)
        assert counts["ideasUpdated"] == 0 and counts["ideasCleared"] == 0
        with conn.cursor() as cur:
            cur.execute(
                "SELECT id, total_customer_arr, customer_count FROM ideas.ideas"
                " WHERE workspace_id = %s ORDER BY id",
                (ws.id,),
            )
            assert cur.fetchall() == before
    finally:
        conn.close()


async def test_seed_comments_keep_their_ideas_counts(system: System, new_workspace) -> None:
    """The seed's comments, read through the API: each seeded idea's commentCount is the number
    of its listed comments that are not internal, and they include comments by the seed's end
    users (author type user, id and name of a listed user), internal notes by the workspace's
    key and replies to top-level comments of the same idea."""
    ws = await new_workspace()
    result = await ctl(system, "seed", "--workspace", ws.id, "--ideas", "200", "--customers", "8")
    assert result["comments"] > 0
    users = {
        u["id"]: u["name"] for u in (await ws.api.get("/api/v1/users", params={"limit": 100})).data
    }
    ideas, cursor = [], None
    while True:
        r = await ws.api.get("/api/v1/ideas", params={"limit": 100, "cursor": cursor})
        ideas += r.data
        if (cursor := r.json["pagination"]["nextCursor"]) is None:
            break
    listed: list[dict[str, Any]] = []
    for idea in ideas:
        mine, cursor = [], None
        while True:
            r = await ws.api.get(
                f"/api/v1/ideas/{idea['id']}/comments", params={"limit": 100, "cursor": cursor}
            )
            assert r.status == 200, r.body
            mine += r.data
            if (cursor := r.json["pagination"]["nextCursor"]) is None:
                break
        assert idea["commentCount"] == sum(not c["internal"] for c in mine), idea["id"]
        tops = {c["id"] for c in mine if c["parentId"] is None}
        assert all(c["parentId"] in tops for c in mine if c["parentId"] is not None)
        assert all(c["createdAt"] >= idea["createdAt"] for c in mine)
        listed += mine
    assert 0 < len(listed) <= result["comments"]  # the rest are on deleted ideas
    by_users = [c for c in listed if c["author"]["type"] == "user"]
    assert by_users and all(users[c["author"]["id"]] == c["author"]["name"] for c in by_users)
    assert any(c["internal"] for c in listed) and any(c["parentId"] for c in listed)
    keys = {c["author"]["id"] for c in listed if c["author"]["type"] == "key"}
    assert keys == {ws.key_id}
