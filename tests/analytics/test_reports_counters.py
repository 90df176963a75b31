"""The paths the fast reports take, to the number: per-status totals from the kept counters
(after status changes and deletions), unstaged = live - staged, ARR only from ideas that have
any, spans summed exactly, unique ideas per platform with repeats and deleted ideas."""

from __future__ import annotations

import uuid

from tests.support.api import Api

from .data import Db, ago, utc

A = "/api/v1/analytics"


def update(db: Db, idea_id: uuid.UUID, **fields: object) -> None:
    sets = ", ".join(f"{k} = %s" for k in fields)
    with db.conn.cursor() as cur:
        cur.execute(
            f"UPDATE ideas.ideas SET {sets} WHERE workspace_id = %s AND id = %s",
            [*fields.values(), db.ws, idea_id],
        )


async def test_status_totals_follow_status_changes_and_deletions(api: Api, db: Db) -> None:
    a, b, c = db.idea(status="new"), db.idea(status="new"), db.idea(status="planned")
    update(db, a, status="shipped")
    update(db, b, status="deleted")
    update(db, c, status="new")
    s = (await api.get(f"{A}/summary")).data
    assert s["byStatus"] == {"shipped": 1, "new": 1}
    assert s["ideas"]["total"] == 2 and s["ideas"]["active"] == 1
    r = (await api.get(f"{A}/revenue-impact")).data
    assert {x["status"]: x["ideaCount"] for x in r["byStatus"] if x["ideaCount"]} == {
        "shipped": 1,
        "new": 1,
    }


async def test_unstaged_counts_live_ideas_whatever_their_stage_row(api: Api, db: Db) -> None:
    """An idea on a stage id without a stage row is staged (not unstaged), as before."""
    now = db.stage("Now", 0)
    db.idea(roadmap_stage_id=now)
    db.idea(roadmap_stage_id=uuid.uuid4())
    db.idea()
    db.idea(status="deleted")
    db.idea(status="deleted", roadmap_stage_id=now)
    r = (await api.get(f"{A}/roadmap")).data
    assert [s["ideaCount"] for s in r["stages"]] == [1]
    assert r["unstagedCount"] == 1


async def test_arr_by_status_ignores_zero_and_sums_negatives(api: Api, db: Db) -> None:
    db.idea(status="new", total_customer_arr=0)
    db.idea(status="new", total_customer_arr=250.5)
    db.idea(status="new", total_customer_arr=-50)
    db.idea(status="deleted", total_customer_arr=99)
    by = {x["status"]: x for x in (await api.get(f"{A}/revenue-impact")).data["byStatus"]}
    assert by["new"] == {"status": "new", "ideaCount": 3, "totalARR": 200.5}


async def test_spans_are_summed_exactly(api: Api, db: Db) -> None:
    """1 day 12 h and 2 days 0 h 0.000001 s: the average rounds once."""
    created = utc(2024, 3, 1)
    db.idea(status="rejected", created_at=created, decided_at=utc(2024, 3, 2, 12))
    db.idea(
        status="rejected", created_at=created, decided_at=utc(2024, 3, 3).replace(microsecond=1)
    )
    r = (
        await api.get(
            f"{A}/decisions",
            params={"start": "2024-03-01T00:00:00Z", "end": "2024-03-31T00:00:00Z"},
        )
    ).data
    expected = (1.5 * 86_400_000_000 + 2 * 86_400_000_000 + 1) / (2 * 86_400_000_000)
    assert r["summary"]["averageDaysToDecision"] == expected
    c = (
        await api.get(
            f"{A}/funnel", params={"start": "2024-02-01T00:00:00Z", "end": "2024-03-31T00:00:00Z"}
        )
    ).data
    assert c["averageDays"]["capturedToDecided"] == expected


async def test_unique_ideas_per_platform_with_repeats(api: Api, db: Db) -> None:
    a, b, gone = db.idea(), db.idea(), db.idea(status="deleted")
    for _ in range(3):
        db.signal(a, "slack", detected_at=ago(1))
    db.signal(a, "teams", detected_at=ago(2))
    db.signal(b, "slack", detected_at=ago(3))
    db.signal(b, "slack", detected_at=ago(200))  # outside the default range
    db.signal(gone, "slack", detected_at=ago(1))
    db.signal(gone, "discord", detected_at=ago(1))
    r = (await api.get(f"{A}/signals")).data
    assert r["byPlatform"] == [
        {"platform": "slack", "signals": 4, "uniqueIdeas": 2},
        {"platform": "teams", "signals": 1, "uniqueIdeas": 1},
    ]
    assert sum(b["count"] for b in r["overTime"]) == 5
