"""Merge and unmerge of duplicate ideas through the gateway (docs/ideas.md, duplicates): votes
counted once, signals and counters moved, customer links following by event, the exact inverse,
chains, errors, isolation and events."""

from __future__ import annotations

import csv
import io
import uuid
from typing import Any

import orjson
import psycopg2

from tests.customers.conftest import idea_arr, link, new_customer, poll
from tests.ideas.conftest import Tap
from tests.support.api import Api, Workspace
from tests.support.processes import System

I = "/api/v1/ideas"


async def new_idea(api: Api, title: str | None = None, **fields: Any) -> dict[str, Any]:
    r = await api.post(I, json={"title": title or f"Idea {uuid.uuid4().hex[:8]}", **fields})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def vote(api: Api, idea_id: str, voter: str, value: int) -> None:
    r = await api.post(f"{I}/{idea_id}/vote", json={"voter": voter, "value": value})
    assert r.status == 200, r.body


async def votes(api: Api, idea_id: str) -> dict[str, int]:
    r = await api.get(f"{I}/{idea_id}/votes")
    return {v["voter"]: v["value"] for v in r.data["votes"]}


async def merge(api: Api, dup: str, into: str, status: int = 200) -> Any:
    r = await api.post(f"{I}/{dup}/merge", json={"intoId": into})
    assert r.status == status, r.body
    return r.data if status == 200 else r.error


async def unmerge(api: Api, dup: str, status: int = 200) -> Any:
    r = await api.post(f"{I}/{dup}/unmerge")
    assert r.status == status, r.body
    return r.data if status == 200 else r.error


async def signal(api: Api, title: str, source: str) -> None:
    """A Signal on the idea titled `title`: the automation API's duplicate rule records one."""
    r = await api.post("/api/v1/automation/ideas", json={"title": title, "source": source})
    assert r.status == 200 and r.json["status"] == "skipped", r.body


def set_counts(system: System, idea_id: str, public: int, requests: int) -> None:
    conn = psycopg2.connect(system.database_url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute(
                "UPDATE ideas.ideas SET public_vote_count = %s, request_count = %s WHERE id = %s",
                (public, requests, idea_id),
            )
    finally:
        conn.close()


async def test_merge_moves_votes_signals_and_counts_then_unmerge_restores(
    api: Api, system: System
) -> None:
    """Every voter counts once on the primary; signals and counters move; unmerge gives back
    the duplicate's state exactly, keeping a vote cast on the primary since."""
    primary = await new_idea(api)
    dup = await new_idea(api)
    await api.patch(f"{I}/{dup['id']}", json={"status": "under_review"})
    await vote(api, dup["id"], "ann", 1)
    await vote(api, dup["id"], "bob", -1)
    await vote(api, dup["id"], "cid", 1)
    await vote(api, primary["id"], "ann", -1)  # ann voted on both: the primary's vote counts
    await vote(api, primary["id"], "dan", 1)
    await signal(api, dup["title"], "slack")
    await signal(api, dup["title"], "discord")
    await signal(api, primary["title"], "slack")
    set_counts(system, dup["id"], 3, 5)
    set_counts(system, primary["id"], 10, 1)
    before = (await api.get(f"{I}/{dup['id']}")).data

    out = await merge(api, dup["id"], primary["id"])
    p, d = out["primary"], out["duplicate"]
    assert d["status"] == "duplicate" and d["mergedIntoId"] == primary["id"]
    assert d["closureCategory"] == "duplicate" and d["decidedAt"] is not None
    assert d["voteCount"] == 0 and d["signalCount"] == 0 and d["uniqueSourceCount"] == 0
    assert (d["publicVoteCount"], d["requestCount"]) == (0, 0)
    assert p["mergedIntoId"] is None
    assert await votes(api, primary["id"]) == {"ann": -1, "bob": -1, "cid": 1, "dan": 1}
    assert p["voteCount"] == 0 and await votes(api, dup["id"]) == {}
    assert p["signalCount"] == 3 and p["uniqueSourceCount"] == 2
    assert (p["publicVoteCount"], p["requestCount"]) == (13, 6)
    keys = list(d)
    assert keys == list(before) and keys[keys.index("roadmapStageId") + 1] == "mergedIntoId"
    assert (await api.get(f"{I}/{dup['id']}")).data == d
    decisions = (await api.get(f"{I}/{dup['id']}/decisions")).data
    last = decisions[-1]
    assert [x["eventType"] for x in decisions] == ["status_changed", "merged"]
    assert (
        last["previousStatus"],
        last["newStatus"],
        last["relatedIdeaId"],
        last["closureCategory"],
    ) == ("under_review", "duplicate", primary["id"], "duplicate")
    signals = (await api.get(f"{I}/{primary['id']}/signals")).data
    assert len(signals) == 3

    # Later: bob votes on the primary (his vote stays), eve votes on the primary.
    await vote(api, primary["id"], "bob", 1)
    await vote(api, primary["id"], "eve", 1)
    await signal(api, primary["title"], "teams")

    out = await unmerge(api, dup["id"])
    p, d = out["primary"], out["duplicate"]
    assert (d["status"], d["mergedIntoId"], d["decidedAt"], d["closureCategory"]) == (
        "under_review",
        None,
        before["decidedAt"],
        before["closureCategory"],
    )
    assert await votes(api, dup["id"]) == {"ann": 1, "bob": -1, "cid": 1}
    assert d["voteCount"] == 1
    assert await votes(api, primary["id"]) == {"ann": -1, "bob": 1, "dan": 1, "eve": 1}
    assert p["voteCount"] == 2
    assert (d["signalCount"], d["uniqueSourceCount"]) == (2, 2)
    assert (p["signalCount"], p["uniqueSourceCount"]) == (2, 2)
    assert (d["publicVoteCount"], d["requestCount"]) == (3, 5)
    assert (p["publicVoteCount"], p["requestCount"]) == (10, 1)
    last = (await api.get(f"{I}/{dup['id']}/decisions")).data[-1]
    assert (last["eventType"], last["relatedIdeaId"], last["newStatus"]) == (
        "unmerged",
        primary["id"],
        "under_review",
    )
    # And it can be merged again.
    again = await merge(api, dup["id"], primary["id"])
    assert again["primary"]["voteCount"] == 3  # ann -1, bob 1, cid 1, dan 1, eve 1


async def test_links_follow_the_merge_and_leave_with_the_unmerge(api: Api) -> None:
    """The duplicate's customers are linked to the primary (ARR within 1 s); the unmerge
    removes only the links the merge added."""
    primary, dup = await new_idea(api), await new_idea(api)
    c1 = await new_customer(api, arr=100)
    c2 = await new_customer(api, arr=20)
    c3 = await new_customer(api, arr=3)
    c4 = await new_customer(api, arr=4000)
    await link(api, dup["id"], c1["id"])
    await link(api, dup["id"], c2["id"])
    await link(api, primary["id"], c2["id"])
    await link(api, primary["id"], c3["id"])
    assert await poll(lambda: idea_arr(api, primary["id"]), 23) == 23
    await merge(api, dup["id"], primary["id"])
    assert await poll(lambda: idea_arr(api, primary["id"]), 123) == 123
    assert await idea_arr(api, dup["id"]) == 120  # the duplicate keeps its own links
    linked = (await api.get(f"{I}/{primary['id']}/customers")).data
    assert sorted(c["id"] for c in linked) == sorted([c1["id"], c2["id"], c3["id"]])
    await link(api, primary["id"], c4["id"])  # linked directly after the merge: stays
    assert await poll(lambda: idea_arr(api, primary["id"]), 4123) == 4123
    await unmerge(api, dup["id"])
    assert await poll(lambda: idea_arr(api, primary["id"]), 4023) == 4023
    linked = (await api.get(f"{I}/{primary['id']}/customers")).data
    assert sorted(c["id"] for c in linked) == sorted([c2["id"], c3["id"], c4["id"]])
    # ARR changes still reach the primary through its remaining links, not c1.
    await api.patch(f"/api/v1/customers/{c1['id']}", json={"arr": 1})
    await api.patch(f"/api/v1/customers/{c3['id']}", json={"arr": 5})
    assert await poll(lambda: idea_arr(api, primary["id"]), 4025) == 4025
    assert await poll(lambda: idea_arr(api, dup["id"]), 21) == 21
    # Merged again: c1 follows again.
    await merge(api, dup["id"], primary["id"])
    assert await poll(lambda: idea_arr(api, primary["id"]), 4026) == 4026


async def test_a_link_made_to_a_merged_duplicate_follows_up_the_chain(api: Api) -> None:
    """A customer linked to the duplicate after its merge was applied is linked to the primary
    as well (and on to the primary's primary), as the merge's: the unmerges remove it again."""
    a, b, c = await new_idea(api), await new_idea(api), await new_idea(api)
    early = await new_customer(api, arr=1)
    await link(api, a["id"], early["id"])
    await merge(api, a["id"], b["id"])
    assert await poll(lambda: idea_arr(api, b["id"]), 1) == 1  # the merge was applied
    await merge(api, b["id"], c["id"])
    assert await poll(lambda: idea_arr(api, c["id"]), 1) == 1
    late = await new_customer(api, arr=40)
    await link(api, a["id"], late["id"])  # to the duplicate of the duplicate
    assert await poll(lambda: idea_arr(api, b["id"]), 41) == 41
    assert await poll(lambda: idea_arr(api, c["id"]), 41) == 41
    assert await idea_arr(api, a["id"]) == 41  # the duplicate keeps its own links
    await unmerge(api, b["id"])
    assert await poll(lambda: idea_arr(api, c["id"]), None) is None  # no customer left
    await unmerge(api, a["id"])
    assert await poll(lambda: idea_arr(api, b["id"]), None) is None
    linked = (await api.get(f"{I}/{a['id']}/customers")).data
    assert sorted(x["id"] for x in linked) == sorted([early["id"], late["id"]])


async def test_chains_and_conflicts(api: Api) -> None:
    """A into B, then B into C: A cannot be unmerged until B is; merged or deleted ideas
    cannot take part in a merge."""
    a, b, c, gone = [await new_idea(api) for _ in range(4)]
    await vote(api, a["id"], "x", 1)
    await merge(api, a["id"], b["id"])
    assert (await merge(api, a["id"], c["id"], 409))["code"] == "conflict"  # already merged
    assert (await merge(api, c["id"], a["id"], 409))["code"] == "conflict"  # primary merged
    out = await merge(api, b["id"], c["id"])  # B into C
    assert out["primary"]["voteCount"] == 1  # x's vote came along
    assert (await unmerge(api, a["id"], 409))["code"] == "conflict"  # its primary is merged
    await unmerge(api, b["id"])
    assert (await api.get(f"{I}/{b['id']}")).data["voteCount"] == 1
    out = await unmerge(api, a["id"])
    assert out["duplicate"]["voteCount"] == 1 and out["primary"]["voteCount"] == 0
    assert (await api.get(f"{I}/{c['id']}")).data["voteCount"] == 0
    assert (await unmerge(api, a["id"], 409))["code"] == "conflict"  # not merged
    await api.delete(f"{I}/{gone['id']}")
    assert (await merge(api, gone["id"], a["id"], 409))["code"] == "conflict"
    assert (await merge(api, a["id"], gone["id"], 409))["code"] == "conflict"


async def test_validation_and_not_found(api: Api, new_workspace: Any) -> None:
    idea, other = await new_idea(api), await new_idea(api)
    err = await merge(api, idea["id"], idea["id"], 400)
    assert (err["code"], err["field"]) == ("validation_error", "intoId")
    for body in ({}, {"intoId": "nope"}, {"intoId": other["id"], "extra": 1}):
        r = await api.post(f"{I}/{idea['id']}/merge", json=body)
        assert r.status == 400 and r.error["code"] == "validation_error", r.body
    assert (await merge(api, idea["id"], str(uuid.uuid4()), 404))["code"] == "not_found"
    assert (await merge(api, str(uuid.uuid4()), idea["id"], 404))["code"] == "not_found"
    assert (await unmerge(api, str(uuid.uuid4()), 404))["code"] == "not_found"
    r = await api.post(f"{I}/not-a-uuid/merge", json={"intoId": idea["id"]})
    assert r.status == 404
    # Another workspace's ideas are not found, and nothing changes.
    ws2: Workspace = await new_workspace()
    theirs = await new_idea(ws2.api)
    assert (await merge(api, idea["id"], theirs["id"], 404))["code"] == "not_found"
    assert (await merge(ws2.api, theirs["id"], idea["id"], 404))["code"] == "not_found"
    await merge(api, idea["id"], other["id"])
    assert (await unmerge(ws2.api, idea["id"], 404))["code"] == "not_found"
    assert (await ws2.api.get(f"{I}/{theirs['id']}")).data["mergedIntoId"] is None


async def test_scope_needed(ws: Workspace, system: System) -> None:
    idea, other = await new_idea(ws.api), await new_idea(ws.api)
    key = await ws.new_key(system.database_url, scopes="ideas:read,ideas:vote")
    reader = ws.api.with_key(key["key"])
    for r in (
        await reader.post(f"{I}/{idea['id']}/merge", json={"intoId": other["id"]}),
        await reader.post(f"{I}/{idea['id']}/unmerge"),
    ):
        assert r.status == 403 and r.error["code"] == "insufficient_scope"


async def test_events_of_merge_and_unmerge(api: Api, tap: Tap) -> None:
    """idea.status_changed and idea.updated for the duplicate, idea.updated for the primary."""
    primary, dup = await new_idea(api), await new_idea(api)
    await tap.take(2)  # idea.created twice
    out = await merge(api, dup["id"], primary["id"])
    events = await tap.take(3)
    got = sorted((e["type"], e["data"]["idea"]["id"]) for e in events)
    assert got == sorted(
        [
            ("idea.status_changed", dup["id"]),
            ("idea.updated", dup["id"]),
            ("idea.updated", primary["id"]),
        ]
    )
    changed = next(e for e in events if e["type"] == "idea.status_changed")
    assert changed["data"]["previousStatus"] == "new"
    assert changed["data"]["idea"]["mergedIntoId"] == primary["id"]
    assert changed["data"]["idea"]["status"] == out["duplicate"]["status"] == "duplicate"
    await unmerge(api, dup["id"])
    events = await tap.take(3)
    got = sorted((e["type"], e["data"]["idea"]["id"]) for e in events)
    assert got == sorted(
        [
            ("idea.status_changed", dup["id"]),
            ("idea.updated", dup["id"]),
            ("idea.updated", primary["id"]),
        ]
    )
    changed = next(e for e in events if e["type"] == "idea.status_changed")
    assert changed["data"]["previousStatus"] == "duplicate"
    assert changed["data"]["idea"]["status"] == "new"
    assert changed["data"]["idea"]["mergedIntoId"] is None


async def test_merged_into_id_in_lists_and_exports(api: Api) -> None:
    primary, dup = await new_idea(api), await new_idea(api)
    await merge(api, dup["id"], primary["id"])
    listed = {i["id"]: i for i in (await api.get(I, params={"limit": 100})).data}
    assert listed[dup["id"]]["mergedIntoId"] == primary["id"]
    assert listed[primary["id"]]["mergedIntoId"] is None
    r = await api.get("/api/v1/export/ideas", params={"format": "json"})
    assert r.status == 200, r.body
    rows = {i["id"]: i for i in orjson.loads(r.body)}
    assert rows[dup["id"]]["mergedIntoId"] == primary["id"]
    r = await api.get("/api/v1/export/ideas", params={"format": "csv"})
    header, *lines = csv.reader(io.StringIO(r.body.decode()))
    at = header.index("mergedIntoId")
    assert header[at - 1] == "roadmapStageId"
    assert any(line[0] == dup["id"] and line[at] == primary["id"] for line in lines)
