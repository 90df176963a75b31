"""Idea rules of docs/ideas.md not covered elsewhere: RICE bounds, vote types, vote history cap,
status no-ops, the workspace month, the automation list."""

from __future__ import annotations

import psycopg2

from tests.support.api import Api
from tests.support.processes import System


def sql(system: System, statement: str, params: tuple = ()) -> None:
    conn = psycopg2.connect(system.database_url)
    with conn, conn.cursor() as cur:
        cur.execute(statement, params)
    conn.close()


async def new_idea(api: Api, **fields: object) -> dict:
    r = await api.post("/api/v1/ideas", json={"title": "Idea", **fields})
    assert r.status == 200, r.json
    return r.data  # type: ignore[no-any-return]


async def test_rice_score_that_overflows_is_refused(api: Api) -> None:
    """RICE inputs whose score is no finite number: 400 naming the field; nothing changes."""
    idea = await new_idea(api)
    path = f"/api/v1/ideas/{idea['id']}"
    r = await api.patch(
        path, json={"riceReach": 1e308, "riceImpact": 1e308, "riceConfidence": 1, "riceEffort": 1}
    )
    assert r.status == 400 and r.error["field"] == "riceReach", r.json
    r = await api.patch(
        path,
        json={"riceReach": 1e200, "riceImpact": 1e100, "riceConfidence": 1, "riceEffort": 1e-10},
    )
    assert r.status == 400 and r.error["code"] == "validation_error"
    rice = (await api.get(path)).data["rice"]
    assert rice["reach"] is None and rice["score"] is None


async def test_vote_value_must_be_an_integer(api: Api) -> None:
    """`value` true or 1.0 is not -1 or 1: 400 on `value`, no vote recorded."""
    idea = await new_idea(api)
    for value in (True, 1.0, "1", None):
        r = await api.post(f"/api/v1/ideas/{idea['id']}/vote", json={"value": value})
        assert r.status == 400 and r.error["field"] == "value", value
    assert (await api.get(f"/api/v1/ideas/{idea['id']}/votes")).data["votes"] == []


async def test_vote_history_is_the_1000_most_recent(api: Api, system: System, ws) -> None:
    """`votes` lists the 1,000 most recent, newest first; counts cover every vote."""
    idea = await new_idea(api)
    sql(
        system,
        "INSERT INTO ideas.votes (workspace_id, idea_id, voter, value, created_at)"
        " SELECT %s, %s, 'v' || n, CASE WHEN n %% 3 = 0 THEN -1 ELSE 1 END,"
        " now() - n * interval '1 second' FROM generate_series(1, 1002) n",
        (ws.id, idea["id"]),
    )
    await api.post(f"/api/v1/ideas/{idea['id']}/vote", json={"voter": "latest"})
    b = (await api.get(f"/api/v1/ideas/{idea['id']}/votes")).data
    assert len(b["votes"]) == 1000 and b["votes"][0]["voter"] == "latest"
    assert b["votes"][-1]["voter"] == "v999"
    assert (b["upvotes"], b["downvotes"]) == (1 + 1002 - 334, 334)
    assert [v["createdAt"] for v in b["votes"]] == sorted(
        (v["createdAt"] for v in b["votes"]), reverse=True
    )


async def test_same_status_is_no_decision(api: Api) -> None:
    """PATCH or batch to the status an idea already has records no Decision."""
    idea = await new_idea(api)
    path = f"/api/v1/ideas/{idea['id']}"
    assert (await api.patch(path, json={"status": "new"})).status == 200
    r = await api.patch("/api/v1/ideas/batch/status", json={"ids": [idea["id"]], "status": "new"})
    assert r.data["ideas"] == [{"id": idea["id"], "previousStatus": "new", "status": "new"}]
    assert (await api.get(f"{path}/decisions")).data == []
    r = await api.patch(path, json={"status": "deleted"})
    assert r.data["status"] == "deleted" and r.data["decidedAt"] is None
    r = await api.patch(path, json={"status": "planned"})
    assert r.data["status"] == "planned"
    hist = (await api.get(f"{path}/decisions")).data
    assert [(h["previousStatus"], h["newStatus"]) for h in hist] == [
        ("new", "deleted"),
        ("deleted", "planned"),
    ]


async def test_ideas_this_month_is_the_utc_month(api: Api, system: System) -> None:
    """ideasThisMonth leaves out ideas of earlier months; ideasTotal keeps them."""
    old, _ = await new_idea(api), await new_idea(api)
    sql(
        system,
        "UPDATE ideas.ideas SET created_at = date_trunc('month', now() AT TIME ZONE 'UTC')"
        " AT TIME ZONE 'UTC' - interval '1 second' WHERE id = %s",
        (old["id"],),
    )
    info = (await api.get("/api/v1/workspace")).data
    assert (info["ideasTotal"], info["ideasThisMonth"], info["activeIdeas"]) == (2, 1, 2)


async def test_automation_list_default_limit_and_deleted(api: Api) -> None:
    """GET /automation/ideas: 10 by default, newest first, deleted ideas left out."""
    r = await api.post(
        "/api/v1/ideas/batch", json={"ideas": [{"title": f"i{n}"} for n in range(12)]}
    )
    ids = [i["id"] for i in r.data["ideas"]]
    await api.delete(f"/api/v1/ideas/{ids[-1]}")
    listed = (await api.get("/api/v1/automation/ideas")).json
    assert isinstance(listed, list) and len(listed) == 10
    assert ids[-1] not in {i["id"] for i in listed}
    assert set(listed[0]) == {"id", "title", "summary", "source", "authorName", "url", "createdAt"}
    keys = [(i["createdAt"], i["id"]) for i in listed]
    assert keys == sorted(keys, reverse=True)
