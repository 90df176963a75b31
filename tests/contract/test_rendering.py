"""One rendering (docs/api.md): every answer of a realistic session, every export and
every webhook payload is compact, lists each object's keys in the OpenAPI document's order for
its schema, and writes every date-time `YYYY-MM-DDTHH:MM:SS.ffffffZ`."""

from __future__ import annotations

import asyncio
import csv
import io
from datetime import UTC, datetime
from typing import Any

import psycopg2
import pytest

from libs.common.render import timestamp
from services.ctl.seed import seed
from tests.support.api import Api, Resp
from tests.support.processes import System
from tests.support.rendering import DATE_TIME, FormCheck
from tests.webhooks.support import Receiver

I = "/api/v1/ideas"
# docs/webhooks.md: the delivery envelope, and `data` of each event type.
ENVELOPE = ["id", "type", "createdAt", "workspaceId", "data"]
DATA = {
    "idea.status_changed": ["idea", "previousStatus"],
    "idea.voted": ["idea", "vote"],
    "idea.assigned": ["idea", "previousRoadmapStageId"],
    "idea.signal_detected": ["idea", "signal"],
    "customer.created": ["customer"],
    "customer.updated": ["customer"],
    "comment.created": ["comment", "idea"],
    "comment.updated": ["comment", "idea"],
    "comment.deleted": ["comment", "idea"],
}


class Recorder(Api):
    """An API client that keeps every answer it got."""

    def __init__(self, api: Api) -> None:
        super().__init__(api.session, api.base_url, api.key, api.openapi)
        self.seen: list[tuple[str, str, Resp]] = []

    async def request(self, method: str, path: str, **kw: Any) -> Resp:
        resp = await super().request(method, path, **kw)
        self.seen.append((method, path, resp))
        return resp


@pytest.fixture
async def receiver() -> Any:
    r = await Receiver().start()
    yield r
    await r.stop()


def test_sql_and_python_write_a_date_time_alike(system: System) -> None:
    """public.ims_json_ts (SQL) and render.timestamp (Python) give the same text."""
    moments = [
        datetime(2024, 5, 1, 9, 30, tzinfo=UTC),
        datetime(2024, 5, 1, 9, 30, 0, 120000, tzinfo=UTC),
        datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime.fromisoformat("2024-02-29T23:00:00.000001-05:00"),
    ]
    conn = psycopg2.connect(system.database_url, options="-c timezone=Asia/Kolkata")
    with conn, conn.cursor() as cur:
        for moment in moments:
            cur.execute("SELECT ims_json_ts(%s)", (moment,))
            sql = cur.fetchone()[0]
            assert sql == timestamp(moment) and DATE_TIME.match(sql), (moment, sql)
    conn.close()
    assert timestamp(moments[3]) == "2024-03-01T04:00:00.000001Z"


async def scenario(api: Api, system: System, ws_id: str, hook_url: str) -> dict[str, Any]:
    """A realistic session that reaches every route of the route table at least once."""
    sub = (
        await api.post(
            "/api/v1/webhooks",
            json={
                "name": "all",
                "targetUrl": hook_url,
                "events": list(DATA)
                + ["idea.created", "idea.updated", "idea.scored", "idea.deleted"],
            },
        )
    ).data
    conn = psycopg2.connect(system.database_url)
    try:
        seed(conn, ws_id, 40, 8, 7)  # every resource with realistic rows, dates in the past
    finally:
        conn.close()
    await api.get("/api/v1/automation/auth")
    idea = (
        await api.post(
            I,
            json={
                "title": "Dark mode",
                "summary": "Please add one",
                "category": "feature",
                "url": "https://x.example/1",
            },
        )
    ).data
    path = f"{I}/{idea['id']}"
    batch = (await api.post(f"{I}/batch", json={"ideas": [{"title": "A"}, {"title": "B"}]})).data
    await api.patch(
        path,
        json={
            "riceReach": 500,
            "riceImpact": 2,
            "riceConfidence": 0.8,
            "riceEffort": 4,
            "status": "planned",
            "decisionReason": "Q3",
        },
    )
    await api.patch(path, json={"status": "shipped"})
    await api.post(f"{path}/vote", json={"voter": "ada", "value": 1})
    await api.get(f"{path}/votes")
    await api.post(f"{path}/vote", json={"voter": "eve", "value": -1})
    await api.delete(f"{path}/vote", params={"voter": "eve"})
    tag = (await api.post("/api/v1/tags", json={"name": "rendering", "color": "#6366f1"})).data
    await api.patch(f"/api/v1/tags/{tag['id']}", json={"name": "Rendering"})
    await api.patch(path, json={"tagIds": [tag["id"]]})
    spare = (await api.post("/api/v1/tags", json={"name": "spare"})).data
    await api.delete(f"/api/v1/tags/{spare['id']}")
    product = (await api.post("/api/v1/products", json={"name": "Rendering"})).data
    await api.patch(f"/api/v1/products/{product['id']}", json={"name": "Rendered"})
    owner = (
        await api.post("/api/v1/members", json={"name": "Rita", "email": "rita@render.example"})
    ).data
    await api.patch(
        path,
        json={
            "productId": product["id"],
            "decisionOwnerId": owner["id"],
            "decisionDeadline": "2031-01-02T03:04:05.123456+01:00",
            "ideaType": "request",
            "validationScore": 55.5,
        },
    )
    await api.patch(f"/api/v1/members/{owner['id']}", json={"role": "admin"})
    spare = (await api.post("/api/v1/products", json={"name": "spare"})).data
    await api.delete(f"/api/v1/products/{spare['id']}")
    spare = (
        await api.post("/api/v1/members", json={"name": "S", "email": "s@render.example"})
    ).data
    await api.delete(f"/api/v1/members/{spare['id']}")
    stages = (await api.get("/api/v1/roadmap/stages")).data
    await api.put(f"{path}/roadmap", json={"stageId": stages[0]["id"]})
    beta = (
        await api.post("/api/v1/roadmap/stages", json={"name": "Beta", "color": "#f59e0b"})
    ).data
    await api.patch(f"/api/v1/roadmap/stages/{beta['id']}", json={"position": 0})
    await api.put(f"{path}/roadmap", json={"stageId": beta["id"]})
    await api.delete(f"/api/v1/roadmap/stages/{beta['id']}")  # idea.assigned, unstaged
    await api.put(f"{path}/roadmap", json={"stageId": stages[0]["id"]})
    await api.patch("/api/v1/workspace", json={"name": "Rendering", "defaultDestination": "jira"})
    customer = (
        await api.post(
            "/api/v1/customers",
            json={
                "name": "Globex",
                "email": "it@globex.example",
                "arr": 120000.5,
                "mrr": 10000,
                "plan": "pro",
                "externalId": "gx-1",
                "metadata": {"tier": "gold", "seats": 5, "nested": {"b": 1, "a": [1, 2.5]}},
            },
        )
    ).data
    cpath = f"/api/v1/customers/{customer['id']}"
    await api.patch(cpath, json={"arr": 130000})
    await api.post(f"{path}/customers", json={"customerId": customer["id"]})
    seeded_customer = next(
        c["id"]
        for c in (await api.get("/api/v1/customers", params={"limit": 2})).data
        if c["id"] != customer["id"]
    )
    r = await api.post(f"{path}/customers", json={"customerId": seeded_customer})
    assert r.status == 200, r.body
    await api.delete(f"{path}/customers/{seeded_customer}")
    await api.get(cpath)
    await api.get(f"{cpath}/ideas")
    await api.get(f"{path}/customers")
    await api.get("/api/v1/customers", params={"limit": 3})
    user = (
        await api.post(
            "/api/v1/users",
            json={
                "name": "Dana",
                "email": "dana@render.example",
                "customerId": customer["id"],
                "metadata": {"b": 1, "a": [1, 2.5]},
            },
        )
    ).data
    upath = f"/api/v1/users/{user['id']}"
    await api.post("/api/v1/users/identify", json={"email": "DANA@render.example", "name": "D"})
    await api.post("/api/v1/users/identify", json={"externalId": "chat-1"})
    await api.patch(upath, json={"avatarUrl": "https://cdn.render.example/dana.png"})
    await api.get(upath)
    await api.get("/api/v1/users", params={"search": "dana", "customer_id": customer["id"]})
    await api.post(f"{path}/vote", json={"userId": user["id"], "value": 1})
    await api.get(f"{path}/votes")
    asked = (
        await api.post(f"{I}/batch", json={"ideas": [{"title": "Asked", "userId": user["id"]}]})
    ).data["ideas"][0]
    await api.delete(f"{I}/{asked['id']}/vote", params={"userId": user["id"]})
    await api.post(f"{I}/{asked['id']}/vote", json={"userId": user["id"], "value": -1})
    gone = (await api.post("/api/v1/users", json={"name": "Gone", "email": "gone@r.example"})).data
    await api.post(f"{I}/{asked['id']}/vote", json={"userId": gone["id"]})
    await api.post(
        f"{I}/{asked['id']}/signals",
        json={"platform": "chat", "userEmail": "gone@r.example", "userName": "Gone"},
    )
    await api.get(f"/api/v1/users/{gone['id']}/export")
    await api.delete(f"/api/v1/users/{gone['id']}")
    await api.post(
        "/api/v1/automation/ideas",
        json={"title": "From chat", "url": "https://c/1", "authorName": "Grace", "source": "slack"},
    )
    await api.post(
        "/api/v1/automation/ideas",
        json={"title": "Again", "url": "https://c/1", "source": "discord"},
    )
    await api.get("/api/v1/automation/ideas")
    hook = (
        await api.post(
            "/api/v1/automation/webhooks/subscribe", json={"hookUrl": "https://127.0.0.1:9/h"}
        )
    ).json
    await api.delete(f"/api/v1/automation/webhooks/subscribe/{hook['id']}")
    page = (await api.get(I, params={"limit": 5})).json
    await api.get(I, params={"limit": 5, "cursor": page["pagination"]["nextCursor"]})
    pat, sam = [
        (await api.post("/api/v1/members", json={"name": n, "email": f"{n}@render.example"})).data
        for n in ("Pat", "Sam")
    ]
    for sub_path, kept, spare in (
        (
            "signals",
            {
                "platform": "slack",
                "content": "Dark mode would save my eyes",
                "userEmail": "dana@render.example",
                "detectedAt": "2026-01-02T03:04:05.5+01:00",
            },
            {"platform": "zendesk", "content": "Spare", "sentiment": "neutral"},
        ),
        (
            "evidence",
            {"type": "link", "title": "Thread", "url": "https://forum.example/t/1"},
            {"type": "quote", "title": "Spare"},
        ),
        (
            "support-tickets",
            {"platform": "zendesk", "externalId": "48213", "subject": "Dark?", "status": "open"},
            {"platform": "zendesk", "externalId": "spare", "subject": "Spare"},
        ),
        (
            "meetings",
            {
                "title": "Review",
                "meetingDate": "2031-01-02T03:04:05.5+01:00",
                "participants": ["A"],
            },
            {"title": "Spare", "meetingDate": "2031-01-02T03:04:05Z"},
        ),
        (
            "participants",
            {"memberId": pat["id"], "role": "approver"},
            {"memberId": sam["id"], "role": "reviewer"},
        ),
    ):
        one = (await api.post(f"{path}/{sub_path}", json=kept)).data
        other = (await api.post(f"{path}/{sub_path}", json=spare)).data
        await api.delete(f"{path}/{sub_path}/{other['id']}")
    await api.patch(f"{path}/participants/{one['id']}", json={"decision": "approved"})
    top = (await api.post(f"{path}/comments", json={"body": "When does it ship?"})).data
    reply = (
        await api.post(
            f"{path}/comments", json={"body": "Soon", "parentId": top["id"], "internal": True}
        )
    ).data
    await api.patch(f"{path}/comments/{reply['id']}", json={"body": "Q3"})
    spare = (await api.post(f"{path}/comments", json={"body": "Spare"})).data
    await api.delete(f"{path}/comments/{spare['id']}")
    await api.get(f"{path}/comments", params={"internal": "true"})
    seeded = [i["id"] for i in (await api.get(I, params={"limit": 100})).data]
    for sub_path in (
        "",
        "/signals",
        "/decisions",
        "/evidence",
        "/participants",
        "/meetings",
        "/support-tickets",
        "/comments",
    ):
        for some in seeded[:12] + [idea["id"]]:  # seeded ideas have the sub-resources
            await api.get(f"{I}/{some}{sub_path}")
    for name in ("workspace", "tags", "products", "members"):
        await api.get(f"/api/v1/{name}")
    for name in (
        "summary",
        "ideas-over-time",
        "decisions",
        "funnel",
        "signals",
        "roadmap",
        "revenue-impact",
        "categories",
    ):
        await api.get(f"/api/v1/analytics/{name}")
    twin = (
        await api.post(
            f"{I}/batch", json={"ideas": [{"title": "Dark theme", "summary": "A darker look"}]}
        )
    ).data["ideas"][0]
    await api.post(f"{I}/{twin['id']}/vote", json={"voter": "bob", "value": 1})
    await api.post(f"{I}/{twin['id']}/merge", json={"intoId": idea["id"]})
    await api.post(f"{I}/{twin['id']}/unmerge")
    await api.get(f"{path}/similar", params={"limit": 3})
    await api.post(f"{I}/similar", json={"title": "Night mode", "limit": 3})
    await api.patch(
        f"{I}/batch/status",
        json={"ids": [b["id"] for b in batch["ideas"]], "status": "archived", "reason": "dup"},
    )
    await api.delete(f"{I}/{batch['ideas'][0]['id']}")
    await api.get(f"{I}/not-a-uuid")  # an error answer is rendered the same way
    await api.get("/api/v1/webhooks")
    return sub  # type: ignore[no-any-return]


async def test_every_answer_payload_and_export_has_the_one_form(
    new_workspace: Any, system: System, receiver: Receiver
) -> None:
    """Keys in the document's order, compact, date-times in the one form, everywhere."""
    ws = await new_workspace()
    api = Recorder(ws.api)
    hook_path = receiver.new_path()
    sub = await scenario(api, system, ws.id, receiver.url(hook_path))
    check = FormCheck(api.openapi.doc)  # type: ignore[union-attr]

    exports = await check_exports(api, check)
    deliveries = await every_type(receiver, hook_path)
    await asyncio.sleep(0.5)  # the last deliveries are recorded; the detail lists them
    await api.get(f"/api/v1/webhooks/{sub['id']}")
    # the self-service routes: the delivery log, a delivery, a redelivery, a ping, a rotation
    page = (await api.get(f"/api/v1/webhooks/{sub['id']}/deliveries", params={"limit": 5})).json[
        "data"
    ]
    one = next(d for d in page if d["status"] != "pending")
    await api.get(f"/api/v1/webhooks/{sub['id']}/deliveries/{one['id']}")
    r = await api.post(f"/api/v1/webhooks/{sub['id']}/deliveries/{one['id']}/redeliver")
    assert r.status == 202, r.body
    await api.post(f"/api/v1/webhooks/{sub['id']}/test")
    await api.post(f"/api/v1/webhooks/{sub['id']}/rotate-secret", json={"expiresInSeconds": 0})
    await api.patch(f"/api/v1/webhooks/{sub['id']}", json={"name": "Renamed"})
    await api.delete(f"/api/v1/webhooks/{sub['id']}")
    r = await api.post(
        "/api/v1/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert r.status == 200, r.body

    covered = set()
    for method, path, resp in api.seen:
        op = api.openapi.operation(method, path)  # type: ignore[union-attr]
        if op is not None and resp.status < 400:
            covered.add(op["operationId"])
        if resp.headers.get("Content-Type", "").startswith("application/json"):
            schema = check.response_schema(method, path, resp.status)
            check.body(resp.body, schema, f"{method} {path} {resp.status}")
    documented = {
        op["operationId"]
        for p in api.openapi.doc["paths"].values()  # type: ignore[union-attr]
        for op in p.values()
    } - {"openapi"}
    assert covered == documented, f"extend the scenario to {sorted(documented - covered)}"

    answered = {(m, p): r.body for m, p, r in api.seen if r.status < 300}
    for got in deliveries:
        event = check.body(got.body, {}, f"delivery {got.json['type']}")
        if list(event) != ENVELOPE:
            check.problems.append(f"delivery {event['type']}: keys {list(event)}")
        data = event["data"]
        if list(data) != DATA.get(event["type"], ["idea"]):
            check.problems.append(f"delivery {event['type']}: data keys {list(data)}")
        for key, name in (
            ("idea", "Idea"),
            ("customer", "CustomerFull"),
            ("signal", "Signal"),
            ("comment", "Comment"),
        ):
            if key in data:
                check.value(data[key], check.schema(name), f"delivery {event['type']}.{key}")
        if "vote" in data and list(data["vote"]) != ["voter", "value"]:
            check.problems.append(f"delivery idea.voted: vote keys {list(data['vote'])}")
        # A payload's Idea or CustomerFull is the very text the API answered with.
        if event["type"] == "idea.created" and data["idea"]["title"] == "Dark mode":
            assert inner(answered[("POST", I)]) in got.body
        if event["type"] == "customer.created":
            assert inner(answered[("POST", "/api/v1/customers")]) in got.body
    assert check.problems == []
    assert check.objects > 500 and check.date_times > 500, (check.objects, check.date_times)
    assert exports == 9


def inner(body: bytes) -> bytes:
    """The `data` member's text of a `{"data": ...}` body."""
    assert body.startswith(b'{"data":') and body.endswith(b"}")
    return body[len(b'{"data":') : -1]


async def every_type(receiver: Receiver, path: str, timeout: float = 20.0) -> list[Any]:
    """The deliveries at `path` once every event type of the scenario has arrived."""
    want = set(DATA) | {"idea.created", "idea.updated", "idea.scored", "idea.deleted"}
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got = receiver.at(path)
        missing = want - {r.json["type"] for r in got}
        if not missing:
            await asyncio.sleep(0.5)  # stragglers of the same burst
            return receiver.at(path)
        assert asyncio.get_running_loop().time() < deadline, f"no delivery of {missing}"
        await asyncio.sleep(0.2)


async def check_exports(api: Api, check: FormCheck) -> int:
    """Every export in JSON and CSV: records in the one form; CSV date-times likewise."""
    kinds = [
        ("ideas", {"include_tags": "true", "include_customer_count": "true"}),
        ("ideas", {}),
        ("customers", {}),
        ("decisions", {}),
        ("signals", {}),
    ]
    n = 0
    for kind, extra in kinds:
        path = f"/api/v1/export/{kind}"
        r = await api.get(path, params={"format": "json", **extra}, check=False)
        assert r.status == 200 and r.body.startswith(b"[{"), (kind, r.body[:200])
        check.body(r.body, check.response_schema("GET", path, 200), f"export {kind}")
        n += 1
        if extra:
            continue
        r = await api.get(path, params={"format": "csv"}, check=False)
        assert r.status == 200
        table = list(csv.reader(io.StringIO(r.body.decode())))
        assert len(table) > 2, kind
        for row in table[1:]:
            for column, cell in zip(table[0], row, strict=True):
                check.string(
                    cell,
                    f"export {kind}.csv {column}",
                    column.endswith(("At", "Deadline")) and cell != "",
                )
        n += 1
    return n
