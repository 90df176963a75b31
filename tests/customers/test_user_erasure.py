"""Export and erasure of an end user, through the gateway: the export lists the
user's votes, comments, the ideas they asked for and the signals with their e-mail; DELETE
removes exactly that (voteCount and company links follow, authorship and signal contacts are
cleared, the delivery log's payloads are redacted), the user is 404 everywhere after, and the
e-mail can be used again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg2
import pytest

from tests.customers.conftest import idea_arr, link, new_customer, new_idea, poll
from tests.customers.test_company_demand import linked, vote
from tests.customers.test_users import USERS, new_user
from tests.support.api import Api, Workspace
from tests.support.processes import System
from tests.webhooks.support import Receiver


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = await Receiver().start()
    yield r
    await r.stop()


async def deliveries_carrying(system: System, ws_id: str, *texts: str) -> int:
    """How many of the workspace's stored payloads contain one of the texts (any case)."""
    conn = psycopg2.connect(system.database_url)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM webhooks.deliveries WHERE workspace_id = %s"
                " AND lower(convert_from(body, 'UTF8')) LIKE ANY(%s)",
                (ws_id, [f"%{t.lower()}%" for t in texts]),
            )
            return int(cur.fetchone()[0])
    finally:
        conn.close()


async def test_export_lists_what_erasure_removes(
    ws: Workspace, system: System, receiver: Receiver, new_workspace: Any
) -> None:
    """Votes, ideas asked for, signals with the e-mail: listed by the export, then removed or
    cleared by DELETE, with voteCount, links, payloads following; nothing of another user or
    workspace is touched."""
    api = ws.api
    hook = receiver.new_path()
    r = await api.post(
        "/api/v1/webhooks",
        json={"targetUrl": receiver.url(hook), "events": ["idea.signal_detected", "idea.voted"]},
    )
    assert r.status == 200, r.body
    acme = await new_customer(api, arr=500)
    dana = await new_user(
        api, name="Dana Quill", email="Dana.Q@acme.example", customerId=acme["id"]
    )
    lee = await new_user(api, name="Lee", email="lee@acme.example", customerId=acme["id"])
    only, shared, down = await new_idea(api), await new_idea(api), await new_idea(api)
    await vote(api, only["id"], dana["id"])
    await vote(api, shared["id"], dana["id"])
    await vote(api, shared["id"], lee["id"])
    await vote(api, down["id"], dana["id"], -1)
    asked = (await api.post("/api/v1/ideas", json={"title": "Asked", "userId": dana["id"]})).data
    r = await api.post(
        f"/api/v1/ideas/{only['id']}/signals",
        json={
            "platform": "slack",
            "content": "write to dana.q@acme.example please",
            "userEmail": "DANA.Q@acme.example",
            "userName": "Dana Quill",
            "userId": "U1",
        },
    )
    assert r.status == 200, r.body
    her_signal = r.data
    r = await api.post(
        f"/api/v1/ideas/{only['id']}/signals",
        json={"platform": "slack", "userEmail": "lee@acme.example", "userName": "Lee"},
    )
    his_signal = r.data
    assert await poll(lambda: idea_arr(api, only["id"]), 500) == 500
    assert await poll(lambda: idea_arr(api, asked["id"]), 500) == 500
    # the payloads that carry her e-mail and name are in the log
    deadline = asyncio.get_running_loop().time() + 10
    while await deliveries_carrying(system, ws.id, "dana.q@acme.example") < 1:
        assert asyncio.get_running_loop().time() < deadline, "no delivery carries the e-mail"
        await asyncio.sleep(0.2)
    other = await new_workspace()
    twin = await new_user(other.api, name="Dana Quill", email="dana.q@acme.example")

    r = await api.get(f"{USERS}/{dana['id']}/export")
    assert r.status == 200, r.body
    export = r.data
    assert list(export) == ["user", "votes", "comments", "ideas", "signals"]
    assert export["user"]["id"] == dana["id"] and export["user"]["voteCount"] == 3
    assert sorted((v["ideaId"], v["value"]) for v in export["votes"]) == sorted(
        [(only["id"], 1), (shared["id"], 1), (down["id"], -1), (asked["id"], 1)]
    )
    assert [v["createdAt"] for v in export["votes"]] == sorted(
        v["createdAt"] for v in export["votes"]
    )
    assert [i["id"] for i in export["ideas"]] == [asked["id"]]
    assert [s["id"] for s in export["signals"]] == [her_signal["id"]]
    assert export["signals"][0]["ideaId"] == only["id"]
    assert export["comments"] == []

    r = await api.delete(f"{USERS}/{dana['id']}")
    assert r.status == 200, r.body
    assert r.data == {
        "id": dana["id"],
        "deleted": True,
        "votesRemoved": len(export["votes"]),
        "commentsRemoved": len(export["comments"]),
    }
    # votes gone, each idea's voteCount following; her company links go, Lee's stays
    counts = {
        i: (await api.get(f"/api/v1/ideas/{i}")).data["voteCount"]
        for i in (only["id"], shared["id"], down["id"], asked["id"])
    }
    assert counts == {only["id"]: 0, shared["id"]: 1, down["id"]: 0, asked["id"]: 0}
    assert await poll(lambda: idea_arr(api, only["id"]), None) is None
    assert await poll(lambda: idea_arr(api, asked["id"]), None) is None
    assert await linked(api, shared["id"]) == [acme["id"]]
    assert await idea_arr(api, shared["id"]) == 500
    # the idea she asked for stays, without author
    detail = (await api.get(f"/api/v1/ideas/{asked['id']}")).data
    assert detail["sourceUserId"] is None and detail["sourceUserName"] is None
    # her signal's contact fields are cleared, his are not
    signals = {s["id"]: s for s in (await api.get(f"/api/v1/ideas/{only['id']}/signals")).data}
    assert [signals[her_signal["id"]][k] for k in ("userId", "userName", "userEmail")] == [
        None,
        None,
        None,
    ]
    assert signals[his_signal["id"]]["userEmail"] == "lee@acme.example"
    # the delivery log carries neither her e-mail nor her name
    assert await deliveries_carrying(system, ws.id, "dana.q@acme.example", "Dana Quill") == 0
    # she is 404 everywhere
    for method, path, body in (
        ("GET", f"{USERS}/{dana['id']}", None),
        ("GET", f"{USERS}/{dana['id']}/export", None),
        ("PATCH", f"{USERS}/{dana['id']}", {"name": "x"}),
        ("DELETE", f"{USERS}/{dana['id']}", None),
        ("POST", f"/api/v1/ideas/{only['id']}/vote", {"userId": dana["id"]}),
        ("POST", "/api/v1/ideas", {"title": "x", "userId": dana["id"]}),
    ):
        r = await api.request(method, path, json=body)
        assert r.status == 404 and r.error["code"] == "not_found", (method, path, r.body)
    assert [u["id"] for u in (await api.get(USERS)).data] == [lee["id"]]
    # the e-mail is free again; the other workspace's twin is untouched
    again = await new_user(api, name="Dana Quill", email="dana.q@acme.example")
    assert again["id"] != dana["id"] and again["voteCount"] == 0
    assert (await other.api.get(f"{USERS}/{twin['id']}")).status == 200


async def test_the_payloads_of_the_automation_hook_lose_the_authors_name(
    ws: Workspace, system: System
) -> None:
    """An idea asked for by a user goes to the `new_idea` hooks with the user's name as
    `authorName`; the erasure leaves it "" in the stored payload (the hook's target refuses
    every attempt: the delivery row and its payload exist all the same)."""
    api = ws.api
    r = await api.post(
        "/api/v1/automation/webhooks/subscribe", json={"hookUrl": "https://127.0.0.1:9/h"}
    )
    assert r.status == 201, r.body
    user = await new_user(api, name="Ozymandias Kingsley")
    await api.post("/api/v1/ideas", json={"title": "Statue", "userId": user["id"]})
    deadline = asyncio.get_running_loop().time() + 10
    while await deliveries_carrying(system, ws.id, "Ozymandias Kingsley") < 1:
        assert asyncio.get_running_loop().time() < deadline, "no delivery carries the name"
        await asyncio.sleep(0.2)
    assert (await api.delete(f"{USERS}/{user['id']}")).status == 200
    assert await deliveries_carrying(system, ws.id, "Ozymandias Kingsley") == 0
    conn = psycopg2.connect(system.database_url)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT convert_from(body, 'UTF8')::json->>'authorName' FROM webhooks.deliveries"
                " WHERE workspace_id = %s"
                " AND convert_from(body, 'UTF8')::json->>'title' = 'Statue'",
                (ws.id,),
            )
            assert [r[0] for r in cur.fetchall()] == [""]
    finally:
        conn.close()


async def delivery_log(api: Api, hook_id: str) -> list[dict[str, Any]]:
    """Every delivery of the subscription with its payload, read through the API."""
    out, cursor = [], None
    while True:
        r = await api.get(
            f"/api/v1/webhooks/{hook_id}/deliveries", params={"limit": 100, "cursor": cursor}
        )
        assert r.status == 200, r.body
        for d in r.data:
            detail = await api.get(f"/api/v1/webhooks/{hook_id}/deliveries/{d['id']}")
            assert detail.status == 200, detail.body
            out.append(detail.data)
        if (cursor := r.json["pagination"]["nextCursor"]) is None:
            return out


async def test_the_payloads_of_comment_events_lose_the_authors_name(
    ws: Workspace, receiver: Receiver
) -> None:
    """A comment by a user goes to the `comment.*` subscribers with the user's name as its
    author's `name`; after the erasure the delivery log, read through the API, carries the
    name in no payload: the `comment.created` payload's author name is null (its id and the
    body stay), and the `comment.deleted` the erasure itself emits does not bring it back."""
    api = ws.api
    r = await api.post(
        "/api/v1/webhooks",
        json={
            "targetUrl": receiver.url(receiver.new_path()),
            "events": ["comment.created", "comment.deleted"],
        },
    )
    assert r.status == 200, r.body
    hook = r.data["id"]
    user = await new_user(api, name="Philippa Quartermaine")
    idea = await new_idea(api)
    r = await api.post(
        f"/api/v1/ideas/{idea['id']}/comments",
        json={"body": "Please add this", "userId": user["id"]},
    )
    assert r.status == 200, r.body
    said = r.data
    assert said["author"] == {"type": "user", "id": user["id"], "name": "Philippa Quartermaine"}
    deadline = asyncio.get_running_loop().time() + 10
    while not [d for d in await delivery_log(api, hook) if d["eventType"] == "comment.created"]:
        assert asyncio.get_running_loop().time() < deadline, "no comment.created delivery"
        await asyncio.sleep(0.2)
    before = await delivery_log(api, hook)
    assert "Philippa Quartermaine" in str(before[0]["payload"])

    r = await api.delete(f"{USERS}/{user['id']}")
    assert r.status == 200, r.body
    assert r.data["commentsRemoved"] == 1
    deadline = asyncio.get_running_loop().time() + 10
    while len(log := await delivery_log(api, hook)) < 2:  # the erasure's comment.deleted
        assert asyncio.get_running_loop().time() < deadline, [d["eventType"] for d in log]
        await asyncio.sleep(0.2)
    assert sorted(d["eventType"] for d in log) == ["comment.created", "comment.deleted"]
    for d in log:
        assert "Quartermaine" not in str(d["payload"]), d
        comment = d["payload"]["data"]["comment"]
        assert comment["id"] == said["id"] and comment["body"] == "Please add this"
        assert comment["author"] == {"type": "user", "id": user["id"], "name": None}


async def test_an_erased_users_vote_does_not_come_back_with_an_unmerge(api: Api) -> None:
    """A vote a merge moved and recorded is not given back by the unmerge once its user was
    erased; a direct link of the user's customer survives the erasure."""
    acme = await new_customer(api, arr=8)
    user = await new_user(api, customerId=acme["id"])
    dup, primary = await new_idea(api), await new_idea(api)
    await vote(api, dup["id"], user["id"])
    await link(api, primary["id"], acme["id"])
    assert (
        await api.post(f"/api/v1/ideas/{dup['id']}/merge", json={"intoId": primary["id"]})
    ).status == 200
    assert (await api.delete(f"{USERS}/{user['id']}")).status == 200
    assert (await api.post(f"/api/v1/ideas/{dup['id']}/unmerge")).status == 200
    assert (await api.get(f"/api/v1/ideas/{dup['id']}")).data["voteCount"] == 0
    assert (await api.get(f"/api/v1/ideas/{dup['id']}/votes")).data["votes"] == []
    await asyncio.sleep(0.5)
    assert await linked(api, primary["id"]) == [acme["id"]]
    assert await linked(api, dup["id"]) == []
