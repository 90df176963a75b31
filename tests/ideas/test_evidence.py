"""An idea's evidence, support tickets, meetings and participants written through the gateway
(scope ideas:write): the evidence count, the ticket upsert (under concurrency too), the owner
participant and the idea's decision owner moving together both ways, 400s, 404s and 409s,
isolation, and `idea.updated` for every write."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import orjson

from tests.ideas.conftest import Tap
from tests.support.api import Api, Workspace

IDEAS = "/api/v1/ideas"
MEMBERS = "/api/v1/members"


def refused(r: Any, status: int, code: str, field: str | None = None) -> bool:
    ok = r.status == status and r.error["code"] == code
    return ok and (field is None or r.error.get("field") == field)


async def new_idea(api: Api, **body: Any) -> dict[str, Any]:
    body.setdefault("title", f"Idea {uuid.uuid4().hex[:6]}")
    r = await api.post(IDEAS, json=body)
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def new_member(api: Api, name: str = "Dana Lee") -> dict[str, Any]:
    r = await api.post(
        MEMBERS, json={"name": name, "email": f"m-{uuid.uuid4().hex[:8]}@Acme.example"}
    )
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def evidence_count(api: Api, idea_id: str) -> int | None:
    r = await api.get(f"{IDEAS}/{idea_id}")
    assert r.status == 200, r.body
    return r.data["validation"]["evidenceCount"]  # type: ignore[no-any-return]


async def participants(api: Api, idea_id: str) -> list[dict[str, Any]]:
    r = await api.get(f"{IDEAS}/{idea_id}/participants")
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def owner_name(api: Api, idea_id: str) -> str | None:
    """The idea's decision owner as the Idea shows it (its name)."""
    return (await api.get(f"{IDEAS}/{idea_id}")).data["decisionOwnerName"]  # type: ignore[no-any-return]


async def test_evidence_sets_the_count_at_once(api: Api) -> None:
    """Each POST answers the Evidence that GET lists and raises `validation.evidenceCount` in
    the same answer cycle; each DELETE takes it back; a second DELETE is 404."""
    idea = await new_idea(api)
    path = f"{IDEAS}/{idea['id']}/evidence"
    assert await evidence_count(api, idea["id"]) is None  # none recorded yet
    made = []
    for n, body in enumerate(
        (
            {"type": "quote", "title": "Night shift", "content": "We dim our screens."},
            {"type": "link", "title": "Thread", "url": "https://forum.example/t/1"},
            {"type": "document", "title": "Survey", "url": "HTTP://docs.example/s"},
        ),
        start=1,
    ):
        r = await api.post(path, json=body)
        assert r.status == 200, r.body
        assert r.data == {
            "id": r.data["id"],
            "type": body["type"],
            "title": body["title"],
            "url": body.get("url"),
            "content": body.get("content"),
            "createdAt": r.data["createdAt"],
        }
        made.append(r.data)
        assert await evidence_count(api, idea["id"]) == n
    listed = (await api.get(path)).data
    assert sorted(e["id"] for e in listed) == sorted(e["id"] for e in made)
    r = await api.delete(f"{path}/{made[0]['id']}")
    assert r.status == 200 and r.data == {"id": made[0]["id"], "deleted": True}, r.body
    assert await evidence_count(api, idea["id"]) == 2
    assert refused(await api.delete(f"{path}/{made[0]['id']}"), 404, "not_found")
    assert await evidence_count(api, idea["id"]) == 2
    assert [e["id"] for e in (await api.get(path)).data if e["id"] == made[0]["id"]] == []


async def test_evidence_validation(api: Api) -> None:
    """The contract's table: `type` one of five, `title` 1..500, `url` http(s) up to 2000,
    `content` up to 10000; each refusal is 400 naming the field and adds nothing."""
    idea = await new_idea(api)
    path = f"{IDEAS}/{idea['id']}/evidence"
    ok = {"type": "link", "title": "T"}
    for body, field in (
        ({"title": "T"}, "type"),
        ({**ok, "type": "video"}, "type"),
        ({"type": "link"}, "title"),
        ({**ok, "title": ""}, "title"),
        ({**ok, "title": "x" * 501}, "title"),
        ({**ok, "url": "ftp://files.example/a"}, "url"),
        ({**ok, "url": "javascript:alert(1)"}, "url"),
        ({**ok, "url": "https://e.example/" + "a" * 2000}, "url"),
        ({**ok, "content": "x" * 10001}, "content"),
        ({**ok, "extra": 1}, "extra"),
    ):
        r = await api.post(path, json=body)
        assert refused(r, 400, "validation_error", field), (body, r.body)
    assert (await api.post(path, json={**ok, "title": "x" * 500})).status == 200
    assert await evidence_count(api, idea["id"]) == 1


async def test_ticket_upsert_keeps_one_row_and_its_id(api: Api) -> None:
    """A second POST with the same (platform, externalId) updates the ticket (same id) and
    answers it; omitted optional fields keep their values; another pair or another idea is a
    new ticket; DELETE removes it (a second DELETE 404)."""
    idea = await new_idea(api)
    path = f"{IDEAS}/{idea['id']}/support-tickets"
    first = {
        "platform": "zendesk",
        "externalId": "48213",
        "subject": "Dark theme?",
        "status": "open",
        "priority": "normal",
        "customerName": "Priya Shah",
        "customerEmail": "priya@globex.example",
    }
    r = await api.post(path, json=first)
    assert r.status == 200, r.body
    ticket = r.data
    assert ticket == {**first, "id": ticket["id"], "url": None, "createdAt": ticket["createdAt"]}
    r = await api.post(
        path,
        json={
            "platform": "zendesk",
            "externalId": "48213",
            "subject": "Dark theme!",
            "status": "solved",
        },
    )
    assert r.status == 200, r.body
    assert r.data == {**ticket, "subject": "Dark theme!", "status": "solved"}
    assert (await api.get(path)).data == [r.data]
    other = await api.post(path, json={**first, "platform": "intercom"})
    assert other.status == 200 and other.data["id"] != ticket["id"]
    elsewhere = await api.post(f"{IDEAS}/{(await new_idea(api))['id']}/support-tickets", json=first)
    assert elsewhere.status == 200 and elsewhere.data["id"] != ticket["id"]
    assert len((await api.get(path)).data) == 2
    r = await api.delete(f"{path}/{ticket['id']}")
    assert r.status == 200 and r.data == {"id": ticket["id"], "deleted": True}
    assert refused(await api.delete(f"{path}/{ticket['id']}"), 404, "not_found")
    assert [t["id"] for t in (await api.get(path)).data] == [other.data["id"]]


async def test_the_same_ticket_posted_at_once_is_one_row(api: Api) -> None:
    """The same ticket posted several times at the same moment: every answer is 200 with the
    one id, and the idea has one ticket. Five rounds."""
    for round_ in range(5):
        idea = await new_idea(api)
        path = f"{IDEAS}/{idea['id']}/support-tickets"
        body = {"platform": "zendesk", "externalId": f"T-{round_}", "subject": "Export"}
        rs = await asyncio.gather(*(api.post(path, json=body) for _ in range(4)))
        assert [r.status for r in rs] == [200] * 4, [r.body for r in rs]
        assert len({r.data["id"] for r in rs}) == 1
        assert [t["id"] for t in (await api.get(path)).data] == [rs[0].data["id"]]


async def test_ticket_and_meeting_validation(api: Api) -> None:
    idea = await new_idea(api)
    tickets = f"{IDEAS}/{idea['id']}/support-tickets"
    ok = {"platform": "zendesk", "externalId": "1", "subject": "S"}
    for body, field in (
        ({**ok, "platform": ""}, "platform"),
        ({**ok, "platform": "p" * 51}, "platform"),
        ({"externalId": "1", "subject": "S"}, "platform"),
        ({**ok, "externalId": ""}, "externalId"),
        ({**ok, "externalId": "e" * 201}, "externalId"),
        ({**ok, "subject": ""}, "subject"),
        ({**ok, "subject": "s" * 501}, "subject"),
        ({**ok, "status": 3}, "status"),
    ):
        assert refused(await api.post(tickets, json=body), 400, "validation_error", field), body
    meetings = f"{IDEAS}/{idea['id']}/meetings"
    ok = {"title": "Review", "meetingDate": "2025-02-20T15:00:00Z"}
    for body, field in (
        ({"meetingDate": ok["meetingDate"]}, "title"),
        ({**ok, "title": "t" * 501}, "title"),
        ({"title": "Review"}, "meetingDate"),
        ({**ok, "meetingDate": "2025-02-20"}, "meetingDate"),
        ({**ok, "participants": ["a"] * 51}, "participants"),
        ({**ok, "excerpt": "x" * 10001}, "excerpt"),
        ({**ok, "relation": "attended"}, "relation"),
    ):
        r = await api.post(meetings, json=body)
        assert r.status == 400 and r.error["field"].startswith(field), (body, r.body)
    assert (await api.get(tickets)).data == [] and (await api.get(meetings)).data == []


async def test_meeting_create_and_delete(api: Api) -> None:
    idea = await new_idea(api)
    path = f"{IDEAS}/{idea['id']}/meetings"
    body = {
        "title": "Globex quarterly review",
        "meetingDate": "2025-02-20T16:00:00+01:00",
        "participants": ["Dana Lee", "Priya Shah"],
        "excerpt": "Priya asked again about a dark theme.",
        "relation": "extracted",
        "transcriptUrl": "https://meet.example/t/9",
    }
    r = await api.post(path, json=body)
    assert r.status == 200, r.body
    meeting = r.data
    assert meeting == {**body, "id": meeting["id"], "meetingDate": "2025-02-20T15:00:00.000000Z"}
    r = await api.post(path, json={"title": "Standup", "meetingDate": "2025-02-21T09:00:00Z"})
    assert r.status == 200 and (r.data["relation"], r.data["participants"]) == ("mentioned", [])
    assert [m["id"] for m in (await api.get(path)).data] == [r.data["id"], meeting["id"]]
    assert (await api.delete(f"{path}/{meeting['id']}")).data == {
        "id": meeting["id"],
        "deleted": True,
    }
    assert refused(await api.delete(f"{path}/{meeting['id']}"), 404, "not_found")
    assert [m["id"] for m in (await api.get(path)).data] == [r.data["id"]]


async def test_participants_from_members_and_decisions(api: Api) -> None:
    """A participant takes the member's name and e-mail, starts `pending`; `approved` and
    `rejected` set `decidedAt`, `pending` clears it; a member takes part once (409); unknown
    member 404; a member's rename reaches their participations."""
    idea = await new_idea(api)
    path = f"{IDEAS}/{idea['id']}/participants"
    dana = await new_member(api, "Dana Lee")
    r = await api.post(path, json={"memberId": dana["id"], "role": "approver"})
    assert r.status == 200, r.body
    p = r.data
    assert p == {
        "id": p["id"],
        "name": "Dana Lee",
        "email": dana["email"],
        "role": "approver",
        "decision": "pending",
        "decidedAt": None,
    }
    assert await owner_name(api, idea["id"]) is None
    for role in ("approver", "reviewer", "owner"):
        r = await api.post(path, json={"memberId": dana["id"], "role": role})
        assert refused(r, 409, "conflict"), r.body
    assert refused(
        await api.post(path, json={"memberId": str(uuid.uuid4()), "role": "reviewer"}),
        404,
        "not_found",
    )
    one = f"{path}/{p['id']}"
    r = await api.patch(one, json={"decision": "approved"})
    assert r.status == 200 and r.data["decision"] == "approved" and r.data["decidedAt"], r.body
    r = await api.patch(one, json={"decision": "pending"})
    assert r.status == 200 and (r.data["decision"], r.data["decidedAt"]) == ("pending", None)
    r = await api.patch(one, json={"decision": "rejected", "role": "reviewer"})
    assert r.status == 200 and (r.data["decision"], r.data["role"]) == ("rejected", "reviewer")
    assert r.data["decidedAt"] is not None
    for body, field in (({}, None), ({"decision": "maybe"}, "decision"), ({"role": None}, "role")):
        assert refused(await api.patch(one, json=body), 400, "validation_error", field), body
    for body, field in (
        ({"role": "reviewer"}, "memberId"),
        ({"memberId": dana["id"], "role": "boss"}, "role"),
        ({"memberId": "x", "role": "owner"}, "memberId"),
    ):
        assert refused(await api.post(path, json=body), 400, "validation_error", field), body
    assert (await api.patch(f"{MEMBERS}/{dana['id']}", json={"name": "Dana L."})).status == 200
    assert [x["name"] for x in await participants(api, idea["id"])] == ["Dana L."]
    assert refused(
        await api.patch(f"{path}/{uuid.uuid4()}", json={"decision": "approved"}), 404, "not_found"
    )
    r = await api.delete(one)
    assert r.status == 200 and r.data == {"id": p["id"], "deleted": True}
    assert refused(await api.delete(one), 404, "not_found")
    assert await participants(api, idea["id"]) == []
    # gone, the member may take part again
    assert (await api.post(path, json={"memberId": dana["id"], "role": "reviewer"})).status == 200


async def test_owner_participant_is_the_decision_owner_both_ways(api: Api) -> None:
    """A participant made `owner` (by POST or PATCH) sets `decisionOwnerId`, and the previous
    owner participant leaves; `decisionOwnerId` set by create or PATCH makes the member the
    owner participant (an existing participant of theirs takes the role), null removes it;
    the owner demoted or deleted clears `decisionOwnerId`."""
    dana, ada, lin = [await new_member(api, n) for n in ("Dana", "Ada", "Lin")]
    idea = await new_idea(api, decisionOwnerId=dana["id"])
    iid = idea["id"]
    path = f"{IDEAS}/{iid}/participants"
    assert [(p["name"], p["role"], p["decision"]) for p in await participants(api, iid)] == [
        ("Dana", "owner", "pending")
    ]
    r = await api.post(path, json={"memberId": ada["id"], "role": "owner"})
    assert r.status == 200, r.body
    assert await owner_name(api, iid) == "Ada"
    assert [(p["name"], p["role"]) for p in await participants(api, iid)] == [("Ada", "owner")]
    lin_p = (await api.post(path, json={"memberId": lin["id"], "role": "reviewer"})).data
    assert (await api.patch(f"{path}/{lin_p['id']}", json={"decision": "approved"})).status == 200
    r = await api.patch(f"{path}/{lin_p['id']}", json={"role": "owner"})
    assert r.status == 200 and r.data["decision"] == "approved", r.body
    assert await owner_name(api, iid) == "Lin"
    assert [(p["name"], p["role"]) for p in await participants(api, iid)] == [("Lin", "owner")]
    # the idea's side: PATCH decisionOwnerId to a member who is not a participant
    r = await api.patch(f"{IDEAS}/{iid}", json={"decisionOwnerId": dana["id"]})
    assert r.status == 200, r.body
    assert [(p["name"], p["role"]) for p in await participants(api, iid)] == [("Dana", "owner")]
    # to a member who is one: they take the role, keeping their decision
    ada_p = (await api.post(path, json={"memberId": ada["id"], "role": "approver"})).data
    await api.patch(f"{path}/{ada_p['id']}", json={"decision": "rejected"})
    assert (await api.patch(f"{IDEAS}/{iid}", json={"decisionOwnerId": ada["id"]})).status == 200
    ps = await participants(api, iid)
    assert [(p["id"], p["role"], p["decision"]) for p in ps] == [(ada_p["id"], "owner", "rejected")]
    # null clears it
    assert (await api.patch(f"{IDEAS}/{iid}", json={"decisionOwnerId": None})).status == 200
    assert await participants(api, iid) == []
    # the owner demoted clears decisionOwnerId; the owner deleted too
    owner = (await api.post(path, json={"memberId": lin["id"], "role": "owner"})).data
    assert await owner_name(api, iid) == "Lin"
    assert (await api.patch(f"{path}/{owner['id']}", json={"role": "approver"})).status == 200
    assert await owner_name(api, iid) is None
    assert (await api.patch(f"{path}/{owner['id']}", json={"role": "owner"})).status == 200
    assert await owner_name(api, iid) == "Lin"
    assert (await api.delete(f"{path}/{owner['id']}")).status == 200
    assert await owner_name(api, iid) is None
    # batch create with a decision owner
    r = await api.post(
        f"{IDEAS}/batch",
        json={"ideas": [{"title": "B1", "decisionOwnerId": ada["id"]}, {"title": "B2"}]},
    )
    assert r.status == 200, r.body
    made = r.data["ideas"]
    assert [(p["name"], p["role"]) for p in await participants(api, made[0]["id"])] == [
        ("Ada", "owner")
    ]
    assert await participants(api, made[1]["id"]) == []
    # a removed member's participations go with them, the owner's id with its participant
    assert (await api.delete(f"{MEMBERS}/{ada['id']}")).status == 200
    assert await participants(api, made[0]["id"]) == []
    assert await owner_name(api, made[0]["id"]) == "Ada"  # the record of who owned it


async def test_another_workspaces_idea_and_member_are_not_found(
    api: Api, new_workspace: Any
) -> None:
    """Another workspace's idea (every route) and member (as a participant) are 404 and
    nothing changes on either side; a sub-record of another idea of the same workspace is
    404 on this one."""
    theirs = await new_workspace()
    their_idea = await new_idea(theirs.api)
    their_member = await new_member(theirs.api)
    tid = their_idea["id"]
    ev = (
        await theirs.api.post(f"{IDEAS}/{tid}/evidence", json={"type": "quote", "title": "Q"})
    ).data
    tk = (
        await theirs.api.post(
            f"{IDEAS}/{tid}/support-tickets",
            json={"platform": "z", "externalId": "1", "subject": "S"},
        )
    ).data
    mt = (
        await theirs.api.post(
            f"{IDEAS}/{tid}/meetings", json={"title": "M", "meetingDate": "2025-01-01T00:00:00Z"}
        )
    ).data
    pt = (
        await theirs.api.post(
            f"{IDEAS}/{tid}/participants", json={"memberId": their_member["id"], "role": "reviewer"}
        )
    ).data
    before = {
        name: (await theirs.api.get(f"{IDEAS}/{tid}/{name}")).data
        for name in ("evidence", "support-tickets", "meetings", "participants")
    }
    mine = await new_idea(api)
    for idea_id in (tid, mine["id"]):
        base = f"{IDEAS}/{idea_id}"
        for r in (
            await api.delete(f"{base}/evidence/{ev['id']}"),
            await api.delete(f"{base}/support-tickets/{tk['id']}"),
            await api.delete(f"{base}/meetings/{mt['id']}"),
            await api.patch(f"{base}/participants/{pt['id']}", json={"decision": "approved"}),
            await api.delete(f"{base}/participants/{pt['id']}"),
        ):
            assert refused(r, 404, "not_found"), r.body
    base = f"{IDEAS}/{tid}"
    for r in (
        await api.post(f"{base}/evidence", json={"type": "quote", "title": "Q"}),
        await api.post(
            f"{base}/support-tickets",
            json={"platform": "z", "externalId": "1", "subject": "Hijack"},
        ),
        await api.post(
            f"{base}/meetings", json={"title": "M", "meetingDate": "2025-01-01T00:00:00Z"}
        ),
        await api.post(
            f"{base}/participants", json={"memberId": their_member["id"], "role": "owner"}
        ),
        await api.post(
            f"{IDEAS}/{mine['id']}/participants",
            json={"memberId": their_member["id"], "role": "owner"},
        ),
    ):
        assert refused(r, 404, "not_found"), r.body
    after = {
        name: (await theirs.api.get(f"{IDEAS}/{tid}/{name}")).data
        for name in ("evidence", "support-tickets", "meetings", "participants")
    }
    assert after == before
    assert await evidence_count(theirs.api, tid) == 1
    assert await participants(api, mine["id"]) == [] and await owner_name(api, mine["id"]) is None


async def test_writes_need_ideas_write(ws: Workspace, system: Any) -> None:
    reader = ws.api.with_key((await ws.new_key(system.database_url, scopes="ideas:read"))["key"])
    idea = await new_idea(ws.api)
    base = f"{IDEAS}/{idea['id']}"
    for r in (
        await reader.post(f"{base}/evidence", json={"type": "quote", "title": "Q"}),
        await reader.post(
            f"{base}/support-tickets", json={"platform": "z", "externalId": "1", "subject": "S"}
        ),
        await reader.post(
            f"{base}/meetings", json={"title": "M", "meetingDate": "2025-01-01T00:00:00Z"}
        ),
        await reader.post(
            f"{base}/participants", json={"memberId": str(uuid.uuid4()), "role": "owner"}
        ),
        await reader.delete(f"{base}/evidence/{uuid.uuid4()}"),
    ):
        assert refused(r, 403, "insufficient_scope"), r.body
    assert (await reader.get(f"{base}/evidence")).data == []


async def test_every_write_emits_idea_updated(api: Api, tap: Tap) -> None:
    """Each write of these routes emits one `idea.updated` whose idea is the idea after it
    (the evidence count and decision owner included)."""
    idea = await new_idea(api)
    await tap.take(1)  # idea.created
    base = f"{IDEAS}/{idea['id']}"
    member = await new_member(api)
    ev = (await api.post(f"{base}/evidence", json={"type": "quote", "title": "Q"})).data
    tk = (
        await api.post(
            f"{base}/support-tickets", json={"platform": "z", "externalId": "1", "subject": "S"}
        )
    ).data
    mt = (
        await api.post(
            f"{base}/meetings", json={"title": "M", "meetingDate": "2025-01-01T00:00:00Z"}
        )
    ).data
    pt = (
        await api.post(f"{base}/participants", json={"memberId": member["id"], "role": "owner"})
    ).data
    assert (
        await api.patch(f"{base}/participants/{pt['id']}", json={"decision": "approved"})
    ).status == 200
    for path in (
        f"evidence/{ev['id']}",
        f"support-tickets/{tk['id']}",
        f"meetings/{mt['id']}",
        f"participants/{pt['id']}",
    ):
        assert (await api.delete(f"{base}/{path}")).status == 200, path
    events = await tap.take(9)
    assert [e["type"] for e in events] == ["idea.updated"] * 9
    assert all(e["data"]["idea"]["id"] == idea["id"] for e in events)
    assert [e["data"]["idea"]["validation"]["evidenceCount"] for e in events] == [1] * 5 + [0] * 4
    owners = [e["data"]["idea"]["decisionOwnerName"] for e in events]
    assert owners == [None] * 3 + [member["name"]] * 5 + [None]
    await asyncio.sleep(1.0)  # nothing more for this workspace: one event per write
    while (msg := await tap.queue.get(no_ack=True, fail=False)) is not None:
        assert orjson.loads(msg.body)["workspaceId"] != tap.workspace_id, msg.body
