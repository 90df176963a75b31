"""docs/analytics.md, rule by rule, where tests/analytics does not already pin them:
defaults of each dated report, validation of every dated report, averages and buckets of an
empty workspace, `active` as the workspace's `activeIdeas`, all-time reports, overdue, the
export scopes, caps and headers, the exact record keys, and the CSV guard on every cell."""

from __future__ import annotations

import csv
import io
import itertools
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from tests.analytics.data import Db, ago, utc
from tests.support.api import Api, Resp, Workspace
from tests.support.openapi_check import OpenApi
from tests.support.processes import System

A = "/api/v1/analytics"
E = "/api/v1/export"
DATED = ("ideas-over-time", "decisions", "funnel", "signals", "categories")
KINDS = ("ideas", "customers", "decisions", "signals")
SIGNAL_FIELDS = {
    "id",
    "platform",
    "userId",
    "userName",
    "userEmail",
    "content",
    "similarity",
    "sentiment",
    "sentimentScore",
    "autoLinkedCustomerId",
    "detectedAt",
    "createdAt",
}


@pytest.fixture
def db(ws: Workspace, system: System) -> Any:
    d = Db(system.database_url, ws.id)
    yield d
    d.close()


def csv_rows(resp: Resp) -> list[list[str]]:
    assert resp.status == 200, resp.body[:300]
    assert resp.headers["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.reader(io.StringIO(resp.body.decode("utf-8"))))


def iso_day(text: str) -> date:
    return date.fromisoformat(text)


# ---- section 8: ranges, enums, defaults --------------------------------------------------


@pytest.mark.parametrize("report", DATED)
async def test_start_after_end_and_over_two_years_on_every_dated_report(
    api: Api, report: str
) -> None:
    r = await api.get(
        f"{A}/{report}", params={"start": "2024-03-02T00:00:00Z", "end": "2024-03-01T00:00:00Z"}
    )
    assert (r.status, r.error["code"], r.error["field"]) == (400, "validation_error", "start")
    r = await api.get(
        f"{A}/{report}", params={"start": "2020-01-01T00:00:00Z", "end": "2022-06-01T00:00:00Z"}
    )
    assert (r.status, r.error["code"]) == (400, "validation_error")
    assert r.error["field"] in ("start", "end")


@pytest.mark.parametrize("report", ("decisions", "signals"))
async def test_period_enum_on_decisions_and_signals(api: Api, report: str) -> None:
    r = await api.get(f"{A}/{report}", params={"period": "quarter"})
    assert (r.status, r.error["code"], r.error["field"]) == (400, "validation_error", "period")
    assert (await api.get(f"{A}/{report}", params={"period": "day"})).status == 200


async def test_default_periods_and_ranges_of_decisions_and_signals(api: Api) -> None:
    """Decisions default to months, signals to weeks (Mondays); both cover the last 90 days."""
    today = datetime.now(UTC).date()
    first = today - timedelta(days=90)
    months = [iso_day(b["start"]) for b in (await api.get(f"{A}/decisions")).data["overTime"]]
    assert all(m.day == 1 for m in months) and months == sorted(months)
    assert months[0] == first.replace(day=1) and months[-1] == today.replace(day=1)
    weeks = [iso_day(b["start"]) for b in (await api.get(f"{A}/signals")).data["overTime"]]
    assert all(w.weekday() == 0 for w in weeks)
    assert all(b - a == timedelta(days=7) for a, b in itertools.pairwise(weeks))
    assert weeks[0] == first - timedelta(days=first.weekday())
    assert weeks[-1] == today - timedelta(days=today.weekday())


async def test_funnel_and_categories_default_to_the_last_90_days(api: Api, db: Db) -> None:
    db.idea(category="ux", created_at=ago(89))
    db.idea(category="ux", created_at=ago(91))
    f = (await api.get(f"{A}/funnel")).data
    assert sum(s["count"] for s in f["stages"]) == 1
    assert (await api.get(f"{A}/categories")).data[0]["ideaCount"] == 1


async def test_empty_workspace_averages_are_null_and_buckets_zero(api: Api) -> None:
    """Nothing to average: null; every bucket present with zero."""
    params = {"start": "2024-01-01T00:00:00Z", "end": "2024-01-21T00:00:00Z"}
    d = (await api.get(f"{A}/decisions", params={**params, "period": "week"})).data
    assert d == {
        "summary": {"total": 0, "averageDaysToDecision": None, "byOutcome": {}},
        "byOwner": [],
        "overTime": [{"start": s, "count": 0} for s in ("2024-01-01", "2024-01-08", "2024-01-15")],
    }
    f = (await api.get(f"{A}/funnel", params=params)).data
    assert f["averageDays"] == {
        "capturedToDecided": None,
        "capturedToShipped": None,
        "decidedToShipped": None,
    }
    assert all(s["averageRiceScore"] is None and s["count"] == 0 for s in f["stages"])
    s = (await api.get(f"{A}/signals", params=params)).data
    assert s["overTime"] == [
        {"start": d, "count": 0, "averageSentiment": None}
        for d in ("2024-01-01", "2024-01-08", "2024-01-15")
    ]
    assert s["byPlatform"] == [] and s["bySentiment"] == []
    rice = (await api.get(f"{A}/summary")).data["rice"]
    assert rice == {
        "averageReach": None,
        "averageImpact": None,
        "averageConfidence": None,
        "averageEffort": None,
        "averageScore": None,
        "scoredCount": 0,
    }


async def test_group_by_product_and_breakdown_only_with_group_by(api: Api, db: Db) -> None:
    product = uuid.uuid4()
    db.idea(product_id=product, created_at=utc(2024, 1, 1, 9))
    db.idea(created_at=utc(2024, 1, 1, 10))
    params = {"period": "month", "start": "2024-01-01T00:00:00Z", "end": "2024-02-01T00:00:00Z"}
    r = (await api.get(f"{A}/ideas-over-time", params={**params, "group_by": "product"})).data
    assert r["groupBy"] == "product"
    assert r["buckets"][0]["count"] == 2
    assert r["buckets"][0]["breakdown"][str(product)] == 1
    assert sum(r["buckets"][0]["breakdown"].values()) == 2
    assert r["buckets"][1] == {"start": "2024-02-01", "count": 0, "breakdown": {}}
    plain = (await api.get(f"{A}/ideas-over-time", params=params)).data
    assert plain["groupBy"] is None and all("breakdown" not in b for b in plain["buckets"])


# ---- section 8: meanings -------------------------------------------------------------------


async def test_active_is_the_workspace_active_ideas(api: Api) -> None:
    ids = []
    for title in ("a", "b", "c", "d", "e"):
        r = await api.post("/api/v1/ideas", json={"title": title})
        assert r.status == 200, r.body
        ids.append(r.data["id"])
    for idea_id, status in zip(
        ids[:4], ("planned", "shipped", "rejected", "in_progress"), strict=True
    ):
        assert (await api.patch(f"/api/v1/ideas/{idea_id}", json={"status": status})).status == 200
    assert (await api.delete(f"/api/v1/ideas/{ids[4]}")).status == 200
    info = (await api.get("/api/v1/workspace")).data
    ideas = (await api.get(f"{A}/summary")).data["ideas"]
    assert ideas["active"] == info["activeIdeas"] == 2
    assert ideas["total"] == info["ideasTotal"] == 4
    assert ideas["thisMonth"] == info["ideasThisMonth"] == 4


async def test_summary_roadmap_and_revenue_cover_all_time(api: Api, db: Db) -> None:
    """An idea made three years ago counts in the reports without a range."""
    db.idea(
        category="old",
        total_customer_arr=700,
        customer_count=1,
        created_at=ago(3 * 365),
        status="shipped",
        shipped_at=ago(3 * 365),
    )
    s = (await api.get(f"{A}/summary")).data
    assert s["ideas"]["total"] == 1 and s["categories"] == [{"category": "old", "count": 1}]
    assert (await api.get(f"{A}/roadmap")).data["unstagedCount"] == 1
    rev = (await api.get(f"{A}/revenue-impact")).data
    assert [t["totalCustomerARR"] for t in rev["topIdeas"]] == [700]


async def test_overdue_only_when_undecided_past_the_deadline(api: Api, db: Db) -> None:
    owner = {"decision_owner_email": "dana@x.io", "decision_owner_name": "Dana"}
    db.idea(status="under_review", decision_deadline=ago(2), **owner)
    db.idea(
        status="rejected",
        decision_deadline=ago(2),
        decided_at=ago(1),
        closure_category="rejected_scope",
        **owner,
    )
    db.idea(status="under_review", decision_deadline=ago(-2), **owner)
    db.idea(status="deleted", decision_deadline=ago(2), **owner)
    rows = (await api.get(f"{A}/decisions")).data["byOwner"]
    assert rows == [
        {
            "owner": "dana@x.io",
            "name": "Dana",
            "total": 1,
            "overdue": 1,
            "averageDaysToDecision": rows[0]["averageDaysToDecision"],
        }
    ]


# ---- section 9: exports --------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_limit_over_ten_thousand_is_refused_on_every_kind(
    new_workspace: Any, kind: str
) -> None:
    ws: Workspace = await new_workspace(plan="pro")
    for bad in ("10001", "0", "ten"):
        r = await ws.api.get(f"{E}/{kind}", params={"limit": bad})
        assert (r.status, r.error["code"], r.error["field"]) == (400, "validation_error", "limit")
    r = await ws.api.get(f"{E}/{kind}", params={"limit": 10000, "format": "json"})
    assert r.status == 200 and r.json == []


async def test_empty_csv_exports_have_a_header_and_a_dated_file_name(api: Api) -> None:
    today = datetime.now(UTC).date().isoformat()
    for kind in KINDS:
        r = await api.get(f"{E}/{kind}", params={"format": "csv"})
        got = csv_rows(r)
        assert len(got) == 1 and got[0][0] == "id", (kind, got)
        assert r.headers["Content-Disposition"] == f'attachment; filename="{kind}-{today}.csv"'
    ideas_header = csv_rows(await api.get(f"{E}/ideas", params={"format": "csv"}))[0]
    assert {"riceScore", "validationScore"} <= set(ideas_header)
    assert not {"rice", "validation", "tags", "customerCount"} & set(ideas_header)


async def test_export_records_have_exactly_the_contract_fields(
    api: Api, db: Db, openapi: OpenApi
) -> None:
    idea = db.idea("Dark mode", status="shipped", decided_at=ago(1), closure_category="shipped")
    db.signal(idea, "slack")
    ideas = (await api.get(f"{E}/ideas")).json
    # The Idea fields (docs/analytics.md), as the document declares them, in its order.
    idea_fields = list(openapi.doc["components"]["schemas"]["Idea"]["properties"])
    assert isinstance(ideas, list) and list(ideas[0]) == idea_fields
    signals = (await api.get(f"{E}/signals")).json
    assert set(signals[0]) == SIGNAL_FIELDS | {"ideaId", "ideaServiceId", "ideaTitle"}
    assert signals[0]["ideaId"] == str(idea) and signals[0]["ideaTitle"] == "Dark mode"
    header = csv_rows(await api.get(f"{E}/signals", params={"format": "csv"}))[0]
    assert set(header) == SIGNAL_FIELDS | {"ideaId", "ideaServiceId", "ideaTitle"}


async def test_csv_guard_applies_to_text_cells_only(api: Api, db: Db) -> None:
    """Text starting with - or @ is guarded; numbers are written as they are (section 9)."""
    db.idea("-minus", vote_count=-3, total_customer_arr=-12.5, category="@home")
    header, row = csv_rows(await api.get(f"{E}/ideas", params={"format": "csv"}))
    cells = dict(zip(header, row, strict=True))
    assert cells["title"] == "'-minus" and cells["category"] == "'@home"
    assert cells["voteCount"] == "-3" and cells["totalCustomerARR"] == "-12.5"
    assert cells["signalCount"] == "0"


@pytest.mark.parametrize(
    ("scopes", "allowed"),
    [
        ("ideas:read", {"ideas", "decisions", "signals"}),
        ("customers:read", {"customers"}),
        ("analytics:read", set()),
    ],
)
async def test_export_scopes(new_workspace: Any, scopes: str, allowed: set[str]) -> None:
    ws: Workspace = await new_workspace(plan="growth", scopes=scopes)
    for kind in KINDS:
        r = await ws.api.get(f"{E}/{kind}")
        if kind in allowed:
            assert r.status == 200, (kind, r.body)
        else:
            assert (r.status, r.error["code"]) == (403, "insufficient_scope"), kind
    r = await ws.api.get(f"{A}/summary")
    if scopes == "analytics:read":
        assert r.status == 200
    else:
        assert (r.status, r.error["code"]) == (403, "insufficient_scope")


async def test_export_window_429_carries_rate_limit_headers(new_workspace: Any) -> None:
    ws: Workspace = await new_workspace(plan="scale")
    for i in range(10):
        assert (await ws.api.get(f"{E}/{KINDS[i % 4]}")).status == 200
    r = await ws.api.get(f"{E}/customers", params={"format": "csv"})
    assert (r.status, r.error["code"]) == (429, "rate_limited")
    assert int(r.headers["Retry-After"]) > 0
    for name in ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"):
        assert int(r.headers[name]) >= 0, name
