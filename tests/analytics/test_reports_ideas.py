"""Summary and ideas-over-time, checked to the number on hand-made workspaces."""

from __future__ import annotations

from datetime import datetime, timedelta

from tests.support.api import Api

from .data import Db, ago, utc

A = "/api/v1/analytics"


def month_start() -> datetime:
    now = ago(0)
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


async def test_summary_counts_ideas_rice_customers_and_revenue(api: Api, db: Db) -> None:
    """Deleted ideas never count; linked means linked to a live idea."""
    recent, old = ago(minutes=1), month_start() - timedelta(days=1)
    a = db.idea(
        status="new",
        source="slack",
        category="ux",
        created_at=recent,
        rice_reach=100,
        rice_impact=2,
        rice_confidence=0.5,
        rice_effort=4,
        rice_score=50,
    )
    db.idea(status="shipped", source="api", category="ux", created_at=old)
    db.idea(
        status="rejected",
        source="slack",
        category="billing",
        created_at=recent,
        rice_reach=10,
        rice_impact=1,
        rice_confidence=1,
        rice_effort=1,
        rice_score=10,
    )
    gone = db.idea(
        status="deleted", source="email", category="ux", created_at=recent, rice_score=1000
    )
    db.idea(status="planned", source="api", category=None, created_at=recent)
    db.link(a, db.customer("One", arr=1000, mrr=100))
    db.link(gone, db.customer("Two", arr=500))
    db.customer("Three", mrr=50)

    r = await api.get(f"{A}/summary")
    assert r.status == 200
    assert r.data == {
        "ideas": {"total": 4, "active": 2, "thisMonth": 3},
        "byStatus": {"new": 1, "shipped": 1, "rejected": 1, "planned": 1},
        "bySource": {"slack": 2, "api": 2},
        "categories": [{"category": "ux", "count": 2}, {"category": "billing", "count": 1}],
        "rice": {
            "averageReach": 55.0,
            "averageImpact": 1.5,
            "averageConfidence": 0.75,
            "averageEffort": 2.5,
            "averageScore": 30.0,
            "scoredCount": 2,
        },
        "customers": {"total": 3, "linked": 1},
        "revenue": {"totalARR": 1500.0, "totalMRR": 150.0, "linkedARR": 1000.0},
    }


async def test_summary_of_an_empty_workspace_is_zeros_and_nulls(api: Api) -> None:
    """Averages with nothing to average are null; sums are zero."""
    r = await api.get(f"{A}/summary")
    assert r.data["ideas"] == {"total": 0, "active": 0, "thisMonth": 0}
    assert r.data["rice"]["averageScore"] is None and r.data["rice"]["scoredCount"] == 0
    assert r.data["revenue"] == {"totalARR": 0, "totalMRR": 0, "linkedARR": 0}


async def test_weekly_buckets_start_on_monday_and_both_ends_count(api: Api, db: Db) -> None:
    """2024-01-01 is a Monday; start and end are inclusive; empty weeks are zero."""
    for moment in (
        utc(2024, 1, 3, 11, 59, 59),
        utc(2024, 1, 3, 12),
        utc(2024, 1, 7, 23, 59, 59),
        utc(2024, 1, 8),
        utc(2024, 1, 22),
        utc(2024, 1, 22, 0, 0, 1),
    ):
        db.idea(created_at=moment)
    db.idea(status="deleted", created_at=utc(2024, 1, 9))
    r = await api.get(
        f"{A}/ideas-over-time",
        params={"start": "2024-01-03T12:00:00Z", "end": "2024-01-22T00:00:00Z"},
    )
    assert r.status == 200
    assert r.data == {
        "period": "week",
        "groupBy": None,
        "start": "2024-01-03T12:00:00.000000Z",
        "end": "2024-01-22T00:00:00.000000Z",
        "buckets": [
            {"start": "2024-01-01", "count": 2},
            {"start": "2024-01-08", "count": 1},
            {"start": "2024-01-15", "count": 0},
            {"start": "2024-01-22", "count": 1},
        ],
    }


async def test_daily_and_monthly_buckets(api: Api, db: Db) -> None:
    """Days and months are zero-filled from the start's bucket to the end's, oldest first."""
    for moment in (utc(2024, 1, 31, 23, 59, 59), utc(2024, 2, 1), utc(2024, 2, 29, 12)):
        db.idea(created_at=moment)
    r = await api.get(
        f"{A}/ideas-over-time",
        params={"period": "month", "start": "2024-01-15T00:00:00Z", "end": "2024-03-10T00:00:00Z"},
    )
    assert r.data["buckets"] == [
        {"start": "2024-01-01", "count": 1},
        {"start": "2024-02-01", "count": 2},
        {"start": "2024-03-01", "count": 0},
    ]
    r = await api.get(
        f"{A}/ideas-over-time",
        params={"period": "day", "start": "2024-01-30T00:00:00Z", "end": "2024-02-02T00:00:00Z"},
    )
    assert r.data["buckets"] == [
        {"start": "2024-01-30", "count": 0},
        {"start": "2024-01-31", "count": 1},
        {"start": "2024-02-01", "count": 1},
        {"start": "2024-02-02", "count": 0},
    ]


async def test_group_by_breaks_each_bucket_down(api: Api, db: Db) -> None:
    """Breakdown keys are the values found in the bucket; a missing category is `none`."""
    db.idea(status="new", category="ux", source="slack", created_at=utc(2024, 1, 1, 9))
    db.idea(status="new", category=None, source="api", created_at=utc(2024, 1, 1, 10))
    db.idea(status="planned", category="ux", source="slack", created_at=utc(2024, 1, 2))
    params = {"period": "day", "start": "2024-01-01T00:00:00Z", "end": "2024-01-03T00:00:00Z"}
    r = await api.get(f"{A}/ideas-over-time", params={**params, "group_by": "status"})
    assert r.data["groupBy"] == "status"
    assert r.data["buckets"] == [
        {"start": "2024-01-01", "count": 2, "breakdown": {"new": 2}},
        {"start": "2024-01-02", "count": 1, "breakdown": {"planned": 1}},
        {"start": "2024-01-03", "count": 0, "breakdown": {}},
    ]
    r = await api.get(f"{A}/ideas-over-time", params={**params, "group_by": "category"})
    assert r.data["buckets"][0]["breakdown"] == {"ux": 1, "none": 1}
    r = await api.get(f"{A}/ideas-over-time", params={**params, "group_by": "source"})
    assert r.data["buckets"][0]["breakdown"] == {"slack": 1, "api": 1}


async def test_dated_reports_default_to_the_last_90_days(api: Api, db: Db) -> None:
    """Ideas 89 days old count, 91 days old do not; the range ends now."""
    db.idea(created_at=ago(89))
    db.idea(created_at=ago(1))
    db.idea(created_at=ago(91))
    r = await api.get(f"{A}/ideas-over-time", params={"period": "month"})
    assert sum(b["count"] for b in r.data["buckets"]) == 2
    assert [b["start"] for b in r.data["buckets"]][-1] == ago(0).strftime("%Y-%m-01")
    r = await api.get(f"{A}/ideas-over-time")
    body = r.data
    start = datetime.fromisoformat(body["start"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(body["end"].replace("Z", "+00:00"))
    assert end - start == timedelta(days=90)
    assert abs((end - ago(0)).total_seconds()) < 60
    assert sum(b["count"] for b in body["buckets"]) == 2
    assert len(body["buckets"]) in (13, 14)
