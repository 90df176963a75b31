"""Removing a vote through the gateway: DELETE /ideas/{id}/vote (scope ideas:vote), the voter
by default the key, `voteCount` at once, 404 for a vote the voter does not have, `idea.voted`
with value 0 delivered to a subscriber as the document's `webhooks` section describes it."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import jsonschema

from tests.support.api import Api, Workspace
from tests.webhooks.support import Receiver, verify


def vote_path(idea_id: str) -> str:
    return f"/api/v1/ideas/{idea_id}/vote"


async def vote_count(api: Api, idea_id: str) -> int:
    return (await api.get(f"/api/v1/ideas/{idea_id}")).data["voteCount"]  # type: ignore[no-any-return]


async def test_unvote_removes_the_keys_or_the_named_voters_vote(ws: Workspace) -> None:
    """Without `voter` the key's vote goes; with it, that voter's; `voteCount` follows at
    once, in the answer and on the idea, and the breakdown no longer lists the voter."""
    api = ws.api
    idea = (await api.post("/api/v1/ideas", json={"title": "Unvote me"})).data
    assert (await api.post(vote_path(idea["id"]))).status == 200  # the key: +1
    await api.post(vote_path(idea["id"]), json={"voter": "ann@example.com", "value": -1})
    await api.post(vote_path(idea["id"]), json={"voter": "bob@example.com", "value": 1})
    assert await vote_count(api, idea["id"]) == 1
    r = await api.delete(vote_path(idea["id"]))
    assert r.status == 200, r.body
    assert r.data == {"ideaId": idea["id"], "voter": f"key:{ws.key_id}", "value": 0, "voteCount": 0}
    r = await api.delete(vote_path(idea["id"]), params={"voter": "ann@example.com"})
    assert r.data == {"ideaId": idea["id"], "voter": "ann@example.com", "value": 0, "voteCount": 1}
    assert await vote_count(api, idea["id"]) == 1
    votes = (await api.get(f"/api/v1/ideas/{idea['id']}/votes")).data
    assert [v["voter"] for v in votes["votes"]] == ["bob@example.com"]
    assert (votes["upvotes"], votes["downvotes"]) == (1, 0)
    # a removed vote may be cast again
    r = await api.post(vote_path(idea["id"]), json={"voter": "ann@example.com", "value": 1})
    assert r.data["voteCount"] == 2


async def test_unvote_without_a_vote_is_not_found(ws: Workspace, new_workspace: Any) -> None:
    """A voter without a vote on the idea (never voted, already removed), an unknown idea and
    another workspace's idea: 404 `not_found`, and no count changes."""
    api = ws.api
    idea = (await api.post("/api/v1/ideas", json={"title": "No vote"})).data
    await api.post(vote_path(idea["id"]), json={"voter": "ann@example.com"})
    theirs = await new_workspace()
    their_idea = (await theirs.api.post("/api/v1/ideas", json={"title": "Theirs"})).data
    await theirs.api.post(vote_path(their_idea["id"]), json={"voter": "ann@example.com"})
    await theirs.api.post(vote_path(their_idea["id"]))
    cases = [
        (idea["id"], None),
        (idea["id"], "bob@example.com"),
        (idea["id"], "ANN@example.com"),  # voters are exact strings
        (str(uuid.uuid4()), "ann@example.com"),
        (their_idea["id"], "ann@example.com"),
        (their_idea["id"], None),
        ("IDEA-x", None),
    ]
    for idea_id, voter in cases:
        r = await api.delete(vote_path(idea_id), params={"voter": voter})
        assert r.status == 404 and r.error["code"] == "not_found", (idea_id, voter, r.body)
    assert (
        await api.delete(vote_path(idea["id"]), params={"voter": "ann@example.com"})
    ).status == 200
    r = await api.delete(vote_path(idea["id"]), params={"voter": "ann@example.com"})
    assert r.status == 404 and r.error["code"] == "not_found"
    assert await vote_count(api, idea["id"]) == 0
    assert await vote_count(theirs.api, their_idea["id"]) == 2


async def test_unvote_query_is_validated_and_scoped(ws: Workspace, system: Any) -> None:
    """An empty or too long `voter`, or an unknown parameter: 400 naming it. A key without
    `ideas:vote` is refused 403 and the vote stays."""
    api = ws.api
    idea = (await api.post("/api/v1/ideas", json={"title": "Q"})).data
    await api.post(vote_path(idea["id"]))
    for params, field in [
        ({"voter": ""}, "voter"),
        ({"voter": "v" * 256}, "voter"),
        ({"x": "1"}, "x"),
    ]:
        r = await api.delete(vote_path(idea["id"]), params=params)
        assert r.status == 400 and r.error["field"] == field, r.body
    reader = api.with_key((await ws.new_key(system.database_url, scopes="ideas:read"))["key"])
    r = await reader.delete(vote_path(idea["id"]))
    assert r.status == 403 and r.error["code"] == "insufficient_scope"
    assert await vote_count(api, idea["id"]) == 1


async def test_unvote_is_delivered_as_idea_voted_with_value_zero(ws: Workspace) -> None:
    """A subscriber to `idea.voted` gets the removal: `vote.value` 0, the idea's new count, a
    payload valid against the document's `webhooks` schema, signed."""
    api = ws.api
    receiver = await Receiver().start()
    try:
        path = receiver.new_path()
        r = await api.post(
            "/api/v1/webhooks", json={"targetUrl": receiver.url(path), "events": ["idea.voted"]}
        )
        assert r.status == 200, r.body
        secret = r.data["secret"]
        idea = (await api.post("/api/v1/ideas", json={"title": "Delivered"})).data
        await api.post(vote_path(idea["id"]), json={"voter": "ann@example.com", "value": -1})
        assert (
            await api.delete(vote_path(idea["id"]), params={"voter": "ann@example.com"})
        ).status == 200
        deadline = time.monotonic() + 15
        while len(receiver.at(path)) < 2:
            assert time.monotonic() < deadline, [g.json for g in receiver.at(path)]
            await asyncio.sleep(0.1)
        got = sorted(receiver.at(path), key=lambda g: g.json["data"]["vote"]["value"])
        removed, cast = got[1], got[0]
        assert cast.json["data"]["vote"] == {"voter": "ann@example.com", "value": -1}
        assert removed.json["data"]["vote"] == {"voter": "ann@example.com", "value": 0}
        assert removed.json["data"]["idea"]["voteCount"] == 0
        assert removed.json["data"]["idea"]["id"] == idea["id"]
        assert verify(secret, removed)
        doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
        post = doc["webhooks"]["idea.voted"]["post"]
        schema = {
            **post["requestBody"]["content"]["application/json"]["schema"],
            "components": doc["components"],
        }
        for delivery in got:
            jsonschema.Draft202012Validator(schema).validate(delivery.json)
    finally:
        await receiver.stop()
