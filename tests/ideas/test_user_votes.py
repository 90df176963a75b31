"""Votes and ideas on an end user's behalf, through the gateway: `userId` on a
vote, on the vote removal and on a create; the voter `user:<userId>`, the breakdown's `userId`,
the user's `voteCount`, and the refusals (both voter and userId, an unknown user, a voter that
pretends to be a user)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.customers.conftest import new_idea
from tests.customers.test_users import new_user
from tests.support.api import Api


async def vote(api: Api, idea_id: str, **body: Any) -> Any:
    return await api.post(f"/api/v1/ideas/{idea_id}/vote", json=body)


async def vote_count(api: Api, user_id: str) -> int:
    r = await api.get(f"/api/v1/users/{user_id}")
    assert r.status == 200, r.body
    return r.data["voteCount"]  # type: ignore[no-any-return]


async def test_a_vote_on_behalf_of_a_user_is_theirs(api: Api) -> None:
    """A user created a moment ago votes at once: voter `user:<id>`, the breakdown names the
    user (other voters null), and the user's voteCount counts the ideas voted +1 now."""
    user = await new_user(api)
    ideas = [await new_idea(api) for _ in range(3)]
    r = await vote(api, ideas[0]["id"], userId=user["id"])
    assert r.status == 200, r.body
    assert r.data == {
        "ideaId": ideas[0]["id"],
        "voter": f"user:{user['id']}",
        "value": 1,
        "voteCount": 1,
    }
    assert (await vote(api, ideas[0]["id"], voter="ada")).status == 200
    assert (await vote(api, ideas[1]["id"], userId=user["id"], value=1)).status == 200
    assert (await vote(api, ideas[2]["id"], userId=user["id"], value=-1)).status == 200
    assert await vote_count(api, user["id"]) == 2
    votes = (await api.get(f"/api/v1/ideas/{ideas[0]['id']}/votes")).data["votes"]
    by_voter = {v["voter"]: v for v in votes}
    assert by_voter[f"user:{user['id']}"]["userId"] == user["id"]
    assert by_voter["ada"]["userId"] is None
    assert list(by_voter["ada"]) == ["voter", "value", "createdAt", "userId"]
    # a second vote replaces the first: -1 now, so one idea less
    r = await vote(api, ideas[1]["id"], userId=user["id"], value=-1)
    assert r.data["voteCount"] == -1
    assert await vote_count(api, user["id"]) == 1
    listed = (await api.get("/api/v1/users")).data
    assert [u["voteCount"] for u in listed] == [1]


async def test_removing_a_users_vote(api: Api) -> None:
    """DELETE /vote?userId= removes the user's vote (value 0); again, or for an unknown user,
    404; voter and userId together 400 on userId."""
    user, idea = await new_user(api), await new_idea(api)
    await vote(api, idea["id"], userId=user["id"])
    path = f"/api/v1/ideas/{idea['id']}/vote"
    r = await api.delete(path, params={"userId": user["id"]})
    assert r.status == 200, r.body
    assert r.data == {
        "ideaId": idea["id"],
        "voter": f"user:{user['id']}",
        "value": 0,
        "voteCount": 0,
    }
    assert await vote_count(api, user["id"]) == 0
    for params in ({"userId": user["id"]}, {"userId": str(uuid.uuid4())}):
        r = await api.delete(path, params=params)
        assert r.status == 404 and r.error["code"] == "not_found", r.body
    r = await api.delete(path, params={"userId": user["id"], "voter": "ada"})
    assert r.status == 400 and r.error["field"] == "userId", r.body
    r = await api.delete(path, params={"userId": "not-a-uuid"})
    assert r.status == 400 and r.error["field"] == "userId", r.body


async def test_vote_refusals(api: Api, new_workspace: Any) -> None:
    """Both voter and userId: 400 on userId; an unknown user or another workspace's: 404; a
    voter written as a user's (`user:<uuid>`): 400 on voter. Nothing is counted."""
    user, idea = await new_user(api), await new_idea(api)
    theirs = await new_user((await new_workspace()).api)
    cases = [
        ({"userId": user["id"], "voter": "ada"}, 400, "userId"),
        ({"userId": "nope"}, 400, "userId"),
        ({"voter": f"user:{user['id']}"}, 400, "voter"),
        ({"voter": f"user:{user['id'].upper()}"}, 400, "voter"),
        ({"userId": str(uuid.uuid4())}, 404, None),
        ({"userId": theirs["id"]}, 404, None),
    ]
    for body, status, field in cases:
        r = await vote(api, idea["id"], **body)
        assert r.status == status, (body, r.body)
        if field:
            assert r.error["code"] == "validation_error" and r.error["field"] == field, body
        else:
            assert r.error["code"] == "not_found", body
    r = await api.delete(f"/api/v1/ideas/{idea['id']}/vote", params={"voter": f"user:{user['id']}"})
    assert r.status == 400 and r.error["field"] == "voter", r.body
    assert (await api.get(f"/api/v1/ideas/{idea['id']}")).data["voteCount"] == 0
    # a voter that merely starts with "user:" is anyone's free string
    assert (await vote(api, idea["id"], voter="user:42")).status == 200


async def test_an_idea_asked_for_by_a_user(api: Api) -> None:
    """CreateIdeaRequest's userId: sourceUserId and sourceUserName are the user's, the user
    votes +1 on it (voteCount 1 on both); batch items too; an unknown user is 404 and creates
    nothing."""
    user = await new_user(api, name="Dana Lee")
    r = await api.post("/api/v1/ideas", json={"title": "Dark mode", "userId": user["id"]})
    assert r.status == 200, r.body
    assert r.data["voteCount"] == 1
    detail = (await api.get(f"/api/v1/ideas/{r.data['id']}")).data
    assert detail["sourceUserId"] == user["id"] and detail["sourceUserName"] == "Dana Lee"
    votes = (await api.get(f"/api/v1/ideas/{r.data['id']}/votes")).data["votes"]
    assert [(v["voter"], v["value"], v["userId"]) for v in votes] == [
        (f"user:{user['id']}", 1, user["id"])
    ]
    assert await vote_count(api, user["id"]) == 1
    other = await new_user(api)
    r = await api.post(
        "/api/v1/ideas/batch",
        json={
            "ideas": [
                {"title": "A", "userId": user["id"]},
                {"title": "B"},
                {"title": "C", "userId": other["id"]},
            ]
        },
    )
    assert r.status == 200, r.body
    assert [i["voteCount"] for i in r.data["ideas"]] == [1, 0, 1]
    assert (await vote_count(api, user["id"]), await vote_count(api, other["id"])) == (2, 1)
    before = (await api.get("/api/v1/ideas")).json["pagination"]["total"]
    for body in (
        {"title": "X", "userId": str(uuid.uuid4())},
        {"ideas": [{"title": "Y"}, {"title": "Z", "userId": str(uuid.uuid4())}]},
    ):
        path = "/api/v1/ideas/batch" if "ideas" in body else "/api/v1/ideas"
        r = await api.post(path, json=body)
        assert r.status == 404 and r.error["code"] == "not_found", r.body
    assert (await api.get("/api/v1/ideas")).json["pagination"]["total"] == before
