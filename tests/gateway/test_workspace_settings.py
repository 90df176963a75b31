"""PATCH /workspace through the gateway (scope workspace:write): every setting written and
read back wherever it is read (GET /workspace, /automation/auth, the status new ideas start
in), at once on the gateway that took the change and within KEY_CACHE_TTL_S on the other;
slugs unique across workspaces (also under concurrency); bad bodies are 400 on the field."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from tests.support.api import Api, Workspace
from tests.support.processes import System

WS = "/api/v1/workspace"
# KEY_CACHE_TTL_S (2 s by default), and room for a busy machine.
TTL_S, SLACK_S = 2.0, 3.0


def refused(r: Any, status: int, code: str, field: str | None = None) -> bool:
    ok = r.status == status and r.error["code"] == code
    return ok and (field is None or r.error.get("field") == field)


async def test_patch_writes_each_setting_and_get_reads_it_back(api: Api) -> None:
    """Each field alone and all together; the answer is GET /workspace's, counts included;
    omitted fields stay; slug and defaultDestination may be cleared with null."""
    await api.post("/api/v1/ideas", json={"title": "Counted"})
    before = (await api.get(WS)).data
    assert (before["slug"], before["defaultDestination"], before["inboxMode"]) == (
        None,
        None,
        "direct",
    )
    assert before["publicSubmissionEnabled"] is False and before["ideasTotal"] == 1
    slug = f"acme-{uuid.uuid4().hex[:8]}"
    steps: list[dict[str, Any]] = [
        {"name": "Acme Renamed"},
        {"defaultDestination": "linear"},
        {"inboxMode": "review"},
        {"publicSubmissionEnabled": True},
        {"slug": slug},
        {"defaultDestination": None, "slug": None, "inboxMode": "direct", "name": "Acme"},
        {"name": "Acme", "defaultDestination": "jira", "publicSubmissionEnabled": False},
    ]
    expected = dict(before)
    for body in steps:
        r = await api.patch(WS, json=body)
        assert r.status == 200, (body, r.body)
        expected.update(body)
        assert r.data == expected, body
        assert list(r.data) == list(before)
        assert (await api.get(WS)).data == expected, body


async def test_the_inbox_mode_decides_new_ideas_status_at_once_and_on_every_gateway(
    ws: Workspace, system: System
) -> None:
    """After inboxMode review, ideas start `captured`: at once through the gateway that took
    the change (for every key of the workspace), within the key cache's TTL through the
    other, which had the key cached; the name follows alike (GET /workspace, /automation/auth)."""
    api, other_gw = ws.api, system.gateway_urls()[1]
    second = ws.api.with_key((await ws.new_key(system.database_url))["key"])
    for key_api in (api, second):  # both keys cached on both gateways
        for base in system.gateway_urls():
            assert (await key_api.get(WS, base_url=base)).data["inboxMode"] == "direct"
    r = await api.patch(WS, json={"inboxMode": "review", "name": "Reviewed"})
    assert r.status == 200 and r.data["inboxMode"] == "review", r.body
    changed_at = time.monotonic()
    for key_api in (api, second):
        idea = (await key_api.post("/api/v1/ideas", json={"title": "Right away"})).data
        assert idea["status"] == "captured"
        auth = (await key_api.get("/api/v1/automation/auth")).json
        assert auth["workspace"]["name"] == "Reviewed"
    while True:  # the other gateway: within the TTL
        seen = (await second.get(WS, base_url=other_gw)).data
        if seen["inboxMode"] == "review":
            break
        assert time.monotonic() - changed_at < TTL_S + SLACK_S, seen
        await asyncio.sleep(0.1)
    assert seen["name"] == "Reviewed"
    idea = (await second.post("/api/v1/ideas", json={"title": "There"}, base_url=other_gw)).data
    assert idea["status"] == "captured"
    await api.patch(WS, json={"inboxMode": "direct"})
    assert (await api.post("/api/v1/ideas", json={"title": "Back"})).data["status"] == "new"


async def test_slugs_are_unique_across_workspaces(api: Api, new_workspace: Any) -> None:
    """A slug another workspace has is 409 on `slug` and changes nothing; of concurrent claims
    of one slug exactly one wins; null frees it; a workspace may set its own slug again."""
    theirs = await new_workspace()
    slug = f"team-{uuid.uuid4().hex[:8]}"
    assert (await theirs.api.patch(WS, json={"slug": slug})).status == 200
    r = await api.patch(WS, json={"slug": slug, "name": "Not applied"})
    assert refused(r, 409, "conflict", "slug"), r.body
    mine = (await api.get(WS)).data
    assert mine["slug"] is None and mine["name"] != "Not applied"
    assert (await theirs.api.patch(WS, json={"slug": slug})).status == 200  # its own: no conflict
    assert (await theirs.api.patch(WS, json={"slug": None})).data["slug"] is None
    assert (await api.patch(WS, json={"slug": slug})).data["slug"] == slug

    contenders = [(await new_workspace()).api for _ in range(5)]
    race = f"race-{uuid.uuid4().hex[:8]}"
    rs = await asyncio.gather(*(c.patch(WS, json={"slug": race}) for c in contenders))
    assert sorted(r.status for r in rs) == [200, 409, 409, 409, 409], [r.body for r in rs]
    owners = [(await c.get(WS)).data["slug"] for c in contenders]
    assert owners.count(race) == 1 and owners.count(None) == 4


async def test_bodies_are_validated(api: Api) -> None:
    """400 `validation_error` naming the field; nothing changes."""
    before = (await api.get(WS)).data
    bad = [
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": None}, "name"),
        ({"defaultDestination": "trello"}, "defaultDestination"),
        ({"inboxMode": "moderated"}, "inboxMode"),
        ({"inboxMode": None}, "inboxMode"),
        ({"publicSubmissionEnabled": "yes"}, "publicSubmissionEnabled"),
        ({"publicSubmissionEnabled": 1}, "publicSubmissionEnabled"),
        ({"publicSubmissionEnabled": None}, "publicSubmissionEnabled"),
        ({"slug": "ab"}, "slug"),
        ({"slug": "a" * 51}, "slug"),
        ({"slug": "Acme"}, "slug"),
        ({"slug": "-acme"}, "slug"),
        ({"slug": "acme-"}, "slug"),
        ({"slug": "ac me"}, "slug"),
        ({"slug": 123}, "slug"),
        ({"plan": "enterprise"}, "plan"),
        ({"name": "ok", "shortCode": "X"}, "shortCode"),
    ]
    for body, field in bad:
        r = await api.patch(WS, json=body)
        assert refused(r, 400, "validation_error", field), (body, r.body)
    r = await api.patch(WS, json={})
    assert refused(r, 400, "validation_error"), r.body
    r = await api.request("PATCH", WS, body=b"", headers={"Content-Type": "application/json"})
    assert refused(r, 400, "validation_error", "body"), r.body
    r = await api.request("PATCH", WS, body=b"{nope", headers={"Content-Type": "application/json"})
    assert refused(r, 400, "invalid_json"), r.body
    assert (await api.get(WS)).data == before


async def test_needs_workspace_write_and_changes_only_the_callers_workspace(
    ws: Workspace, system: System, new_workspace: Any
) -> None:
    theirs = await new_workspace()
    their_before = (await theirs.api.get(WS)).data
    reader = ws.api.with_key(
        (await ws.new_key(system.database_url, scopes="workspace:read"))["key"]
    )
    r = await reader.patch(WS, json={"name": "Nope"})
    assert refused(r, 403, "insufficient_scope"), r.body
    r = await ws.api.patch(WS, json={"name": "Only mine", "inboxMode": "review"})
    assert r.status == 200 and r.data["id"] == ws.id
    assert (await theirs.api.get(WS)).data == their_before
    idea = (await theirs.api.post("/api/v1/ideas", json={"title": "Theirs"})).data
    assert idea["status"] == "new"


async def test_any_name_travels_and_every_route_still_answers(ws: Workspace) -> None:
    """A name with control characters, line breaks, white space at its ends, `%` and
    non-ASCII is kept exactly, and the workspace's requests still reach every service (the
    name rides in the caller headers: control characters there were a 400 from the service's
    HTTP parser, and a 500 on exports)."""
    api = ws.api
    for name in (" \x13Acme\x07 \r\nCo\t ", "Ünïcödé 🚀 100% %41", "a" * 100):
        r = await api.patch(WS, json={"name": name})
        assert r.status == 200 and r.data["name"] == name, r.body
        assert (await api.get(WS)).data["name"] == name
        assert (await api.get("/api/v1/automation/auth")).json["workspace"]["name"] == name
        idea = await api.post("/api/v1/ideas", json={"title": "Still here"})
        assert idea.status == 200, idea.body
        for path in ("/api/v1/customers", "/api/v1/webhooks", "/api/v1/export/ideas"):
            r = await api.get(path)
            assert r.status == 200, (path, r.body)
