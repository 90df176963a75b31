"""An idea's comments through the gateway (docs/ideas.md "Comments"): the Comment
and its author, threading one level deep, internal notes, `commentCount` on Idea and
IdeaDetail (exact under concurrent creates and deletes, in exports too), oldest-first keyset
pages that hold while comments are written, the body's rules, 404s and isolation, a merged
duplicate keeping its comments, the three events delivered to a subscriber (internal comments
too), the `add_comment` MCP tool, and the internal routes of a user's comments (export and
erasure by the customers service)."""

from __future__ import annotations

import asyncio
import csv
import io
import time
import uuid
from typing import Any

import aiohttp
import jsonschema
import orjson
import psycopg2

from tests.mcp.support import call, call_error, mcp_session
from tests.support.api import Api, Workspace
from tests.support.processes import System
from tests.webhooks.support import Receiver, verify

I = "/api/v1/ideas"
KEYS = ["id", "ideaId", "body", "internal", "parentId", "author", "createdAt", "updatedAt"]


def comments_path(idea_id: str) -> str:
    return f"{I}/{idea_id}/comments"


async def new_idea(api: Api, title: str = "Comments idea") -> dict[str, Any]:
    r = await api.post(I, json={"title": title})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def comment(api: Api, idea_id: str, body: str = "A comment", **more: Any) -> dict[str, Any]:
    r = await api.post(comments_path(idea_id), json={"body": body, **more})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def listed(api: Api, idea_id: str, **params: Any) -> list[dict[str, Any]]:
    """Every comment of the idea, page by page (oldest first)."""
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        r = await api.get(comments_path(idea_id), params={"limit": 100, **params, "cursor": cursor})
        assert r.status == 200, r.body
        out += r.data
        cursor = r.json["pagination"]["nextCursor"]
        if cursor is None:
            return out


async def count(api: Api, idea_id: str) -> int:
    """The idea's `commentCount`, which the detail and the list both show alike."""
    detail = (await api.get(f"{I}/{idea_id}")).data
    r = await api.get(I, params={"limit": 100})
    one = [i for i in r.data if i["id"] == idea_id]
    assert one and one[0]["commentCount"] == detail["commentCount"]
    assert list(detail)[list(detail).index("mergedIntoId") + 1] == "commentCount"
    return detail["commentCount"]  # type: ignore[no-any-return]


def order_key(c: dict[str, Any]) -> tuple[str, str]:
    return (c["createdAt"], c["id"])


async def test_a_comment_its_author_and_the_count(ws: Workspace) -> None:
    """A comment has the Comment's keys in order; without `userId` its author is the key
    (`{"type": "key", "id": <keyId>, "name": <key name>}`); `internal` defaults to false and
    only comments that are not internal count; the list holds it as the create answered it."""
    api = ws.api
    idea = await new_idea(api)
    assert idea["commentCount"] == 0 and await count(api, idea["id"]) == 0
    c = await comment(api, idea["id"], "When does this ship?")
    assert list(c) == KEYS
    assert (c["ideaId"], c["body"], c["internal"], c["parentId"]) == (
        idea["id"],
        "When does this ship?",
        False,
        None,
    )
    assert c["author"] == {"type": "key", "id": ws.key_id, "name": "API key"}
    assert c["updatedAt"] is None
    assert await count(api, idea["id"]) == 1
    note = await comment(api, idea["id"], "Internal: check with sales", internal=True)
    assert note["internal"] is True
    assert await count(api, idea["id"]) == 1
    assert await listed(api, idea["id"]) == [c, note]
    # the idea's IDEA-<n> id answers as its uuid
    r = await api.get(comments_path(idea["ideaServiceId"].lower()))
    assert r.status == 200 and r.data == [c, note]
    # a comment is activity on the idea
    after = (await api.get(f"{I}/{idea['id']}")).data
    assert after["lastActivityAt"] > idea["lastActivityAt"]


async def test_replies_go_one_level_deep(ws: Workspace, new_workspace: Any) -> None:
    """A reply names a top-level comment of the same idea; a reply to a reply is 400 on
    `parentId`; a parent that is not the idea's (unknown, another idea's, another workspace's)
    is 404. Nothing is written by a refused call."""
    api = ws.api
    idea, other = await new_idea(api), await new_idea(api, "Other idea")
    top = await comment(api, idea["id"], "Top")
    reply = await comment(api, idea["id"], "Reply", parentId=top["id"])
    assert reply["parentId"] == top["id"]
    # a reply may be internal, and an internal comment may have public replies
    note = await comment(api, idea["id"], "Team note", internal=True, parentId=top["id"])
    assert note["parentId"] == top["id"]
    r = await api.post(comments_path(idea["id"]), json={"body": "Deeper", "parentId": reply["id"]})
    assert r.status == 400, r.body
    assert r.error["code"] == "validation_error" and r.error["field"] == "parentId"
    elsewhere = await comment(api, other["id"], "On the other idea")
    other_ws = await new_workspace()
    theirs = await comment(other_ws.api, (await new_idea(other_ws.api, "Theirs"))["id"])
    for parent in (elsewhere["id"], str(uuid.uuid4()), theirs["id"]):
        r = await api.post(comments_path(idea["id"]), json={"body": "x", "parentId": parent})
        assert r.status == 404 and r.error["code"] == "not_found", (parent, r.body)
    assert [c["id"] for c in await listed(api, idea["id"])] == [top["id"], reply["id"], note["id"]]
    assert await count(api, idea["id"]) == 2


async def test_deleting_a_comment_keeps_its_replies(ws: Workspace) -> None:
    """A deleted comment's replies stay, their `parentId` kept; each comment that is not
    internal takes its part of the count back; a second delete is 404."""
    api = ws.api
    idea = await new_idea(api)
    top = await comment(api, idea["id"], "Top")
    replies = [await comment(api, idea["id"], f"Reply {n}", parentId=top["id"]) for n in range(2)]
    note = await comment(api, idea["id"], "Note", internal=True)
    assert await count(api, idea["id"]) == 3
    r = await api.delete(f"{comments_path(idea['id'])}/{top['id']}")
    assert r.status == 200, r.body
    assert r.data == {"id": top["id"], "deleted": True}
    assert await listed(api, idea["id"]) == [*replies, note]
    assert all(c["parentId"] == top["id"] for c in replies)
    assert await count(api, idea["id"]) == 2
    r = await api.delete(f"{comments_path(idea['id'])}/{top['id']}")
    assert r.status == 404 and r.error["code"] == "not_found"
    # a reply to the deleted comment is refused like any unknown parent
    r = await api.post(comments_path(idea["id"]), json={"body": "x", "parentId": top["id"]})
    assert r.status == 404 and r.error["code"] == "not_found"
    assert (await api.delete(f"{comments_path(idea['id'])}/{note['id']}")).status == 200
    assert await count(api, idea["id"]) == 2
    for c in replies:
        assert (await api.delete(f"{comments_path(idea['id'])}/{c['id']}")).status == 200
    assert await count(api, idea["id"]) == 0 and await listed(api, idea["id"]) == []


async def test_editing_a_comment(ws: Workspace) -> None:
    """PATCH replaces `body` and sets `updatedAt`; the rest stays; the count does not move."""
    api = ws.api
    idea = await new_idea(api)
    c = await comment(api, idea["id"], "Frist!", internal=True)
    r = await api.patch(f"{comments_path(idea['id'])}/{c['id']}", json={"body": "First!"})
    assert r.status == 200, r.body
    edited = r.data
    assert edited["body"] == "First!" and edited["updatedAt"] is not None
    assert edited["updatedAt"] >= edited["createdAt"]
    assert {k: v for k, v in edited.items() if k not in ("body", "updatedAt")} == {
        k: v for k, v in c.items() if k not in ("body", "updatedAt")
    }
    assert await listed(api, idea["id"]) == [edited]
    assert await count(api, idea["id"]) == 0
    for body, field in (
        ({}, "body"),
        ({"body": ""}, "body"),
        ({"body": "x" * 10001}, "body"),
        ({"body": 5}, "body"),
        ({"body": "x", "internal": False}, "internal"),
        ({"body": "x", "parentId": None}, "parentId"),
    ):
        r = await api.patch(f"{comments_path(idea['id'])}/{c['id']}", json=body)
        assert r.status == 400, (body, r.body)
        assert r.error["code"] == "validation_error" and r.error["field"] == field, (body, r.body)
    assert await listed(api, idea["id"]) == [edited]


async def test_the_body_is_validated_naming_the_field(ws: Workspace) -> None:
    """Every rule of the create body is a 400 `validation_error` naming its field, and nothing
    is written; the limits themselves are accepted."""
    api = ws.api
    idea = await new_idea(api)
    cases: list[tuple[Any, str]] = [
        ({}, "body"),
        ({"body": ""}, "body"),
        ({"body": "x" * 10001}, "body"),
        ({"body": None}, "body"),
        ({"body": "x", "internal": "yes"}, "internal"),
        ({"body": "x", "internal": 1}, "internal"),
        ({"body": "x", "parentId": "nope"}, "parentId"),
        ({"body": "x", "userId": "nope"}, "userId"),
        ({"body": "x", "userId": 7}, "userId"),
        ({"body": "x", "author": "me"}, "author"),
        ({"body": "bad \u0000 text"}, "body"),
    ]
    for body, field in cases:
        r = await api.post(comments_path(idea["id"]), json=body)
        assert r.status == 400, (body, r.status, r.body)
        assert r.error["code"] == "validation_error" and r.error["field"] == field, (body, r.body)
    r = await api.post(
        comments_path(idea["id"]), body=b"[", headers={"Content-Type": "application/json"}
    )
    assert r.status == 400
    assert await listed(api, idea["id"]) == []
    longest = await comment(api, idea["id"], "x" * 10000, userId=None, parentId=None)
    assert len(longest["body"]) == 10000 and longest["author"]["type"] == "key"
    for value, field in (("maybe", "internal"), ("", "cursor"), ("x", "cursor"), ("0", "limit")):
        r = await api.get(comments_path(idea["id"]), params={field: value})
        if field == "cursor" and value == "":
            assert r.status == 200  # an empty cursor is no cursor
            continue
        assert r.status == 400 and r.error["field"] == field, (field, value, r.body)


async def test_an_unknown_user_is_not_found(ws: Workspace) -> None:
    """A `userId` naming no end user of the workspace is 404 `not_found`, and nothing is
    written (the customers service answers for its users)."""
    api = ws.api
    idea = await new_idea(api)
    r = await api.post(comments_path(idea["id"]), json={"body": "x", "userId": str(uuid.uuid4())})
    assert r.status == 404 and r.error["code"] == "not_found", r.body
    assert await listed(api, idea["id"]) == [] and await count(api, idea["id"]) == 0


async def test_internal_filter_and_pages(ws: Workspace) -> None:
    """Oldest first by (`createdAt`, `id`); `internal=true|false` filters; pages chain by their
    cursors, and a cursor is valid only with the filter it was issued for."""
    api = ws.api
    idea = await new_idea(api)
    made = [await comment(api, idea["id"], f"c{n}", internal=n % 3 == 0) for n in range(11)]
    assert made == sorted(made, key=order_key)
    assert await listed(api, idea["id"]) == made
    assert await listed(api, idea["id"], internal="true") == [c for c in made if c["internal"]]
    assert await listed(api, idea["id"], internal="false") == [c for c in made if not c["internal"]]
    pages: list[list[str]] = []
    cursor = None
    while True:
        r = await api.get(comments_path(idea["id"]), params={"limit": 4, "cursor": cursor})
        assert r.status == 200 and r.json["pagination"]["limit"] == 4
        pages.append([c["id"] for c in r.data])
        cursor = r.json["pagination"]["nextCursor"]
        assert r.json["pagination"]["hasMore"] == (cursor is not None)
        if cursor is None:
            break
    assert [len(p) for p in pages] == [4, 4, 3]
    assert sum(pages, []) == [c["id"] for c in made]
    first = await api.get(comments_path(idea["id"]), params={"limit": 2, "internal": "true"})
    cursor = first.json["pagination"]["nextCursor"]
    for params in ({}, {"internal": "false"}):
        r = await api.get(comments_path(idea["id"]), params={"cursor": cursor, **params})
        assert r.status == 400 and r.error["field"] == "cursor", r.body
    other = await new_idea(api, "Other")
    r = await api.get(comments_path(other["id"]), params={"cursor": cursor, "internal": "true"})
    assert r.status == 400 and r.error["field"] == "cursor"


async def test_pages_hold_while_comments_are_written(ws: Workspace) -> None:
    """A client paging through 40 comments while others are written and deleted at once sees
    each comment that existed throughout exactly once, in order."""
    api = ws.api
    idea = await new_idea(api)
    made = await asyncio.gather(*(comment(api, idea["id"], f"c{n}") for n in range(40)))
    gone = {c["id"] for c in made[30:]}
    kept = sorted((c for c in made if c["id"] not in gone), key=order_key)
    seen: list[dict[str, Any]] = []
    cursor = None
    n = 0
    while True:
        r = await api.get(comments_path(idea["id"]), params={"limit": 6, "cursor": cursor})
        assert r.status == 200, r.body
        seen += r.data
        cursor = r.json["pagination"]["nextCursor"]
        if cursor is None:
            break
        writes = [comment(api, idea["id"], f"new {n}-{k}") for k in range(3)]
        if n < 10:
            writes.append(api.delete(f"{comments_path(idea['id'])}/{made[30 + n]['id']}"))
        await asyncio.gather(*writes)
        n += 1
    ids = [c["id"] for c in seen]
    assert len(ids) == len(set(ids)), "a comment was repeated"
    assert seen == sorted(seen, key=order_key)
    assert {c["id"] for c in kept} <= set(ids), "a comment was skipped"


async def test_concurrent_creates_and_deletes_keep_the_count_exact(ws: Workspace) -> None:
    """30 creates at once (a third internal), then 12 deletes beside 10 more creates:
    `commentCount` is the number of remaining comments that are not internal, exactly."""
    api = ws.api
    idea = await new_idea(api)
    made = await asyncio.gather(
        *(comment(api, idea["id"], f"c{n}", internal=n % 3 == 0) for n in range(30))
    )
    assert await count(api, idea["id"]) == 20
    answers = await asyncio.gather(
        *(api.delete(f"{comments_path(idea['id'])}/{c['id']}") for c in made[:12]),
        *(api.post(comments_path(idea["id"]), json={"body": f"n{n}"}) for n in range(10)),
    )
    assert all(r.status == 200 for r in answers), [r.body for r in answers if r.status != 200]
    remaining = await listed(api, idea["id"])
    assert len(remaining) == 28
    assert await count(api, idea["id"]) == sum(1 for c in remaining if not c["internal"]) == 22


async def test_not_found_isolation_and_scopes(
    ws: Workspace, new_workspace: Any, system: System
) -> None:
    """Another workspace's idea or comment, another idea's comment, an unknown one: 404 on
    every route, and nothing changes on either side. A deleted idea takes comments as any
    idea. `ideas:read` lists but cannot write (403)."""
    api = ws.api
    mine, other_idea = await new_idea(api, "Mine"), await new_idea(api, "Other")
    c = await comment(api, mine["id"])
    theirs = await new_workspace()
    their_idea = await new_idea(theirs.api, "Theirs")
    their_comment = await comment(theirs.api, their_idea["id"])
    for path in (
        comments_path(str(uuid.uuid4())),
        comments_path(their_idea["id"]),
        comments_path("not-an-id"),
        comments_path("IDEA-999999"),
    ):
        r = await api.post(path, json={"body": "x"})
        assert r.status == 404 and r.error["code"] == "not_found", (path, r.body)
        r = await api.get(path)
        assert r.status == 404 and r.error["code"] == "not_found", (path, r.body)
    for path in (
        f"{comments_path(mine['id'])}/{their_comment['id']}",
        f"{comments_path(their_idea['id'])}/{their_comment['id']}",
        f"{comments_path(other_idea['id'])}/{c['id']}",
        f"{comments_path(mine['id'])}/{uuid.uuid4()}",
        f"{comments_path(mine['id'])}/nope",
    ):
        r = await api.patch(path, json={"body": "changed"})
        assert r.status == 404 and r.error["code"] == "not_found", (path, r.body)
        r = await api.delete(path)
        assert r.status == 404 and r.error["code"] == "not_found", (path, r.body)
    reader = api.with_key((await ws.new_key(system.database_url, scopes="ideas:read"))["key"])
    assert (await reader.get(comments_path(mine["id"]))).data == [c]
    for r in (
        await reader.post(comments_path(mine["id"]), json={"body": "x"}),
        await reader.patch(f"{comments_path(mine['id'])}/{c['id']}", json={"body": "y"}),
        await reader.delete(f"{comments_path(mine['id'])}/{c['id']}"),
    ):
        assert r.status == 403 and r.error["code"] == "insufficient_scope"
    assert await listed(api, mine["id"]) == [c] and await count(api, mine["id"]) == 1
    assert await listed(theirs.api, their_idea["id"]) == [their_comment]
    assert await count(theirs.api, their_idea["id"]) == 1
    assert await listed(api, other_idea["id"]) == []
    assert (await api.delete(f"{I}/{other_idea['id']}")).status == 200
    await comment(api, other_idea["id"], "On a deleted idea")
    assert (await api.get(f"{I}/{other_idea['id']}")).data["commentCount"] == 1


async def test_a_merged_duplicate_keeps_its_comments(ws: Workspace) -> None:
    """A merge moves no comment: the duplicate keeps its comments and its count, the primary
    its own; a comment written on the merged duplicate stays there; unmerge changes nothing."""
    api = ws.api
    primary, dup = await new_idea(api, "Primary"), await new_idea(api, "Duplicate")
    await comment(api, primary["id"], "On the primary")
    on_dup = [await comment(api, dup["id"], f"On the duplicate {n}") for n in range(2)]
    r = await api.post(f"{I}/{dup['id']}/merge", json={"intoId": primary["id"]})
    assert r.status == 200, r.body
    assert r.data["duplicate"]["commentCount"] == 2 and r.data["primary"]["commentCount"] == 1
    later = await comment(api, dup["id"], "After the merge")
    assert await listed(api, dup["id"]) == [*on_dup, later]
    assert await count(api, dup["id"]) == 3 and await count(api, primary["id"]) == 1
    assert len(await listed(api, primary["id"])) == 1
    r = await api.post(f"{I}/{dup['id']}/unmerge")
    assert r.status == 200, r.body
    assert r.data["duplicate"]["commentCount"] == 3 and r.data["primary"]["commentCount"] == 1


async def test_comment_count_in_exports(ws: Workspace) -> None:
    """The ideas export carries `commentCount` after `mergedIntoId`, in JSON and in CSV."""
    api = ws.api
    idea = await new_idea(api, "Exported")
    await comment(api, idea["id"])
    await comment(api, idea["id"], "note", internal=True)
    r = await api.get("/api/v1/export/ideas", params={"format": "json"})
    assert r.status == 200, r.body
    (row,) = [i for i in orjson.loads(r.body) if i["id"] == idea["id"]]
    keys = list(row)
    assert keys[keys.index("mergedIntoId") + 1] == "commentCount" and row["commentCount"] == 1
    r = await api.get("/api/v1/export/ideas", params={"format": "csv"})
    header, *lines = csv.reader(io.StringIO(r.body.decode()))
    at = header.index("commentCount")
    assert header[at - 1] == "mergedIntoId"
    (line,) = [x for x in lines if x[0] == idea["id"]]
    assert line[at] == "1"


async def _delivered(receiver: Receiver, path: str, n: int) -> list[Any]:
    deadline = time.monotonic() + 15
    while len(receiver.at(path)) < n:
        assert time.monotonic() < deadline, [g.json["type"] for g in receiver.at(path)]
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)  # nothing more comes
    return receiver.at(path)


async def test_comment_events_are_delivered(ws: Workspace) -> None:
    """A subscriber to the three comment events gets `comment.created`, `comment.updated` and
    `comment.deleted` (internal comments too), each `{"comment", "idea"}` with the comment as
    the API answered it (as it was, for a delete) and the idea's count after the change,
    signed and valid against the document's `webhooks` section; a subscriber of other events
    gets none of them."""
    api = ws.api
    receiver = await Receiver().start()
    try:
        path, others = receiver.new_path(), receiver.new_path()
        events = ["comment.created", "comment.updated", "comment.deleted"]
        r = await api.post(
            "/api/v1/webhooks", json={"targetUrl": receiver.url(path), "events": events}
        )
        assert r.status == 200, r.body
        secret = r.data["secret"]
        r = await api.post(
            "/api/v1/webhooks", json={"targetUrl": receiver.url(others), "events": ["idea.voted"]}
        )
        assert r.status == 200, r.body
        idea = await new_idea(api, "Delivered comments")
        public = await comment(api, idea["id"], "Public")
        note = await comment(api, idea["id"], "Internal", internal=True)
        r = await api.patch(f"{comments_path(idea['id'])}/{note['id']}", json={"body": "Edited"})
        edited = r.data
        assert (await api.delete(f"{comments_path(idea['id'])}/{public['id']}")).status == 200
        got = await _delivered(receiver, path, 4)
        assert receiver.at(others) == []
        assert len(got) == 4, [g.json for g in got]
        by_order = sorted(got, key=lambda g: g.json["createdAt"])
        assert [(g.json["type"], g.json["data"]["comment"]) for g in by_order] == [
            ("comment.created", public),
            ("comment.created", note),
            ("comment.updated", edited),
            ("comment.deleted", public),
        ]
        assert [g.json["data"]["idea"]["commentCount"] for g in by_order] == [1, 1, 1, 0]
        doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
        for g in got:
            assert list(g.json["data"]) == ["comment", "idea"]
            assert g.json["data"]["idea"]["id"] == idea["id"]
            assert g.headers["X-Service-Event"] == g.json["type"] and verify(secret, g)
            post = doc["webhooks"][g.json["type"]]["post"]
            schema = {
                **post["requestBody"]["content"]["application/json"]["schema"],
                "components": doc["components"],
            }
            jsonschema.Draft202012Validator(schema).validate(g.json)
    finally:
        await receiver.stop()


async def test_add_comment_tool_is_the_rest_create(ws: Workspace) -> None:
    """`add_comment` takes `ideaId` (uuid or `IDEA-<n>`), `body`, `internal` and `userId`; its
    structuredContent is the Comment as the list shows it; a bad input is an error naming it."""
    api = ws.api
    idea = await new_idea(api, "Tool comment")
    async with mcp_session(api.base_url, ws.key) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        schema = tools["add_comment"].input_schema
        assert set(schema["properties"]) == {"ideaId", "body", "internal", "userId"}
        assert set(schema["required"]) == {"ideaId", "body"}
        made = await call(session, "add_comment", ideaId=idea["ideaServiceId"], body="From chat")
        assert made["author"] == {"type": "key", "id": ws.key_id, "name": "API key"}
        note = await call(session, "add_comment", ideaId=idea["id"], body="Note", internal=True)
        assert note["internal"] is True
        assert await listed(api, idea["id"]) == [made, note]
        err = await call_error(session, "add_comment", ideaId=idea["id"], body="")
        assert err["code"] == "validation_error" and err["field"] == "body"
        err = await call_error(session, "add_comment", ideaId=str(uuid.uuid4()), body="x")
        assert err["code"] == "not_found"
        err = await call_error(
            session, "add_comment", ideaId=idea["id"], body="x", userId=str(uuid.uuid4())
        )
        assert err["code"] == "not_found"
    assert await count(api, idea["id"]) == 1


def _user_comments(
    system: System, ws: Workspace, user_id: str, rows: list[tuple[str, str | None, bool]]
) -> list[str]:
    """Comments of an end user, written to the table as a comment with `userId` is stored:
    until `/users` is served, no API call names a user that exists. Each row is (idea id,
    parent id, internal); the ideas' counts are raised as the API would."""
    conn = psycopg2.connect(system.database_url)
    ids = []
    try:
        with conn, conn.cursor() as cur:
            for n, (idea_id, parent_id, internal) in enumerate(rows):
                ids.append(str(uuid.uuid4()))
                cur.execute(
                    "INSERT INTO ideas.comments (workspace_id, id, idea_id, parent_id, body,"
                    " internal, author_type, author_id, author_name)"
                    " VALUES (%s, %s, %s, %s, %s, %s, 'user', %s, 'Dana')",
                    (ws.id, ids[-1], idea_id, parent_id, f"user comment {n}", internal, user_id),
                )
                cur.execute(
                    "UPDATE ideas.ideas SET comment_count = comment_count + %s"
                    " WHERE workspace_id = %s AND id = %s",
                    (0 if internal else 1, ws.id, idea_id),
                )
    finally:
        conn.close()
    return ids


async def test_internal_routes_export_and_erase_a_users_comments(
    ws: Workspace, new_workspace: Any, system: System
) -> None:
    """`GET /internal/users/{userId}/comments` lists the user's comments on every idea, oldest
    first; `DELETE` removes exactly those (replies to them stay, `parentId` kept; each idea's
    `commentCount` follows; one `comment.deleted` each, internal ones too) and answers
    `{"removed": n}`, 0 on a repeat. Another workspace's user of the same id is untouched."""
    api = ws.api
    a, b = await new_idea(api, "A"), await new_idea(api, "B")
    user = str(uuid.uuid4())
    keys_comment = await comment(api, a["id"], "By the key")
    mine = _user_comments(
        system,
        ws,
        user,
        [(a["id"], None, False), (b["id"], None, True), (a["id"], keys_comment["id"], False)],
    )
    reply = await comment(api, a["id"], "Reply to the user", parentId=mine[0])
    theirs = await new_workspace()
    their_idea = await new_idea(theirs.api, "Theirs")
    _user_comments(system, theirs, user, [(their_idea["id"], None, False)])
    assert await count(api, a["id"]) == 4 and await count(api, b["id"]) == 0
    receiver = await Receiver().start()
    try:
        hook = receiver.new_path()
        r = await api.post(
            "/api/v1/webhooks",
            json={"targetUrl": receiver.url(hook), "events": ["comment.deleted"]},
        )
        assert r.status == 200, r.body
        headers = {"X-Ims-Internal-Token": system.internal_token, "X-Ims-Workspace-Id": ws.id}
        url = f"{system.service_url('ideas')}/internal/users/{user}/comments"
        async with aiohttp.ClientSession(headers=headers) as s:
            async with s.get(url) as resp:
                assert resp.status == 200
                exported = (await resp.json())["data"]
            assert [c["id"] for c in exported] == mine
            assert all(
                c["author"] == {"type": "user", "id": user, "name": "Dana"} for c in exported
            )
            assert exported == sorted(exported, key=order_key)
            listed_a = await listed(api, a["id"])
            assert [c for c in listed_a if c["id"] in mine] == [exported[0], exported[2]]
            async with s.delete(url) as resp:
                assert resp.status == 200
                assert await resp.json() == {"data": {"removed": 3}}
            async with s.get(url) as resp:
                assert (await resp.json())["data"] == []
            async with s.delete(url) as resp:
                assert await resp.json() == {"data": {"removed": 0}}
        async with aiohttp.ClientSession() as s:  # without the token: refused
            async with s.delete(url) as resp:
                assert resp.status == 401
        assert await listed(api, a["id"]) == [keys_comment, reply]
        assert reply["parentId"] == mine[0]
        assert await count(api, a["id"]) == 2 and await count(api, b["id"]) == 0
        assert len(await listed(theirs.api, their_idea["id"])) == 1
        got = await _delivered(receiver, hook, 3)
        assert sorted(g.json["data"]["comment"]["id"] for g in got) == sorted(mine)
        assert {
            g.json["data"]["comment"]["id"]: g.json["data"]["idea"]["commentCount"] for g in got
        } == {
            mine[0]: 2,
            mine[1]: 0,
            mine[2]: 2,
        }
    finally:
        await receiver.stop()


async def test_a_users_comments_author_export_and_erasure(
    ws: Workspace, new_workspace: Any
) -> None:
    """A comment with `userId` has the end user as its author (`{"type": "user", "id", "name"}`);
    another workspace's user is 404 on the comment; the user's export lists the comment, and
    the user's erasure removes it (a reply by someone else stays, its `parentId` kept) and takes
    it out of `commentCount`."""
    api = ws.api
    r = await api.post("/api/v1/users", json={"name": "Dana Reyes", "email": "dana@acme.test"})
    assert r.status == 200, r.body
    user = r.data
    idea = await new_idea(api)
    mine = await comment(api, idea["id"], "Dark mode please", userId=user["id"])
    assert mine["author"] == {"type": "user", "id": user["id"], "name": "Dana Reyes"}
    reply = await comment(api, idea["id"], "On the roadmap", parentId=mine["id"])
    assert reply["author"]["type"] == "key"
    assert await count(api, idea["id"]) == 2

    other = await new_workspace()
    r = await other.api.post(
        comments_path((await new_idea(other.api))["id"]),
        json={"body": "Not mine", "userId": user["id"]},
    )
    assert r.status == 404, r.body

    r = await api.get(f"/api/v1/users/{user['id']}/export")
    assert r.status == 200, r.body
    assert [c["id"] for c in r.data["comments"]] == [mine["id"]]

    r = await api.delete(f"/api/v1/users/{user['id']}")
    assert r.status == 200, r.body
    assert r.data["commentsRemoved"] == 1
    left = await listed(api, idea["id"])
    assert [c["id"] for c in left] == [reply["id"]] and left[0]["parentId"] == mine["id"]
    assert await count(api, idea["id"]) == 1
