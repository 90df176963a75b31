"""The four exports: rows, columns, filters, escaping, caps and the hourly window."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import orjson
import psycopg2
import pytest

from tests.support.api import Api, Resp, Workspace
from tests.support.processes import System

from .data import Db, ago, utc

E = "/api/v1/export"
DISPOSITION = re.compile(r'attachment; filename="(\w+)-(\d{4}-\d{2}-\d{2})\.(csv|json)"')


def rows(resp: Resp) -> list[dict[str, str]]:
    assert resp.status == 200, resp.body[:300]
    assert resp.headers["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(resp.body.decode("utf-8"))))


def header(resp: Resp) -> list[str]:
    return next(csv.reader(io.StringIO(resp.body.decode("utf-8"))))


async def test_ideas_json_is_a_bare_array_of_ideas_newest_first(api: Api, db: Db) -> None:
    """Deleted ideas are left out; every Idea field is there, RICE and validation nested."""
    old = db.idea(
        "Old",
        created_at=ago(3),
        category="ux",
        rice_reach=10,
        rice_impact=2,
        rice_confidence=0.5,
        rice_effort=1,
        rice_score=10,
        rice_priority="medium",
        validation_score=70,
        total_customer_arr=1234.5,
    )
    new = db.idea("New", created_at=ago(1), source="slack")
    db.idea("Gone", status="deleted", created_at=ago(2))
    r = await api.get(f"{E}/ideas")
    assert r.status == 200 and r.headers["Content-Type"].startswith("application/json")
    body = r.json
    assert [x["id"] for x in body] == [str(new), str(old)]
    o = body[1]
    assert o["rice"] == {
        "reach": 10,
        "impact": 2,
        "confidence": 0.5,
        "effort": 1,
        "score": 10,
        "priority": "medium",
        "source": None,
    }
    assert o["validation"] == {"score": 70, "evidenceCount": None}
    assert o["totalCustomerARR"] == 1234.5 and o["category"] == "ux"
    assert o["ideaServiceId"].startswith("IDEA-") and "tags" not in o
    assert "customerCount" not in o
    assert DISPOSITION.fullmatch(r.headers["Content-Disposition"]).group(1) == "ideas"  # type: ignore[union-attr]


async def test_ideas_csv_flattens_and_adds_tags_and_customer_counts(api: Api, db: Db) -> None:
    """CSV: a header row, rice.score as riceScore; tags joined by `;`; customerCount on demand."""
    a = db.idea("Tagged", rice_score=42.5, validation_score=80, created_at=ago(2))
    b = db.idea("Plain", created_at=ago(1))
    db.tag("beta", a)
    db.tag("alpha", a)
    db.link(a, db.customer("One"))
    db.link(a, db.customer("Two"))
    r = await api.get(
        f"{E}/ideas",
        params={"format": "csv", "include_tags": "true", "include_customer_count": "true"},
    )
    got = rows(r)
    cols = header(r)
    assert cols[:3] == ["id", "ideaServiceId", "title"] and cols[-2:] == ["tags", "customerCount"]
    assert "riceScore" in cols and "validationScore" in cols and "rice" not in cols
    assert [g["id"] for g in got] == [str(b), str(a)]
    # Numbers as the JSON writes them: a whole double without a fraction.
    assert got[1]["riceScore"] == "42.5" and got[1]["validationScore"] == "80"
    assert got[1]["tags"] == "alpha;beta" and got[1]["customerCount"] == "2"
    assert got[0]["tags"] == "" and got[0]["customerCount"] == "0"
    assert got[0]["summary"] == "" and got[0]["actionable"] == "true"
    m = DISPOSITION.fullmatch(r.headers["Content-Disposition"])
    assert m and m.group(1) == "ideas" and m.group(3) == "csv"
    j = await api.get(f"{E}/ideas", params={"include_tags": "1", "include_customer_count": "1"})
    assert j.json[1]["tags"] == ["alpha", "beta"] and j.json[1]["customerCount"] == 2


async def test_csv_guards_formulas_and_escapes_quotes_and_lines(api: Api, db: Db) -> None:
    """Cells starting with = + - @ tab or CR get a leading quote; CSV quoting survives."""
    titles = [
        '=HYPERLINK("http://x")',
        "+1 more",
        "-2 fewer",
        "@SUM(A1)",
        "\tindented",
        "\rcarriage",
        'say "hi", then\nleave',
        "plain = fine",
    ]
    for i, title in enumerate(titles):
        db.idea(title, created_at=ago(minutes=len(titles) - i))
    got = rows(await api.get(f"{E}/ideas", params={"format": "csv"}))
    assert [g["title"] for g in got] == [
        '\'=HYPERLINK("http://x")',
        "'+1 more",
        "'-2 fewer",
        "'@SUM(A1)",
        "'\tindented",
        "'\rcarriage",
        'say "hi", then\nleave',
        "plain = fine",
    ][::-1]


async def test_csv_numbers_and_booleans_are_written_as_they_are(api: Api, db: Db) -> None:
    """Only text cells are guarded: `-1` stays `-1`, a negative fraction and false likewise."""
    db.idea("-negative title", vote_count=-1, average_sentiment=-0.5, actionable=False)
    got = rows(await api.get(f"{E}/ideas", params={"format": "csv"}))[0]
    assert got["voteCount"] == "-1" and got["averageSentiment"] == "-0.5"
    assert got["actionable"] == "false"
    assert got["title"] == "'-negative title"


async def test_ideas_filters_status_category_source_range_and_limit(api: Api, db: Db) -> None:
    """Filters combine; status=deleted is the only way to see deleted ideas."""
    db.idea("a", category="ux", source="slack", created_at=utc(2024, 1, 1))
    db.idea("b", category="ux", source="api", created_at=utc(2024, 1, 2))
    db.idea("c", category="billing", source="slack", created_at=utc(2024, 1, 3))
    db.idea("d", status="deleted", category="ux", created_at=utc(2024, 1, 4))
    db.idea("e", status="planned", category="ux", created_at=utc(2024, 1, 5))

    async def titles(**params: Any) -> list[str]:
        r = await api.get(f"{E}/ideas", params=params)
        assert r.status == 200, r.body
        return [x["title"] for x in r.json]

    assert await titles(category="ux", source="slack") == ["a"]
    assert await titles(status="deleted") == ["d"]
    assert await titles(status="planned") == ["e"]
    assert await titles(start="2024-01-02T00:00:00Z", end="2024-01-03T00:00:00Z") == ["c", "b"]
    assert await titles(limit=2) == ["e", "c"]


async def test_customers_export_json_and_csv(api: Api, db: Db) -> None:
    """CustomerFull records; metadata is JSON in JSON and JSON text in CSV."""
    one = db.customer(
        "Acme",
        email="a@acme.io",
        arr=1200,
        mrr=100,
        plan="pro",
        metadata=psycopg2.extras.Json({"tier": 1}),
        created_at=ago(2),
    )
    db.customer("=Evil Corp", created_at=ago(1))
    db.link(db.idea(), one)
    r = await api.get(f"{E}/customers")
    body = r.json
    assert [c["name"] for c in body] == ["=Evil Corp", "Acme"]
    assert body[1] == {
        "id": str(one),
        "name": "Acme",
        "email": "a@acme.io",
        "domain": None,
        "arr": 1200,
        "mrr": 100,
        "plan": "pro",
        "source": "api",
        "externalId": None,
        "crmCompanyId": None,
        "ideaCount": 1,
        "metadata": {"tier": 1},
        "createdAt": body[1]["createdAt"],
        "updatedAt": None,
    }
    got = rows(await api.get(f"{E}/customers", params={"format": "csv", "limit": 5}))
    assert got[0]["name"] == "'=Evil Corp" and orjson.loads(got[1]["metadata"]) == {"tier": 1}
    assert got[1]["arr"] == "1200" and got[1]["ideaCount"] == "1"


async def test_decisions_export_decided_ideas_by_decided_at(api: Api, db: Db) -> None:
    """Decided ideas only, newest decision first, filtered on decidedAt."""
    a = db.idea(
        "A",
        status="shipped",
        closure_category="shipped",
        decided_at=utc(2024, 1, 10),
        decision_reason="Done",
        decision_owner_name="Alice",
    )
    db.idea("B", status="rejected", closure_category="rejected_scope", decided_at=utc(2024, 2, 10))
    db.idea("C")
    db.idea("D", status="deleted", decided_at=utc(2024, 1, 11))
    body = (await api.get(f"{E}/decisions")).json
    assert [d["title"] for d in body] == ["B", "A"]
    assert body[1] == {
        "id": str(a),
        "ideaServiceId": body[1]["ideaServiceId"],
        "title": "A",
        "status": "shipped",
        "decidedAt": "2024-01-10T00:00:00.000000Z",
        "closureCategory": "shipped",
        "decisionReason": "Done",
        "decisionOwnerName": "Alice",
    }
    got = rows(
        await api.get(
            f"{E}/decisions",
            params={
                "format": "csv",
                "start": "2024-01-01T00:00:00Z",
                "end": "2024-01-31T00:00:00Z",
            },
        )
    )
    assert [(g["title"], g["decidedAt"]) for g in got] == [("A", "2024-01-10T00:00:00.000000Z")]


async def test_signals_export_with_idea_context_and_platform(api: Api, db: Db) -> None:
    """Signals with ideaId, ideaServiceId and ideaTitle; platform and range filters."""
    idea = db.idea("Dark mode")
    s1 = db.signal(
        idea,
        "slack",
        content="-1 from me",
        sentiment="negative",
        sentiment_score=-0.5,
        detected_at=utc(2024, 1, 2),
    )
    db.signal(idea, "discord", detected_at=utc(2024, 1, 3))
    db.signal(db.idea(status="deleted"), "slack", detected_at=utc(2024, 1, 4))
    body = (await api.get(f"{E}/signals", params={"platform": "slack"})).json
    assert len(body) == 1
    assert body[0]["id"] == str(s1) and body[0]["ideaId"] == str(idea)
    assert body[0]["ideaTitle"] == "Dark mode" and body[0]["sentimentScore"] == -0.5
    got = rows(
        await api.get(f"{E}/signals", params={"format": "csv", "end": "2024-01-02T12:00:00Z"})
    )
    assert [g["platform"] for g in got] == ["slack"]
    assert got[0]["content"] == "'-1 from me" and got[0]["sentimentScore"] == "-0.5"
    assert got[0]["ideaTitle"] == "Dark mode"


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("ideas", {"limit": 10001}, "limit"),
        ("ideas", {"limit": 0}, "limit"),
        ("customers", {"format": "xml"}, "format"),
        ("ideas", {"status": "gone"}, "status"),
        ("signals", {"start": "2024-02-01T00:00:00Z", "end": "2024-01-01T00:00:00Z"}, "start"),
        ("decisions", {"include_tags": "true"}, "include_tags"),
    ],
)
async def test_bad_export_query_is_a_validation_error(
    new_workspace: Any, path: str, params: dict[str, Any], field: str
) -> None:
    ws: Workspace = await new_workspace(plan="pro")
    r = await ws.api.get(f"{E}/{path}", params=params)
    assert r.status == 400
    assert r.error == {"code": "validation_error", "message": r.error["message"], "field": field}


async def test_exports_cap_at_ten_thousand_records(api: Api, ws: Workspace, system: System) -> None:
    """The default and the maximum are 10,000 records, in both formats."""
    conn = psycopg2.connect(system.database_url)
    with conn, conn.cursor() as cur:
        cur.execute(
            """INSERT INTO ideas.ideas (workspace_id, id, number, title, title_key, status,
                                                created_at)
                       SELECT %s, gen_random_uuid(), 1000000 + n, 'Idea ' || n, 'idea', 'new',
                              now() - n * interval '1 second'
                         FROM generate_series(1, 10005) n""",
            (ws.id,),
        )
    conn.close()
    # 10,000 records are checked here by count and order; the shape checks run on small exports.
    body = (await api.get(f"{E}/ideas", check=False)).json
    assert len(body) == 10_000 and body[0]["title"] == "Idea 1"
    got = rows(await api.get(f"{E}/ideas", params={"format": "csv", "limit": 10000}))
    assert len(got) == 10_000 and got[-1]["title"] == "Idea 10000"


async def test_ten_exports_per_hour_shared_by_the_four_kinds(api: Api) -> None:
    """The eleventh export of the hour, whatever its kind, is 429 rate_limited."""
    kinds = ["ideas", "customers", "decisions", "signals"]
    for i in range(10):
        r = await api.get(f"{E}/{kinds[i % 4]}", params={"format": "csv" if i % 2 else "json"})
        assert r.status == 200, (i, r.body)
    for kind in kinds:
        r = await api.get(f"{E}/{kind}")
        assert (r.status, r.error["code"]) == (429, "rate_limited")
        assert int(r.headers["Retry-After"]) > 0
    assert (await api.get("/api/v1/analytics/summary")).status == 200
    assert orjson.loads((await api.get("/api/v1/analytics/roadmap")).body)["data"] is not None


@pytest.mark.parametrize(
    ("params", "accept", "want", "vary"),
    [
        ({}, "text/csv", "csv", True),
        ({}, "application/json", "json", True),
        ({}, "text/csv;q=0.5, application/json", "json", True),
        ({}, "application/json;q=0.2, text/*", "csv", True),
        ({}, "text/html", "json", True),
        ({}, None, "json", True),
        ({"format": "json"}, "text/csv", "json", False),
        ({"format": "csv"}, "application/json", "csv", False),
    ],
)
async def test_format_by_accept_when_format_is_absent(
    api: Api, db: Db, params: dict[str, str], accept: str | None, want: str, vary: bool
) -> None:
    """docs/analytics.md: Accept text/csv or application/json chooses the format; `format` wins."""
    db.idea("Chosen", created_at=ago(1))
    headers = {"Accept": accept} if accept else {}
    r = await api.get(f"{E}/ideas", params=params, headers=headers)
    assert r.status == 200
    if want == "csv":
        assert rows(r)[0]["title"] == "Chosen"
    else:
        assert r.headers["Content-Type"] == "application/json" and r.json[0]["title"] == "Chosen"
    assert DISPOSITION.fullmatch(r.headers["Content-Disposition"]).group(3) == want  # type: ignore[union-attr]
    assert ("Accept" in r.headers.get("Vary", "")) is vary
