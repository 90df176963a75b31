"""Each report's `data`, assembled from the rows of `reports` (CONTRACT section 8).

Maps keyed by a value (`byStatus`, `bySource`, `byOutcome`, a bucket's `breakdown`) list only the
keys that occur; lists over the status enumeration (funnel, revenue by status) list every status
but `deleted`, in lifecycle order, zeros included. A missing key value is named `none`.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import aiopg

from . import reports
from .periods import Period, Range, buckets

STATUSES = ("captured", "new", "under_review", "planned", "in_progress", "shipped", "rejected",
            "archived", "duplicate")
CLOSED = frozenset({"shipped", "rejected", "archived", "duplicate"})
NONE_KEY = "none"
TOP_IDEAS = 20


def num(value: Decimal | float | int | None) -> float | None:
    return None if value is None else float(value)


def money(value: Decimal | float | int | None) -> float:
    return 0.0 if value is None else float(value)


def _key(value: Any) -> str:
    return NONE_KEY if value is None else str(value)


def _avg(total: Any, n: int) -> float | None:
    return float(total) / n if n else None


def _fold(rows: list[dict[str, Any]], key: str) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for r in rows:
        out[r[key]] = out.get(r[key], 0) + r["n"]
    return out


async def summary(cur: aiopg.Cursor, ws: uuid.UUID) -> dict[str, Any]:
    rows = await reports.summary_ideas(cur, ws)
    sums = {k: sum(r[k] or 0 for r in rows) for k in (
        "n", "this_month", "reach", "reach_n", "impact", "impact_n", "confidence",
        "confidence_n", "effort", "effort_n", "score", "score_n")}
    by_status = _fold(rows, "status")
    cats = sorted(((c, n) for c, n in _fold(rows, "category").items() if c is not None),
                  key=lambda c: (-c[1], c[0]))
    c = await reports.summary_customers(cur, ws)
    return {
        "ideas": {"total": sums["n"],
                  "active": sum(n for s, n in by_status.items() if s not in CLOSED),
                  "thisMonth": sums["this_month"]},
        "byStatus": by_status,
        "bySource": _fold(rows, "source"),
        "categories": [{"category": name, "count": n} for name, n in cats],
        "rice": {"averageReach": _avg(sums["reach"], sums["reach_n"]),
                 "averageImpact": _avg(sums["impact"], sums["impact_n"]),
                 "averageConfidence": _avg(sums["confidence"], sums["confidence_n"]),
                 "averageEffort": _avg(sums["effort"], sums["effort_n"]),
                 "averageScore": _avg(sums["score"], sums["score_n"]),
                 "scoredCount": sums["score_n"]},
        "customers": {"total": c["total"], "linked": c["linked"]},
        "revenue": {"totalARR": money(c["total_arr"]), "totalMRR": money(c["total_mrr"]),
                    "linkedARR": money(c["linked_arr"])},
    }


async def ideas_over_time(cur: aiopg.Cursor, ws: uuid.UUID, rng: Range, period: Period,
                          group_by: str | None) -> dict[str, Any]:
    rows = await reports.ideas_over_time(cur, ws, rng, period, group_by)
    out = [{"start": day, "count": 0, **({"breakdown": {}} if group_by else {})}
           for day in buckets(rng, period)]
    index = {b["start"]: b for b in out}
    for r in rows:
        bucket = index[r["bucket"]]
        bucket["count"] += r["n"]
        if group_by:
            bucket["breakdown"][_key(r["key"])] = r["n"]
    return {"period": period, "groupBy": group_by, "start": rng.start, "end": rng.end,
            "buckets": out}


async def decisions(cur: aiopg.Cursor, ws: uuid.UUID, rng: Range, period: Period) -> dict[str, Any]:
    outcomes = await reports.decision_outcomes(cur, ws, rng)
    total = next((r for r in outcomes if r["g"]), None)
    owners = await reports.decision_owners(cur, ws, rng)
    over = {r["bucket"]: r["n"] for r in await reports.decisions_over_time(cur, ws, rng, period)}
    return {
        "summary": {"total": total["n"] if total else 0,
                    "averageDaysToDecision": num(total["days"]) if total else None,
                    "byOutcome": {_key(r["closure_category"]): r["n"]
                                  for r in outcomes if not r["g"]}},
        "byOwner": [{"owner": r["owner"], "name": r["name"], "total": r["total"],
                     "overdue": r["overdue"], "averageDaysToDecision": num(r["days"])}
                    for r in owners],
        "overTime": [{"start": day, "count": over.get(day, 0)} for day in buckets(rng, period)],
    }


async def funnel(cur: aiopg.Cursor, ws: uuid.UUID, rng: Range) -> dict[str, Any]:
    per = {r["status"]: r for r in await reports.funnel(cur, ws, rng)}

    def days(key: str) -> float | None:
        return _avg(sum(r[key] or 0 for r in per.values()),
                    sum(r[key + "_n"] for r in per.values()))

    return {
        "stages": [{"status": s, "count": per[s]["n"] if s in per else 0,
                    "totalARR": money(per[s]["arr"]) if s in per else 0.0,
                    "averageRiceScore": _avg(per[s]["rice"], per[s]["rice_n"]) if s in per
                    else None}
                   for s in STATUSES],
        "averageDays": {"capturedToDecided": days("to_decided"),
                        "capturedToShipped": days("to_shipped"),
                        "decidedToShipped": days("decided_to_shipped")},
    }


async def signals(cur: aiopg.Cursor, ws: uuid.UUID, rng: Range, period: Period) -> dict[str, Any]:
    rows = await reports.signals(cur, ws, rng, period)
    over = {r["bucket"]: r for r in rows if r["g_platform"] and r["g_sentiment"]}
    platforms = sorted((r for r in rows if not r["g_platform"]),
                       key=lambda r: (-r["n"], r["platform"]))
    sentiments = sorted((r for r in rows if not r["g_sentiment"]),
                        key=lambda r: (-r["n"], r["sentiment"] is None, r["sentiment"] or ""))
    return {
        "overTime": [{"start": day, "count": over[day]["n"] if day in over else 0,
                      "averageSentiment": num(over[day]["sentiment_avg"]) if day in over else None}
                     for day in buckets(rng, period)],
        "byPlatform": [{"platform": r["platform"], "signals": r["n"], "uniqueIdeas": r["ideas"]}
                       for r in platforms],
        "bySentiment": [{"sentiment": r["sentiment"], "count": r["n"]} for r in sentiments],
    }


async def roadmap(cur: aiopg.Cursor, ws: uuid.UUID) -> dict[str, Any]:
    stages = await reports.roadmap_stages(cur, ws)
    counts = await reports.roadmap_counts(cur, ws, datetime.now(timezone.utc))
    return {
        "stages": [{"id": str(r["id"]), "name": r["name"], "ideaCount": r["n"],
                    "totalARR": money(r["arr"]), "averageRiceScore": num(r["rice"])}
                   for r in stages],
        "velocity": {"shippedLast30Days": counts["shipped30"],
                     "shippedLast90Days": counts["shipped90"]},
        "unstagedCount": counts["unstaged"],
    }


async def revenue_impact(cur: aiopg.Cursor, ws: uuid.UUID) -> dict[str, Any]:
    per = {r["status"]: r for r in await reports.revenue_by_status(cur, ws)}
    top = await reports.revenue_top_ideas(cur, ws, TOP_IDEAS)
    return {
        "byStatus": [{"status": s, "ideaCount": per[s]["n"] if s in per else 0,
                      "totalARR": money(per[s]["arr"]) if s in per else 0.0} for s in STATUSES],
        "topIdeas": [{"id": str(r["id"]), "ideaServiceId": f"IDEA-{r['number']}",
                      "title": r["title"], "status": r["status"],
                      "totalCustomerARR": money(r["arr"]), "customerCount": r["customer_count"]}
                     for r in top],
    }


async def categories(cur: aiopg.Cursor, ws: uuid.UUID, rng: Range) -> list[dict[str, Any]]:
    keys = ("n", "votes", "signals", "rice", "rice_n", "arr", "decided", "shipped", "days")
    per: dict[str, dict[str, Any]] = {}
    for r in await reports.categories(cur, ws, rng):
        c = per.setdefault(r["category"], dict.fromkeys(keys, 0) | {"sources": 0})
        for k in keys:
            c[k] += r[k] or 0
        c["sources"] += 1
    ordered = sorted(per.items(), key=lambda kv: (-kv[1]["n"], kv[0]))
    return [{"category": name, "ideaCount": c["n"], "voteCount": int(c["votes"]),
             "signalCount": int(c["signals"]), "averageRiceScore": _avg(c["rice"], c["rice_n"]),
             "totalARR": money(c["arr"]), "decidedCount": c["decided"],
             "shippedCount": c["shipped"], "averageDaysToDecision": _avg(c["days"], c["decided"]),
             "uniqueSourceCount": c["sources"]}
            for name, c in ordered]
