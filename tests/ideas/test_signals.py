"""An idea's signals through the gateway: POST /ideas/{id}/signals and DELETE
/ideas/{id}/signals/{signalId} (scope ideas:write), the idea's signal figures at once (also under
concurrent creates and deletes), the body's rules, sentiment computed from the text only when
none is given, 404s and isolation, `idea.signal_detected` delivered to a subscriber, and the
`record_signal` MCP tool."""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from statistics import mean
from typing import Any

import jsonschema
import psycopg2

from tests.mcp.support import call, call_error, mcp_session
from tests.support.api import Api, Workspace
from tests.support.processes import ROOT
from tests.webhooks.support import Receiver, verify

FIGURES = ("signalCount", "lastSignalAt", "uniqueSourceCount", "averageSentiment")


def signals_path(idea_id: str) -> str:
    return f"/api/v1/ideas/{idea_id}/signals"


def ts(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def new_idea(api: Api, title: str = "Signals idea") -> dict[str, Any]:
    r = await api.post("/api/v1/ideas", json={"title": title})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def record(api: Api, idea_id: str, **body: Any) -> dict[str, Any]:
    r = await api.post(signals_path(idea_id), json={"platform": "slack", **body})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def figures(api: Api, idea_id: str) -> dict[str, Any]:
    """The idea's figures, as the list and the detail both show them (they must agree)."""
    detail = (await api.get(f"/api/v1/ideas/{idea_id}")).data
    listed = [i for i in (await api.get("/api/v1/ideas", params={"limit": 100})).data]
    one = [i for i in listed if i["id"] == idea_id]
    assert one and {k: one[0][k] for k in FIGURES} == {k: detail[k] for k in FIGURES}
    return {k: detail[k] for k in FIGURES}


async def all_signals(api: Api, idea_id: str) -> list[dict[str, Any]]:
    r = await api.get(signals_path(idea_id), params={"limit": 100})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


def expected(signals: list[dict[str, Any]]) -> dict[str, Any]:
    scores = [s["sentimentScore"] for s in signals if s["sentimentScore"] is not None]
    return {
        "signalCount": len(signals),
        "lastSignalAt": max((s["detectedAt"] for s in signals), default=None),
        "uniqueSourceCount": len({s["platform"] for s in signals}),
        "averageSentiment": mean(scores) if scores else None,
    }


def close(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for k in a:
        if isinstance(a[k], float) or isinstance(b[k], float):
            if a[k] is None or b[k] is None or abs(a[k] - b[k]) > 1e-9:
                return False
        elif a[k] != b[k]:
            return False
    return True


async def test_a_signal_raises_the_figures_and_its_deletion_takes_them_back(
    ws: Workspace,
) -> None:
    """Each create raises `signalCount`, sets `lastSignalAt` to the latest `detectedAt` (an
    older mention recorded later leaves it), `uniqueSourceCount` to the distinct platforms and
    `averageSentiment` to the mean score, nulls skipped; each delete takes its part back, down to
    no signal at all (nulls again)."""
    api = ws.api
    idea = await new_idea(api)
    assert await figures(api, idea["id"]) == {
        "signalCount": 0,
        "lastSignalAt": None,
        "uniqueSourceCount": 0,
        "averageSentiment": None,
    }
    now = datetime.now(UTC)
    a = await record(
        api,
        idea["id"],
        platform="slack",
        content="Please add dark mode",
        userId="U1",
        userName="Ann",
        userEmail="ann@example.com",
        sentimentScore=0.5,
        similarity=0.8,
        detectedAt=ts(now - timedelta(hours=1)),
    )
    assert a["platform"] == "slack" and a["content"] == "Please add dark mode"
    assert (a["userId"], a["userName"], a["userEmail"]) == ("U1", "Ann", "ann@example.com")
    assert (a["sentiment"], a["sentimentScore"], a["similarity"]) == (None, 0.5, 0.8)
    assert a["autoLinkedCustomerId"] is None
    assert a["detectedAt"] == ts(now - timedelta(hours=1))
    assert await figures(api, idea["id"]) == {
        "signalCount": 1,
        "lastSignalAt": a["detectedAt"],
        "uniqueSourceCount": 1,
        "averageSentiment": 0.5,
    }
    # no score: the average skips it; an older mention does not move lastSignalAt back
    b = await record(
        api,
        idea["id"],
        platform="slack",
        sentiment="negative",
        detectedAt=ts(now - timedelta(days=2)),
    )
    assert (b["sentiment"], b["sentimentScore"], b["similarity"]) == ("negative", None, 1.0)
    assert await figures(api, idea["id"]) == {
        "signalCount": 2,
        "lastSignalAt": a["detectedAt"],
        "uniqueSourceCount": 1,
        "averageSentiment": 0.5,
    }
    c = await record(api, idea["id"], platform="zendesk", sentimentScore=-0.25)
    # detectedAt defaults to now
    got = datetime.fromisoformat(c["detectedAt"].replace("Z", "+00:00"))
    assert abs((got - datetime.now(UTC)).total_seconds()) < 30
    assert await figures(api, idea["id"]) == {
        "signalCount": 3,
        "lastSignalAt": c["detectedAt"],
        "uniqueSourceCount": 2,
        "averageSentiment": 0.125,
    }
    listed = await all_signals(api, idea["id"])
    assert sorted(s["id"] for s in listed) == sorted(s["id"] for s in (a, b, c))
    assert [s for s in listed if s["id"] == a["id"]] == [a]

    r = await api.delete(f"{signals_path(idea['id'])}/{c['id']}")
    assert r.status == 200, r.body
    assert r.data == {"id": c["id"], "deleted": True}
    assert await figures(api, idea["id"]) == {
        "signalCount": 2,
        "lastSignalAt": a["detectedAt"],
        "uniqueSourceCount": 1,
        "averageSentiment": 0.5,
    }
    assert (await api.delete(f"{signals_path(idea['id'])}/{a['id']}")).status == 200
    assert await figures(api, idea["id"]) == {
        "signalCount": 1,
        "lastSignalAt": b["detectedAt"],
        "uniqueSourceCount": 1,
        "averageSentiment": None,
    }
    assert (await api.delete(f"{signals_path(idea['id'])}/{b['id']}")).status == 200
    assert await figures(api, idea["id"]) == {
        "signalCount": 0,
        "lastSignalAt": None,
        "uniqueSourceCount": 0,
        "averageSentiment": None,
    }
    assert await all_signals(api, idea["id"]) == []


async def test_concurrent_creates_and_deletes_keep_the_figures_exact(ws: Workspace) -> None:
    """24 creates at once, then 12 deletes beside 8 more creates: the figures are those of the
    signals that remain, exactly."""
    api = ws.api
    idea = await new_idea(api)
    now = datetime.now(UTC)

    def body(i: int) -> dict[str, Any]:
        return {
            "platform": f"p{i % 5}",
            "sentimentScore": round((i % 9) / 8 - 0.5, 3) if i % 4 else None,
            "detectedAt": ts(now - timedelta(minutes=i)),
        }

    answers = await asyncio.gather(
        *(api.post(signals_path(idea["id"]), json=body(i)) for i in range(24))
    )
    assert all(r.status == 200 for r in answers), [r.body for r in answers if r.status != 200]
    made = [r.data for r in answers]
    assert close(await figures(api, idea["id"]), expected(made))
    gone = made[:12]
    answers = await asyncio.gather(
        *(api.delete(f"{signals_path(idea['id'])}/{s['id']}") for s in gone),
        *(api.post(signals_path(idea["id"]), json=body(100 + i)) for i in range(8)),
    )
    assert all(r.status == 200 for r in answers), [r.body for r in answers if r.status != 200]
    remaining = await all_signals(api, idea["id"])
    assert len(remaining) == 20
    assert {s["id"] for s in remaining} == {s["id"] for s in made[12:]} | {
        r.data["id"] for r in answers[12:]
    }
    assert close(await figures(api, idea["id"]), expected(remaining))


async def test_the_body_is_validated_naming_the_field(ws: Workspace) -> None:
    """Every rule of the body is a 400 `validation_error` naming its field, and nothing is
    recorded."""
    api = ws.api
    idea = await new_idea(api)
    future = ts(datetime.now(UTC) + timedelta(minutes=5))
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "platform"),
        ({"platform": ""}, "platform"),
        ({"platform": "p" * 51}, "platform"),
        ({"platform": 5}, "platform"),
        ({"platform": "slack", "content": "c" * 10001}, "content"),
        ({"platform": "slack", "userId": "u" * 256}, "userId"),
        ({"platform": "slack", "userName": "u" * 256}, "userName"),
        ({"platform": "slack", "userEmail": "u" * 256}, "userEmail"),
        ({"platform": "slack", "sentiment": "great"}, "sentiment"),
        ({"platform": "slack", "sentimentScore": 1.5}, "sentimentScore"),
        ({"platform": "slack", "sentimentScore": -1.01}, "sentimentScore"),
        ({"platform": "slack", "sentimentScore": "0.5"}, "sentimentScore"),
        ({"platform": "slack", "similarity": -0.1}, "similarity"),
        ({"platform": "slack", "similarity": 1.2}, "similarity"),
        ({"platform": "slack", "detectedAt": future}, "detectedAt"),
        ({"platform": "slack", "detectedAt": "2024-01-01"}, "detectedAt"),
        ({"platform": "slack", "detectedAt": 1700000000}, "detectedAt"),
        ({"platform": "slack", "autoLinkedCustomerId": str(uuid.uuid4())}, "autoLinkedCustomerId"),
    ]
    for body, field in cases:
        r = await api.post(signals_path(idea["id"]), json=body)
        assert r.status == 400, (body, r.status, r.body)
        assert r.error["code"] == "validation_error" and r.error["field"] == field, (body, r.body)
    # the limits themselves are accepted
    ok = await record(
        api,
        idea["id"],
        platform="p" * 50,
        content="c" * 10000,
        userEmail="u" * 255,
        sentimentScore=-1,
        similarity=0,
    )
    assert (ok["sentimentScore"], ok["similarity"]) == (-1, 0)
    assert (await figures(api, idea["id"]))["signalCount"] == 1


async def test_sentiment_is_computed_from_the_text_only_when_none_is_given(ws: Workspace) -> None:
    """With `content` and neither `sentiment` nor `sentimentScore`, both come from the text:
    clear praise positive, clear complaint negative, a plain request neutral. One given: kept,
    the other null. No content: both null."""
    api = ws.api
    idea = await new_idea(api)
    praise = await record(
        api, idea["id"], content="I love the new dashboard, it makes my mornings so much easier."
    )
    assert praise["sentiment"] == "positive" and praise["sentimentScore"] > 0.4, praise
    complaint = await record(
        api, idea["id"], content="Terrible update, the export is broken and support ignores us."
    )
    assert complaint["sentiment"] == "negative" and complaint["sentimentScore"] < -0.4
    neutral = await record(api, idea["id"], content="Could you add a field for the due date?")
    assert neutral["sentiment"] == "neutral" and abs(neutral["sentimentScore"]) < 0.41
    long_text = "I love this feature, it is great. " * 290  # scored off the event loop
    long = await record(api, idea["id"], content=long_text)
    assert long["sentiment"] == "positive" and long["sentimentScore"] > 0.9
    assert -1 <= long["sentimentScore"] <= 1
    both = await record(
        api, idea["id"], content="I hate it", sentiment="positive", sentimentScore=0.9
    )
    assert (both["sentiment"], both["sentimentScore"]) == ("positive", 0.9)
    label_only = await record(api, idea["id"], content="I hate it", sentiment="neutral")
    assert (label_only["sentiment"], label_only["sentimentScore"]) == ("neutral", None)
    score_only = await record(api, idea["id"], content="I love it", sentimentScore=-0.3)
    assert (score_only["sentiment"], score_only["sentimentScore"]) == (None, -0.3)
    bare = await record(api, idea["id"])
    assert (bare["sentiment"], bare["sentimentScore"]) == (None, None)
    scores = [
        s["sentimentScore"]
        for s in (praise, complaint, neutral, long, both, label_only, score_only, bare)
        if s["sentimentScore"] is not None
    ]
    assert abs((await figures(api, idea["id"]))["averageSentiment"] - mean(scores)) < 1e-9


async def test_not_found_and_isolation(ws: Workspace, new_workspace: Any, system: Any) -> None:
    """An unknown idea, another workspace's idea or signal, another idea's signal, a signal
    deleted already: 404 `not_found`, and nothing changes on either side. A deleted idea takes
    signals as any idea. A key without `ideas:write`: 403."""
    api = ws.api
    mine, other_idea = await new_idea(api, "Mine"), await new_idea(api, "Other")
    s = await record(api, mine["id"])
    theirs = await new_workspace()
    their_idea = await new_idea(theirs.api, "Theirs")
    their_signal = await record(theirs.api, their_idea["id"])
    for path in (
        signals_path(str(uuid.uuid4())),
        signals_path(their_idea["id"]),
        signals_path("not-an-id"),
    ):
        r = await api.post(path, json={"platform": "slack"})
        assert r.status == 404 and r.error["code"] == "not_found", (path, r.body)
    for path in (
        f"{signals_path(mine['id'])}/{their_signal['id']}",
        f"{signals_path(their_idea['id'])}/{their_signal['id']}",
        f"{signals_path(other_idea['id'])}/{s['id']}",
        f"{signals_path(mine['id'])}/{uuid.uuid4()}",
        f"{signals_path(mine['id'])}/nope",
    ):
        r = await api.delete(path)
        assert r.status == 404 and r.error["code"] == "not_found", (path, r.body)
    reader = api.with_key((await ws.new_key(system.database_url, scopes="ideas:read"))["key"])
    r = await reader.post(signals_path(mine["id"]), json={"platform": "slack"})
    assert r.status == 403 and r.error["code"] == "insufficient_scope"
    r = await reader.delete(f"{signals_path(mine['id'])}/{s['id']}")
    assert r.status == 403 and r.error["code"] == "insufficient_scope"
    assert (await figures(api, mine["id"]))["signalCount"] == 1
    assert (await figures(api, other_idea["id"]))["signalCount"] == 0
    assert (await figures(theirs.api, their_idea["id"]))["signalCount"] == 1
    second = await record(api, mine["id"], platform="intercom")
    assert (await figures(api, mine["id"]))["uniqueSourceCount"] == 2
    r = await api.delete(f"{signals_path(mine['id'])}/{second['id']}")
    assert r.status == 200, r.body
    r = await api.delete(f"{signals_path(mine['id'])}/{s['id']}")
    assert r.status == 200
    r = await api.delete(f"{signals_path(mine['id'])}/{s['id']}")
    assert r.status == 404 and r.error["code"] == "not_found"
    # a deleted idea answers as any idea
    assert (await api.delete(f"/api/v1/ideas/{other_idea['id']}")).status == 200
    await record(api, other_idea["id"])
    assert (await api.get(f"/api/v1/ideas/{other_idea['id']}")).data["signalCount"] == 1


async def test_signal_detected_is_delivered_to_a_subscriber(ws: Workspace) -> None:
    """A subscriber to `idea.signal_detected` gets the new signal with the idea's new figures,
    signed and valid against the document's `webhooks` schema; a delete sends nothing."""
    api = ws.api
    receiver = await Receiver().start()
    try:
        path = receiver.new_path()
        r = await api.post(
            "/api/v1/webhooks",
            json={"targetUrl": receiver.url(path), "events": ["idea.signal_detected"]},
        )
        assert r.status == 200, r.body
        secret = r.data["secret"]
        idea = await new_idea(api, "Delivered signal")
        s = await record(api, idea["id"], platform="zendesk", sentimentScore=0.3)
        assert (await api.delete(f"{signals_path(idea['id'])}/{s['id']}")).status == 200
        deadline = time.monotonic() + 15
        while not receiver.at(path):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # nothing more comes
        got = receiver.at(path)
        assert len(got) == 1, [g.json for g in got]
        delivery = got[0]
        assert delivery.json["type"] == "idea.signal_detected"
        assert delivery.json["data"]["signal"] == s
        assert delivery.json["data"]["idea"]["id"] == idea["id"]
        assert delivery.json["data"]["idea"]["signalCount"] == 1
        assert delivery.json["data"]["idea"]["uniqueSourceCount"] == 1
        assert delivery.json["data"]["idea"]["averageSentiment"] == 0.3
        assert verify(secret, delivery)
        doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
        post = doc["webhooks"]["idea.signal_detected"]["post"]
        schema = {
            **post["requestBody"]["content"]["application/json"]["schema"],
            "components": doc["components"],
        }
        jsonschema.Draft202012Validator(schema).validate(delivery.json)
    finally:
        await receiver.stop()


async def test_record_signal_tool_is_the_rest_create(ws: Workspace) -> None:
    """`record_signal` takes `ideaId` (uuid or `IDEA-<n>`) and the signal body; its
    structuredContent is the Signal as the list shows it; a bad input is an error naming it."""
    api = ws.api
    idea = await new_idea(api, "Tool signal")
    async with mcp_session(api.base_url, ws.key) as session:
        signal = await call(
            session,
            "record_signal",
            ideaId=idea["ideaServiceId"],
            platform="intercom",
            content="Thanks, the new export is wonderful!",
            userEmail="kim@example.com",
        )
        assert signal["platform"] == "intercom" and signal["sentiment"] == "positive"
        assert await all_signals(api, idea["id"]) == [signal]
        err = await call_error(
            session, "record_signal", ideaId=idea["id"], platform="slack", sentimentScore=3
        )
        assert err["code"] == "validation_error" and err["field"] == "sentimentScore"
        err = await call_error(session, "record_signal", ideaId=str(uuid.uuid4()), platform="x")
        assert err["code"] == "not_found"
    assert (await figures(api, idea["id"]))["signalCount"] == 1


async def new_customer(api: Api, **fields: Any) -> dict[str, Any]:
    r = await api.post("/api/v1/customers", json={"name": f"c-{uuid.uuid4().hex[:6]}", **fields})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def known(api: Api, customers: list[dict[str, Any]]) -> None:
    """Wait until the ideas service has seen each customer's e-mail (a probe signal matches)."""
    probe = await new_idea(api, "Probe")
    for c in customers:
        deadline = time.monotonic() + 15
        while (await record(api, probe["id"], userEmail=c["email"]))["autoLinkedCustomerId"] != c[
            "id"
        ]:
            assert time.monotonic() < deadline, c
            await asyncio.sleep(0.1)


async def arr_within(api: Api, idea_id: str, arr: float) -> float:
    """Seconds until the idea's totalCustomerARR is `arr` (polled; at most 10 s)."""
    start = time.monotonic()
    while (await api.get(f"/api/v1/ideas/{idea_id}")).data["totalCustomerARR"] != arr:
        assert time.monotonic() - start < 10, "totalCustomerARR never followed"
        await asyncio.sleep(0.05)
    return time.monotonic() - start


async def linked(api: Api, idea_id: str) -> list[str]:
    r = await api.get(f"/api/v1/ideas/{idea_id}/customers", params={"limit": 100})
    assert r.status == 200, r.body
    return sorted(c["id"] for c in r.data)


async def test_customer_match_by_email_then_by_domain(ws: Workspace, new_workspace: Any) -> None:
    """A customer's e-mail (any case) matches; else a domain exactly one customer has, unless it
    is a public mail domain. The match is `autoLinkedCustomerId`, the customer is linked to the
    idea (a second match of a linked pair is no error) and `totalCustomerARR` follows within 1 s.
    Another workspace's customers never match."""
    api = ws.api
    acme = await new_customer(api, email="Buyer@Acme.example", domain="acme.example", arr=1000)
    globex = await new_customer(api, email="cto@globex.example", domain="Globex.example", arr=500)
    c1 = await new_customer(api, email="c1@shared.example", domain="shared.example", arr=7)
    c2 = await new_customer(api, email="c2@shared.example", domain="shared.example", arr=9)
    gmail = await new_customer(api, email="boss@gmail.com", domain="gmail.com", arr=3)
    theirs = await new_workspace()
    their = await new_customer(
        theirs.api, email="x@initech.example", domain="initech.example", arr=11
    )
    await known(theirs.api, [their])
    await known(api, [acme, globex, c1, c2, gmail])

    by_email = await new_idea(api, "Matched by e-mail")
    s = await record(api, by_email["id"], userEmail="BUYER@acme.EXAMPLE")
    assert s["autoLinkedCustomerId"] == acme["id"]
    assert await arr_within(api, by_email["id"], 1000) <= 1.0
    assert await linked(api, by_email["id"]) == [acme["id"]]
    # the same customer again, by its domain this time: no error, one link, the same ARR
    s = await record(api, by_email["id"], userEmail="someone.else@acme.example")
    assert s["autoLinkedCustomerId"] == acme["id"]
    by_domain = await new_idea(api, "Matched by domain")
    s = await record(api, by_domain["id"], userEmail="dev@globex.example")
    assert s["autoLinkedCustomerId"] == globex["id"]
    assert await arr_within(api, by_domain["id"], 500) <= 1.0
    assert await linked(api, by_domain["id"]) == [globex["id"]]

    none = await new_idea(api, "Matched by nobody")
    for email in (
        "x@shared.example",  # two customers have the domain
        "someone@gmail.com",  # public, though a customer has it as its domain
        "a@initech.example",  # another workspace's customer
        "not-an-email",
        "",
    ):
        s = await record(api, none["id"], userEmail=email)
        assert s["autoLinkedCustomerId"] is None, email
    assert (await record(api, none["id"]))["autoLinkedCustomerId"] is None
    # an exact e-mail wins over a shared domain
    exact = await new_idea(api, "Exact e-mail")
    s = await record(api, exact["id"], userEmail="C2@shared.example")
    assert s["autoLinkedCustomerId"] == c2["id"]
    assert await arr_within(api, exact["id"], 9) <= 1.0
    await asyncio.sleep(0.5)  # nothing else arrives for the unmatched ones
    assert await linked(api, none["id"]) == []
    assert (await api.get(f"/api/v1/ideas/{none['id']}")).data["totalCustomerARR"] is None
    assert await linked(api, by_email["id"]) == [acme["id"]]
    assert (await api.get(f"/api/v1/ideas/{by_email['id']}")).data["totalCustomerARR"] == 1000


async def test_customer_match_follows_a_changed_email(ws: Workspace) -> None:
    """A customer's new e-mail (PATCH, `customer.updated`) is the one that matches; the old one
    no longer does."""
    api = ws.api
    c = await new_customer(api, email="old@hooli.example", arr=42)
    await known(api, [c])
    r = await api.patch(f"/api/v1/customers/{c['id']}", json={"email": "New@Pied.example"})
    assert r.status == 200, r.body
    await known(api, [{**c, "email": "new@pied.EXAMPLE"}])
    idea = await new_idea(api, "After the change")
    assert (await record(api, idea["id"], userEmail="old@hooli.example"))[
        "autoLinkedCustomerId"
    ] is None


async def test_customers_from_before_the_contacts_match_after_the_rebuild(
    ws: Workspace, system: Any
) -> None:
    """Customers made before ideas migration 0650 have no contact keys in the ideas service:
    their e-mails match nothing until `ideasctl customers rebuild-projection`, which refills
    them (the documented upgrade step, docs/ideas.md)."""
    api = ws.api
    c = await new_customer(api, email="buyer@umbrella.example", domain="umbrella.example", arr=5)
    await known(api, [c])
    conn = psycopg2.connect(system.database_url)
    with conn, conn.cursor() as cur:  # as before the migration: the table had no rows
        cur.execute("DELETE FROM ideas.customer_contacts WHERE workspace_id = %s", (ws.id,))
    conn.close()
    idea = await new_idea(api, "Before the rebuild")
    for email in ("buyer@umbrella.example", "dev@umbrella.example"):
        assert (await record(api, idea["id"], userEmail=email))["autoLinkedCustomerId"] is None
    out = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.ctl",
        "customers",
        "rebuild-projection",
        "--workspace",
        ws.id,
        cwd=ROOT,
        env=system.env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await out.communicate()
    assert out.returncode == 0, err.decode()
    for email in ("buyer@umbrella.example", "dev@umbrella.example"):
        assert (await record(api, idea["id"], userEmail=email))["autoLinkedCustomerId"] == c["id"]
    assert await arr_within(api, idea["id"], 5) <= 1.0
