"""Decisions, funnel and signals, checked to the number on hand-made workspaces."""

from __future__ import annotations

from tests.support.api import Api

from .data import Db, ago, utc

A = "/api/v1/analytics"
Q1 = {"start": "2024-01-01T00:00:00Z", "end": "2024-03-31T23:59:59Z"}


async def test_decisions_summary_owners_overdue_and_months(api: Api, db: Db) -> None:
    """Decisions count by decidedAt; overdue is undecided past the deadline, today."""
    alice = {"decision_owner_email": "alice@x.io", "decision_owner_name": "Alice"}
    bob = {"decision_owner_email": "bob@x.io", "decision_owner_name": "Bob"}
    db.idea(
        status="shipped",
        closure_category="shipped",
        created_at=utc(2024, 1, 1),
        decided_at=utc(2024, 1, 11),
        **alice,
    )
    db.idea(
        status="rejected",
        closure_category="rejected_scope",
        created_at=utc(2024, 1, 31),
        decided_at=utc(2024, 2, 1),
        **alice,
    )
    db.idea(
        status="duplicate",
        closure_category="duplicate",
        created_at=utc(2023, 12, 1),
        decided_at=utc(2024, 3, 1),
        **bob,
    )
    db.idea(
        status="rejected",
        closure_category="rejected_scope",
        created_at=utc(2024, 3, 1),
        decided_at=utc(2024, 4, 1),
        **bob,
    )
    db.idea(
        status="deleted",
        closure_category="shipped",
        created_at=utc(2024, 1, 1),
        decided_at=utc(2024, 1, 2),
        **alice,
    )
    db.idea(status="under_review", decision_deadline=ago(1), **bob)
    db.idea(status="under_review", decision_deadline=ago(-1), **bob)
    db.idea(
        status="planned",
        decision_deadline=ago(2),
        decision_owner_email="carol@x.io",
        decision_owner_name="Carol",
    )
    db.idea(
        status="archived",
        closure_category="archived",
        created_at=utc(2024, 2, 9),
        decided_at=utc(2024, 2, 10),
    )

    r = await api.get(f"{A}/decisions", params=Q1)
    assert r.status == 200
    assert r.data == {
        "summary": {
            "total": 4,
            "averageDaysToDecision": 25.75,
            "byOutcome": {"shipped": 1, "rejected_scope": 1, "duplicate": 1, "archived": 1},
        },
        "byOwner": [
            {
                "owner": "alice@x.io",
                "name": "Alice",
                "total": 2,
                "overdue": 0,
                "averageDaysToDecision": 5.5,
            },
            {
                "owner": "bob@x.io",
                "name": "Bob",
                "total": 1,
                "overdue": 1,
                "averageDaysToDecision": 91.0,
            },
            {"owner": None, "name": None, "total": 1, "overdue": 0, "averageDaysToDecision": 1.0},
            {
                "owner": "carol@x.io",
                "name": "Carol",
                "total": 0,
                "overdue": 1,
                "averageDaysToDecision": None,
            },
        ],
        "overTime": [
            {"start": "2024-01-01", "count": 1},
            {"start": "2024-02-01", "count": 2},
            {"start": "2024-03-01", "count": 1},
        ],
    }
    r = await api.get(
        f"{A}/decisions", params={**Q1, "period": "week", "end": "2024-01-14T00:00:00Z"}
    )
    assert r.data["overTime"] == [
        {"start": "2024-01-01", "count": 0},
        {"start": "2024-01-08", "count": 1},
    ]


async def test_funnel_stages_and_average_days(api: Api, db: Db) -> None:
    """Every live status in lifecycle order; days between stages average over who got there."""
    db.idea(status="captured", created_at=utc(2024, 1, 5), total_customer_arr=100, rice_score=10)
    db.idea(status="captured", created_at=utc(2024, 1, 6))
    db.idea(
        status="shipped",
        created_at=utc(2024, 1, 1),
        decided_at=utc(2024, 1, 11),
        shipped_at=utc(2024, 1, 21),
        total_customer_arr=50.5,
        rice_score=30,
    )
    db.idea(status="rejected", created_at=utc(2024, 1, 10), decided_at=utc(2024, 1, 12))
    db.idea(
        status="shipped",
        created_at=utc(2023, 12, 31),
        decided_at=utc(2024, 1, 2),
        shipped_at=utc(2024, 1, 2),
    )
    db.idea(status="deleted", created_at=utc(2024, 1, 7), total_customer_arr=999)

    r = await api.get(
        f"{A}/funnel", params={"start": "2024-01-01T00:00:00Z", "end": "2024-01-31T23:59:59Z"}
    )
    assert r.status == 200
    stages = {s["status"]: s for s in r.data["stages"]}
    assert [s["status"] for s in r.data["stages"]] == [
        "captured",
        "new",
        "under_review",
        "planned",
        "in_progress",
        "shipped",
        "rejected",
        "archived",
        "duplicate",
    ]
    assert stages["captured"] == {
        "status": "captured",
        "count": 2,
        "totalARR": 100,
        "averageRiceScore": 10,
    }
    assert stages["shipped"] == {
        "status": "shipped",
        "count": 1,
        "totalARR": 50.5,
        "averageRiceScore": 30,
    }
    assert stages["rejected"] == {
        "status": "rejected",
        "count": 1,
        "totalARR": 0,
        "averageRiceScore": None,
    }
    assert stages["new"]["count"] == 0
    assert r.data["averageDays"] == {
        "capturedToDecided": 6.0,
        "capturedToShipped": 20.0,
        "decidedToShipped": 10.0,
    }


async def test_signals_volume_sentiment_platforms(api: Api, db: Db) -> None:
    """Signals count by detectedAt; those of deleted ideas never count."""
    a, b, gone = db.idea(), db.idea(), db.idea(status="deleted")
    db.signal(a, "slack", sentiment="positive", sentiment_score=0.8, detected_at=utc(2024, 1, 1))
    db.signal(
        a,
        "slack",
        sentiment="negative",
        sentiment_score=-0.4,
        detected_at=utc(2024, 1, 7, 23, 59, 59),
    )
    db.signal(b, "slack", sentiment="neutral", sentiment_score=0, detected_at=utc(2024, 1, 8))
    db.signal(b, "discord", detected_at=utc(2024, 1, 10))
    db.signal(a, "zendesk", sentiment="positive", detected_at=utc(2024, 1, 15))
    db.signal(gone, "slack", sentiment="positive", detected_at=utc(2024, 1, 9))

    r = await api.get(
        f"{A}/signals", params={"start": "2024-01-01T00:00:00Z", "end": "2024-01-14T23:59:59Z"}
    )
    assert r.status == 200
    over = r.data["overTime"]
    assert [(b["start"], b["count"]) for b in over] == [("2024-01-01", 2), ("2024-01-08", 2)]
    assert abs(over[0]["averageSentiment"] - 0.2) < 1e-9
    assert over[1]["averageSentiment"] == 0
    assert r.data["byPlatform"] == [
        {"platform": "slack", "signals": 3, "uniqueIdeas": 2},
        {"platform": "discord", "signals": 1, "uniqueIdeas": 1},
    ]
    assert r.data["bySentiment"] == [
        {"sentiment": "negative", "count": 1},
        {"sentiment": "neutral", "count": 1},
        {"sentiment": "positive", "count": 1},
        {"sentiment": None, "count": 1},
    ]
    r = await api.get(
        f"{A}/signals",
        params={"period": "day", "start": "2024-01-01T00:00:00Z", "end": "2024-01-02T00:00:00Z"},
    )
    assert r.data["overTime"] == [
        {"start": "2024-01-01", "count": 1, "averageSentiment": 0.8},
        {"start": "2024-01-02", "count": 0, "averageSentiment": None},
    ]
