"""Each report's `data`, assembled from the rows of `reports` (docs/analytics.md).

Maps keyed by a value (`byStatus`, `bySource`, `byOutcome`, a bucket's `breakdown`) list only the
keys that occur; lists over the status enumeration (funnel, revenue by status) list every status
but `deleted`, in lifecycle order, zeros included. A missing key value is named `none`.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import aiopg

from libs.api.enums import IdeaStatus, values
from libs.common import render

from . import reports
from .periods import Period, Range, bucket_start, buckets

# Every status but `deleted` (deleted ideas are left out of analytics), in declared order.
STATUSES = tuple(s for s in values(IdeaStatus) if s != "deleted")
# The statuses an idea's life ends in: not active (deleted ideas are not counted at all here).
CLOSED_STATUSES = frozenset({"shipped", "rejected", "archived", "duplicate"})
NONE_KEY = "none"
TOP_IDEAS = 20


def money(value: Decimal | float | int | None) -> int | float:
    """An ARR figure in the one form of money (libs/common/render.py); none is 0."""
    return render.money(value) or 0


def _key(value: Any) -> str:
    return NONE_KEY if value is None else str(value)


def _avg(total: Any, n: int) -> float | None:
    return float(total) / n if n else None


def _days(span: timedelta | None, n: int) -> float | None:
    """Average days of `n` summed spans, rounded once: microseconds are exact integers."""
    if not n or span is None:
        return None
    return (span // timedelta(microseconds=1)) / (n * 86_400_000_000)


def _span(rows: Any, key: str) -> timedelta | None:
    spans = [r[key] for r in rows if r[key] is not None]
    return sum(spans, timedelta()) if spans else None


def _fold(rows: list[dict[str, Any]], key: str) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for r in rows:
        out[r[key]] = out.get(r[key], 0) + r["n"]
    return out


def _month_start(now: datetime) -> date:
    return now.date().replace(day=1)


async def summary(cur: aiopg.Cursor, ws: uuid.UUID) -> dict[str, Any]:
    by_status = await reports.status_counts(cur, ws)
    rows = await reports.summary_ideas(cur, ws, _month_start(datetime.now(UTC)))
    sums = {
        k: sum(r[k] or 0 for r in rows)
        for k in (
            "this_month",
            "reach",
            "reach_n",
            "impact",
            "impact_n",
            "confidence",
            "confidence_n",
            "effort",
            "effort_n",
            "score",
            "score_n",
        )
    }
    cats = sorted(
        ((c, n) for c, n in _fold(rows, "category").items() if c is not None),
        key=lambda c: (-c[1], c[0]),
    )
    c = await reports.summary_customers(cur, ws)
    return {
        "ideas": {
            "total": sum(by_status.values()),
            "active": sum(n for s, n in by_status.items() if s not in CLOSED_STATUSES),
            "thisMonth": sums["this_month"],
        },
        "byStatus": by_status,
        "bySource": _fold(rows, "source"),
        "categories": [{"category": name, "count": n} for name, n in cats],
        "rice": {
            "averageReach": _avg(sums["reach"], sums["reach_n"]),
            "averageImpact": _avg(sums["impact"], sums["impact_n"]),
            "averageConfidence": _avg(sums["confidence"], sums["confidence_n"]),
            "averageEffort": _avg(sums["effort"], sums["effort_n"]),
            "averageScore": _avg(sums["score"], sums["score_n"]),
            "scoredCount": sums["score_n"],
        },
        "customers": {"total": c["total"], "linked": c["linked"]},
        "revenue": {
            "totalARR": money(c["total_arr"]),
            "totalMRR": money(c["total_mrr"]),
            "linkedARR": money(c["linked_arr"]),
        },
    }


async def ideas_over_time(
    cur: aiopg.Cursor, ws: uuid.UUID, rng: Range, period: Period, group_by: str | None
) -> dict[str, Any]:
    rows = await reports.ideas_over_time(cur, ws, rng, group_by)
    out: list[dict[str, Any]] = [
        {"start": day, "count": 0, **({"breakdown": {}} if group_by else {})}
        for day in buckets(rng, period)
    ]
    index = {b["start"]: b for b in out}
    for r in rows:
        bucket = index[bucket_start(r["day"], period)]
        bucket["count"] += r["n"]
        if group_by:
            breakdown, key = bucket["breakdown"], _key(r["key"])
            breakdown[key] = breakdown.get(key, 0) + r["n"]
    return {
        "period": period,
        "groupBy": group_by,
        "start": rng.start,
        "end": rng.end,
        "buckets": out,
    }


def _per_bucket(rows: list[dict[str, Any]], period: Period) -> dict[date, int]:
    over: dict[date, int] = {}
    for r in rows:
        day = bucket_start(r["day"], period)
        over[day] = over.get(day, 0) + r["n"]
    return over


async def decisions(cur: aiopg.Cursor, ws: uuid.UUID, rng: Range, period: Period) -> dict[str, Any]:
    rows = await reports.decisions(cur, ws, rng, datetime.now(UTC))
    outcomes = [r for r in rows if r["kind"] == "outcome"]
    # ROLLUP over no rows still yields its grand-total row, with a null sum: no decisions.
    total = next((r for r in outcomes if r["g"] and r["n"]), None)
    owners = sorted((r for r in rows if r["kind"] == "owner"), key=lambda r: r["g"])
    over = _per_bucket([r for r in rows if r["kind"] == "day"], period)
    return {
        "summary": {
            "total": total["n"] if total else 0,
            "averageDaysToDecision": _days(total["span"], total["n"]) if total else None,
            "byOutcome": {_key(r["key"]): r["n"] for r in outcomes if not r["g"]},
        },
        "byOwner": [
            {
                "owner": r["key"],
                "name": r["name"],
                "total": r["n"],
                "overdue": r["overdue"],
                "averageDaysToDecision": _days(r["span"], r["n"]),
            }
            for r in owners
        ],
        "overTime": [{"start": day, "count": over.get(day, 0)} for day in buckets(rng, period)],
    }


async def funnel(cur: aiopg.Cursor, ws: uuid.UUID, rng: Range) -> dict[str, Any]:
    per = {r["status"]: r for r in await reports.funnel(cur, ws, rng)}

    def days(key: str) -> float | None:
        return _days(_span(per.values(), key), sum(r[key + "_n"] for r in per.values()))

    return {
        "stages": [
            {
                "status": s,
                "count": per[s]["n"] if s in per else 0,
                "totalARR": money(per[s]["arr"]) if s in per else 0.0,
                "averageRiceScore": _avg(per[s]["rice"], per[s]["rice_n"]) if s in per else None,
            }
            for s in STATUSES
        ],
        "averageDays": {
            "capturedToDecided": days("to_decided"),
            "capturedToShipped": days("to_shipped"),
            "decidedToShipped": days("decided_to_shipped"),
        },
    }


async def signals(cur: aiopg.Cursor, ws: uuid.UUID, rng: Range, period: Period) -> dict[str, Any]:
    both = await reports.signals(cur, ws, rng)
    rows = [r for r in both if r["kind"] == "day"]
    ideas = {r["platform"]: r["n"] for r in both if r["kind"] == "ideas"}
    over: dict[date, list[Any]] = {}
    for r in rows:
        sums = over.setdefault(bucket_start(r["day"], period), [0, Decimal(0), 0])
        sums[0] += r["n"]
        sums[1] += r["score"] or 0
        sums[2] += r["score_n"]
    platforms = sorted(_fold(rows, "platform").items(), key=lambda p: (-p[1], p[0]))
    sentiments = sorted(
        _fold(rows, "sentiment").items(), key=lambda s: (-s[1], s[0] is None, s[0] or "")
    )
    return {
        "overTime": [
            {
                "start": day,
                "count": over[day][0] if day in over else 0,
                "averageSentiment": _avg(over[day][1], over[day][2]) if day in over else None,
            }
            for day in buckets(rng, period)
        ],
        "byPlatform": [
            {"platform": p, "signals": n, "uniqueIdeas": ideas[p]} for p, n in platforms
        ],
        "bySentiment": [{"sentiment": s, "count": n} for s, n in sentiments],
    }


async def roadmap(cur: aiopg.Cursor, ws: uuid.UUID) -> dict[str, Any]:
    live = sum((await reports.status_counts(cur, ws)).values())
    staged = {r["id"]: r for r in await reports.staged_ideas(cur, ws)}
    stages = await reports.roadmap_stages(cur, ws)
    shipped = await reports.shipped_since(cur, ws, datetime.now(UTC))
    empty = {"n": 0, "arr": 0, "rice": None, "rice_n": 0}

    def stage(r: dict[str, Any]) -> dict[str, Any]:
        agg = staged.get(r["id"], empty)
        return {
            "id": str(r["id"]),
            "name": r["name"],
            "ideaCount": agg["n"],
            "totalARR": money(agg["arr"]),
            "averageRiceScore": _avg(agg["rice"], agg["rice_n"]),
        }

    return {
        "stages": [stage(r) for r in stages],
        "velocity": {
            "shippedLast30Days": shipped["shipped30"],
            "shippedLast90Days": shipped["shipped90"],
        },
        "unstagedCount": live - sum(r["n"] for r in staged.values()),
    }


async def revenue_impact(cur: aiopg.Cursor, ws: uuid.UUID) -> dict[str, Any]:
    counts = await reports.status_counts(cur, ws)
    arr = await reports.revenue_by_status(cur, ws)
    top = await reports.revenue_top_ideas(cur, ws, TOP_IDEAS)
    return {
        "byStatus": [
            {"status": s, "ideaCount": counts.get(s, 0), "totalARR": money(arr.get(s))}
            for s in STATUSES
        ],
        "topIdeas": [
            {
                "id": str(r["id"]),
                "ideaServiceId": f"IDEA-{r['number']}",
                "title": r["title"],
                "status": r["status"],
                "totalCustomerARR": money(r["arr"]),
                "customerCount": r["customer_count"],
            }
            for r in top
        ],
    }


async def categories(cur: aiopg.Cursor, ws: uuid.UUID, rng: Range) -> list[dict[str, Any]]:
    keys = ("n", "votes", "signals", "rice", "rice_n", "arr", "decided", "shipped")
    per: dict[str, dict[str, Any]] = {}
    for r in await reports.categories(cur, ws, rng):
        c = per.setdefault(
            r["category"], dict.fromkeys(keys, 0) | {"sources": 0, "span": timedelta()}
        )
        for k in keys:
            c[k] += r[k] or 0
        c["span"] += r["span"] or timedelta()
        c["sources"] += 1
    ordered = sorted(per.items(), key=lambda kv: (-kv[1]["n"], kv[0]))
    return [
        {
            "category": name,
            "ideaCount": c["n"],
            "voteCount": int(c["votes"]),
            "signalCount": int(c["signals"]),
            "averageRiceScore": _avg(c["rice"], c["rice_n"]),
            "totalARR": money(c["arr"]),
            "decidedCount": c["decided"],
            "shippedCount": c["shipped"],
            "averageDaysToDecision": _days(c["span"], c["decided"]),
            "uniqueSourceCount": c["sources"],
        }
        for name, c in ordered
    ]
