"""The summary and signals reports against a brute-force count over a model kept in Python.

A seeded random workspace: ideas of every status (deleted ones too), source and category, with
RICE fields of which some are null, created over ~200 days, on midnight UTC and on the first
instant of this month; signals on them over ~200 days with random platforms and sentiments,
repeated for one idea and platform on one day, on consecutive days and far apart, on the first
and last instants of UTC days, inserted out of order. Then writes of every kind the reports must
follow, whatever keeps them: status changes through the API (delete, undelete, batch), RICE,
category, source and multi-row status changes in SQL, signals added afterwards (to deleted
ideas too, in one multi-row statement), deleted, moved in time, to another platform and to
another idea. Every row is written through the model, and each report must equal the count made
from the model, before and after those writes, over ranges aligned to days, cut mid-day, inside
one day, of one instant, and of 200 days by day, week and month. The seed fixes the scenario;
its moments are relative to the time of the run, as the default range ends now.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import psycopg2.extras
import pytest

from tests.support.api import Api

from .data import Db

A = "/api/v1/analytics"
SEED = 8_2024_0611
DAY = timedelta(days=1)
US = timedelta(microseconds=1)
DEFAULT_SPAN = timedelta(days=90)

STATUSES = [
    "captured",
    "new",
    "under_review",
    "planned",
    "in_progress",
    "shipped",
    "rejected",
    "archived",
    "duplicate",
    "deleted",
]
CLOSED = {"shipped", "rejected", "archived", "duplicate"}
SOURCES = ["slack", "discord", "teams", "email", "api"]  # ideas.source is NOT NULL
CATEGORIES = ["ux", "billing", "security", "performance", None]
PLATFORMS = ["slack", "discord", "teams", "intercom", "zendesk"]
SENTIMENTS = ["positive", "neutral", "negative", None]
RICE = ("rice_reach", "rice_impact", "rice_confidence", "rice_effort")


def iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def approxed(value: Any) -> Any:
    """`value` with every float replaced by pytest.approx, at any depth."""
    if isinstance(value, dict):
        return {k: approxed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [approxed(v) for v in value]
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-9, abs=1e-12)
    return value


def rice_score(row: dict[str, Any]) -> float | None:
    """As the ideas service computes it: set once all four fields are."""
    if any(row[k] is None for k in RICE):
        return None
    return (
        float(row["rice_reach"])
        * float(row["rice_impact"])
        * float(row["rice_confidence"])
        / float(row["rice_effort"])
    )


def bucket_of(day: date, period: str) -> date:
    if period == "day":
        return day
    if period == "week":
        return day - timedelta(days=day.weekday())
    return day.replace(day=1)


def bucket_days(start: datetime, end: datetime, period: str) -> list[date]:
    """Every bucket from the one holding `start` to the one holding `end`, walked day by day."""
    out: list[date] = []
    day = start.astimezone(UTC).date()
    while day <= end.astimezone(UTC).date():
        b = bucket_of(day, period)
        if not out or out[-1] != b:
            out.append(b)
        day += DAY
    return out


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


class World:
    """The workspace's rows, written to the database and kept here as written."""

    def __init__(self, db: Db, api: Api, rnd: random.Random, t0: datetime) -> None:
        self.db, self.api, self.rnd, self.t0 = db, api, rnd, t0
        self.ideas: dict[uuid.UUID, dict[str, Any]] = {}
        self.signals: dict[uuid.UUID, dict[str, Any]] = {}
        self.customers: dict[uuid.UUID, dict[str, Any]] = {}
        self.links: set[tuple[uuid.UUID, uuid.UUID]] = set()

    # ---- time ----------------------------------------------------------------------------

    def midnight(self, days_ago: int) -> datetime:
        return datetime.combine((self.t0 - days_ago * DAY).date(), time(), UTC)

    def clear(self, t: datetime) -> bool:
        """Away from the moments the default range may start or end at (`now` of the server
        lies somewhat after t0): such a signal would count or not by the clock."""
        start = self.t0 - DEFAULT_SPAN
        return (
            not start - timedelta(minutes=2) <= t <= start + timedelta(minutes=15)
            and not self.t0 - timedelta(minutes=1) <= t <= self.t0 + DAY
        )

    def moment(self, newest_days: float, oldest_days: float) -> datetime:
        while True:
            t = self.t0 - timedelta(seconds=self.rnd.uniform(newest_days, oldest_days) * 86_400)
            t = t.replace(microsecond=self.rnd.randrange(1_000_000))
            if self.clear(t):
                return t

    # ---- writes --------------------------------------------------------------------------

    def sql(self, query: str, args: Any) -> int:
        with self.db.conn.cursor() as cur:
            cur.execute(query, args)
            return cur.rowcount

    def idea(self, **fields: Any) -> uuid.UUID:
        row = {"status": "new", "source": "api", "category": None, **dict.fromkeys(RICE), **fields}
        row["rice_score"] = rice_score(row)
        iid = self.db.idea(f"Idea {len(self.ideas) + 1}", **row)
        self.ideas[iid] = row
        return iid

    def signal_row(
        self, idea_id: uuid.UUID, detected_at: datetime, platform: str | None = None
    ) -> dict[str, Any]:
        assert self.clear(detected_at), detected_at
        sentiment = self.rnd.choice(SENTIMENTS)
        score = None if self.rnd.random() < 0.2 else round(self.rnd.uniform(-1, 1), 3)
        return {
            "id": uuid.uuid4(),
            "idea_id": idea_id,
            "platform": platform or self.rnd.choice(PLATFORMS),
            "sentiment": sentiment,
            "sentiment_score": score,
            "detected_at": detected_at,
        }

    def insert_signals(self, rows: list[dict[str, Any]]) -> None:
        """One INSERT per row, in the given order."""
        for r in rows:
            fields = {k: v for k, v in r.items() if k not in ("id", "idea_id", "platform")}
            sid = self.db.signal(r["idea_id"], r["platform"], id=r["id"], **fields)
            self.signals[sid] = dict(r)

    def insert_signals_at_once(self, rows: list[dict[str, Any]]) -> None:
        """One multi-row INSERT statement."""
        cols = (
            "workspace_id",
            "id",
            "idea_id",
            "platform",
            "similarity",
            "sentiment",
            "sentiment_score",
            "detected_at",
        )
        with self.db.conn.cursor() as cur:
            psycopg2.extras.execute_values(
                cur,
                f"INSERT INTO ideas.signals ({', '.join(cols)}) VALUES %s",
                [
                    (
                        self.db.ws,
                        r["id"],
                        r["idea_id"],
                        r["platform"],
                        0.8,
                        r["sentiment"],
                        r["sentiment_score"],
                        r["detected_at"],
                    )
                    for r in rows
                ],
                page_size=len(rows),
            )
            assert cur.rowcount == len(rows)
        for r in rows:
            self.signals[r["id"]] = dict(r)

    def update_ideas(self, ids: list[uuid.UUID], **fields: Any) -> None:
        """One UPDATE statement over every id; the RICE score follows its fields, as the
        ideas service keeps it."""
        sets = [f"{k} = %({k})s" for k in fields]
        if any(k in RICE for k in fields):
            # SET expressions read the old row: the new values go in as parameters. A null
            # factor makes the score null, as it should.
            reach, impact, confidence, effort = (
                f"%({k})s::float8" if k in fields else k for k in RICE
            )
            sets.append(f"rice_score = {reach} * {impact} * {confidence} / {effort}")
        n = self.sql(
            f"UPDATE ideas.ideas SET {', '.join(sets)}"
            " WHERE workspace_id = %(ws)s AND id = ANY(%(ids)s)",
            {**fields, "ws": self.db.ws, "ids": ids},
        )
        assert n == len(set(ids))
        for iid in ids:
            self.ideas[iid].update(fields)
            self.ideas[iid]["rice_score"] = rice_score(self.ideas[iid])

    def update_signals(self, ids: list[uuid.UUID], **fields: Any) -> None:
        sets = ", ".join(f"{k} = %({k})s" for k in fields)
        n = self.sql(
            f"UPDATE ideas.signals SET {sets} WHERE workspace_id = %(ws)s AND id = ANY(%(ids)s)",
            {**fields, "ws": self.db.ws, "ids": ids},
        )
        assert n == len(set(ids))
        for sid in ids:
            self.signals[sid].update(fields)

    def shift_signals(self, ids: list[uuid.UUID], by: timedelta) -> None:
        n = self.sql(
            "UPDATE ideas.signals SET detected_at = detected_at + %(by)s"
            " WHERE workspace_id = %(ws)s AND id = ANY(%(ids)s)",
            {"by": by, "ws": self.db.ws, "ids": ids},
        )
        assert n == len(ids)
        for sid in ids:
            self.signals[sid]["detected_at"] += by
            assert self.clear(self.signals[sid]["detected_at"])

    def delete_signals(self, ids: list[uuid.UUID]) -> None:
        n = self.sql(
            "DELETE FROM ideas.signals WHERE workspace_id = %(ws)s AND id = ANY(%(ids)s)",
            {"ws": self.db.ws, "ids": ids},
        )
        assert n == len(ids)
        for sid in ids:
            del self.signals[sid]

    def customer(self, arr: float | None, mrr: float | None) -> uuid.UUID:
        cid = self.db.customer(f"Customer {len(self.customers) + 1}", arr=arr, mrr=mrr)
        self.customers[cid] = {"arr": arr, "mrr": mrr}
        return cid

    def link(self, idea_id: uuid.UUID, customer_id: uuid.UUID) -> None:
        self.db.link(idea_id, customer_id)
        self.links.add((idea_id, customer_id))

    # ---- writes through the public API ---------------------------------------------------

    async def api_status(self, idea_id: uuid.UUID, status: str) -> None:
        r = await self.api.patch(f"/api/v1/ideas/{idea_id}", json={"status": status})
        assert r.status == 200, r.body
        assert r.data["status"] == status
        self.ideas[idea_id]["status"] = status

    async def api_delete(self, idea_id: uuid.UUID) -> None:
        r = await self.api.delete(f"/api/v1/ideas/{idea_id}")
        assert r.status == 200, r.body
        assert r.data == {"id": str(idea_id), "deleted": True}
        self.ideas[idea_id]["status"] = "deleted"

    async def api_batch_status(self, ids: list[uuid.UUID], status: str) -> None:
        r = await self.api.patch(
            "/api/v1/ideas/batch/status", json={"ids": [str(i) for i in ids], "status": status}
        )
        assert r.status == 200, r.body
        assert r.data["updated"] == len(ids)
        for iid in ids:
            self.ideas[iid]["status"] = status

    async def api_patch(self, idea_id: uuid.UUID, **body: Any) -> None:
        r = await self.api.patch(f"/api/v1/ideas/{idea_id}", json=body)
        assert r.status == 200, r.body
        row = self.ideas[idea_id]
        for name, col in (
            ("category", "category"),
            ("riceReach", "rice_reach"),
            ("riceImpact", "rice_impact"),
            ("riceConfidence", "rice_confidence"),
            ("riceEffort", "rice_effort"),
        ):
            if name in body:
                row[col] = body[name]
        row["rice_score"] = rice_score(row)

    # ---- brute-force reports -------------------------------------------------------------

    def live(self) -> dict[uuid.UUID, dict[str, Any]]:
        return {iid: i for iid, i in self.ideas.items() if i["status"] != "deleted"}

    def summary(self, now: datetime) -> dict[str, Any]:
        live = list(self.live().values())
        month = datetime(now.year, now.month, 1, tzinfo=UTC)
        cats = Counter(i["category"] for i in live if i["category"] is not None)
        linked = {c for iid, c in self.links if self.ideas[iid]["status"] != "deleted"}

        def avg(key: str) -> float | None:
            return mean([float(i[key]) for i in live if i[key] is not None])

        def money(cids: Any, key: str) -> float:
            return float(sum(self.customers[c][key] or 0 for c in cids))

        return {
            "ideas": {
                "total": len(live),
                "active": sum(i["status"] not in CLOSED for i in live),
                "thisMonth": sum(i["created_at"] >= month for i in live),
            },
            "byStatus": dict(Counter(i["status"] for i in live)),
            "bySource": dict(Counter(i["source"] for i in live)),
            "categories": [
                {"category": c, "count": n}
                for c, n in sorted(cats.items(), key=lambda c: (-c[1], c[0]))
            ],
            "rice": {
                "averageReach": avg("rice_reach"),
                "averageImpact": avg("rice_impact"),
                "averageConfidence": avg("rice_confidence"),
                "averageEffort": avg("rice_effort"),
                "averageScore": avg("rice_score"),
                "scoredCount": sum(i["rice_score"] is not None for i in live),
            },
            "customers": {"total": len(self.customers), "linked": len(linked)},
            "revenue": {
                "totalARR": money(self.customers, "arr"),
                "totalMRR": money(self.customers, "mrr"),
                "linkedARR": money(linked, "arr"),
            },
        }

    def in_range(self, start: datetime, end: datetime) -> list[dict[str, Any]]:
        live = self.live()
        return [
            s
            for s in self.signals.values()
            if s["idea_id"] in live and start <= s["detected_at"] <= end
        ]

    def signals_report(self, start: datetime, end: datetime, period: str) -> dict[str, Any]:
        over: dict[date, list[dict[str, Any]]] = {d: [] for d in bucket_days(start, end, period)}
        platforms: dict[str, list[dict[str, Any]]] = {}
        rows = self.in_range(start, end)
        for s in rows:
            over[bucket_of(s["detected_at"].astimezone(UTC).date(), period)].append(s)
            platforms.setdefault(s["platform"], []).append(s)
        sentiments = Counter(s["sentiment"] for s in rows)
        return {
            "overTime": [
                {
                    "start": d.isoformat(),
                    "count": len(ss),
                    "averageSentiment": mean(
                        [s["sentiment_score"] for s in ss if s["sentiment_score"] is not None]
                    ),
                }
                for d, ss in over.items()
            ],
            "byPlatform": [
                {"platform": p, "signals": len(ss), "uniqueIdeas": len({s["idea_id"] for s in ss})}
                for p, ss in sorted(platforms.items(), key=lambda p: (-len(p[1]), p[0]))
            ],
            "bySentiment": [
                {"sentiment": k, "count": n}
                for k, n in sorted(
                    sentiments.items(), key=lambda s: (-s[1], s[0] is None, s[0] or "")
                )
            ],
        }


def ranges(w: World, partial_day: datetime, edge: datetime) -> list[tuple[datetime, datetime, str]]:
    """(start, end, period) of every explicit range checked."""
    m = w.midnight

    def at(days: int, h: int, mi: int, s: int = 0, us: int = 0) -> datetime:
        return m(days) + timedelta(hours=h, minutes=mi, seconds=s, microseconds=us)

    return [
        # Aligned to days: first instant of a day to the last instant of another.
        (m(60), m(30) + DAY - US, "day"),
        (m(120), m(10) + DAY - US, "week"),
        (m(170), m(3) + DAY - US, "month"),
        # Cut mid-day at both ends.
        (at(100, 13, 37, 0, 123456), at(40, 13, 37, 0, 123456), "day"),
        (at(75, 6, 0, 0, 500000), at(3, 21, 15, 0, 1), "week"),
        (at(190, 13, 37, 0, 123456), at(5, 2, 0), "month"),
        (at(150, 23, 59, 59, 999999), at(149, 0, 0), "day"),
        # Inside a single day.
        (partial_day + timedelta(hours=8), partial_day + timedelta(hours=17), "day"),
        (partial_day + timedelta(hours=8), partial_day + timedelta(hours=17), "week"),
        (partial_day + timedelta(hours=8), partial_day + timedelta(hours=17), "month"),
        (partial_day + US, partial_day + DAY - 2 * US, "day"),
        # 200 days (and all signals, future ones aside) by day, week and month.
        (w.t0 - 200 * DAY, w.t0, "day"),
        (w.t0 - 200 * DAY, w.t0, "week"),
        (w.t0 - 200 * DAY, w.t0, "month"),
        (w.t0 - 700 * DAY, w.t0 + 20 * DAY, "month"),
        # One instant: a signal's midnight, a signal's last microsecond of a day, none.
        (edge, edge, "day"),
        (edge - US, edge - US, "week"),
        (at(33, 13, 37, 0, 123456), at(33, 13, 37, 0, 123456), "month"),
        # From the last microsecond of one day to the first of the next.
        (edge - US, edge, "day"),
    ]


def either(got: Any, first: Any, second: Any) -> Any:
    """Of two expectations (the server's clock lies between two readings of ours: a day or a
    month may turn in between), the one `got` equals, else the later one, to show the diff."""
    return first if got == first else second


async def check(api: Api, w: World, partial_day: datetime, edge: datetime) -> None:
    before = datetime.now(UTC)
    r = await api.get(f"{A}/summary")
    after = datetime.now(UTC)
    assert r.status == 200, r.body
    assert r.data == either(r.data, approxed(w.summary(before)), approxed(w.summary(after)))
    for params in ({}, {"period": "day"}, {"period": "month"}):
        before = datetime.now(UTC)
        r = await api.get(f"{A}/signals", params=params)
        after = datetime.now(UTC)
        assert r.status == 200, r.body
        period = params.get("period", "week")
        first, second = (
            approxed(w.signals_report(t - DEFAULT_SPAN, t, period)) for t in (before, after)
        )
        assert r.data == either(r.data, first, second), ("default range", params)
    for start, end, period in ranges(w, partial_day, edge):
        params = {"start": iso(start), "end": iso(end), "period": period}
        r = await api.get(f"{A}/signals", params=params)
        assert r.status == 200, (params, r.body)
        assert r.data == approxed(w.signals_report(start, end, period)), params


async def test_summary_and_signals_match_a_brute_force_count(api: Api, db: Db) -> None:
    rnd = random.Random(SEED)
    t0 = datetime.now(UTC)
    w = World(db, api, rnd, t0)
    this_month = datetime(t0.year, t0.month, 1, tzinfo=UTC)

    # ---- ideas -------------------------------------------------------------------------
    def rice() -> dict[str, Any]:
        values = {
            "rice_reach": float(rnd.choice([0, rnd.randint(1, 5000)])),
            "rice_impact": rnd.choice([0.25, 0.5, 1.0, 2.0, 3.0]),
            "rice_confidence": rnd.choice([0.0, 1.0, round(rnd.random(), 2)]),
            "rice_effort": round(rnd.uniform(0.5, 20), 1),
        }
        return {k: None if rnd.random() < 0.2 else v for k, v in values.items()}

    # Random statuses (deleted among them), and six deleted ones for sure.
    created: list[tuple[datetime, str | None]] = [
        (w.moment(0.01, 200), "deleted" if n < 6 else None) for n in range(52)
    ]
    created += [(w.midnight(rnd.randint(1, 200)), None) for _ in range(5)]
    # The first instant of this month counts in thisMonth, the one before it does not.
    created += [
        (this_month, "new"),
        (this_month - US, "planned"),
        (t0 - timedelta(minutes=5), None),
    ]
    rnd.shuffle(created)
    for when, status in created:
        w.idea(
            status=status or rnd.choice(STATUSES),
            source=rnd.choice(SOURCES),
            category=rnd.choice(CATEGORIES),
            created_at=when,
            **rice(),
        )
    ids = list(w.ideas)
    deleted = [i for i in ids if w.ideas[i]["status"] == "deleted"]
    live = [i for i in ids if i not in deleted]
    assert len(deleted) >= 6

    # ---- signals, out of order ---------------------------------------------------------
    rows = [w.signal_row(rnd.choice(ids), w.moment(0, 205)) for _ in range(330)]
    rows += [
        w.signal_row(rnd.choice(ids), w.midnight(d))
        for d in rnd.sample([d for d in range(2, 205) if w.clear(w.midnight(d))], 15)
    ]
    rows += [
        w.signal_row(rnd.choice(ids), w.midnight(d) + DAY - US)
        for d in rnd.sample([d for d in range(2, 205) if w.clear(w.midnight(d) + DAY - US)], 15)
    ]
    a, b, gone = live[0], live[1], deleted[0]
    # One idea and platform: several times on one day (at its first and last instants too),
    # on consecutive days, and far apart; the same for a deleted idea.
    partial_day = w.midnight(20)
    for idea_id in (a, gone):
        for offset in (
            timedelta(0),
            timedelta(hours=3),
            timedelta(hours=8),
            timedelta(hours=12, minutes=30),
            timedelta(hours=17),
            timedelta(hours=17, microseconds=1),
            DAY - US,
        ):
            rows.append(w.signal_row(idea_id, partial_day + offset, "slack"))
        for d in (47, 46, 45, 44):
            rows.append(w.signal_row(idea_id, w.midnight(d) + timedelta(hours=d % 5 * 5), "teams"))
        for d in (180, 12):
            rows.append(w.signal_row(idea_id, w.midnight(d) + timedelta(hours=9), "discord"))
    # Two sides of one midnight, both of idea b: the one-instant and two-instant ranges.
    edge = w.midnight(33)
    rows += [w.signal_row(b, edge, "intercom"), w.signal_row(b, edge - US, "intercom")]
    rows += [w.signal_row(i, t) for i in (b, gone) for t in (w.midnight(149) - US, w.midnight(149))]
    rows += [w.signal_row(rnd.choice(ids), t0 + rnd.randint(2, 15) * DAY) for _ in range(3)]
    rnd.shuffle(rows)
    w.insert_signals(rows)

    # The data holds what the ranges are about.
    day_rows = w.in_range(partial_day, partial_day + DAY - US)
    assert any(
        partial_day + timedelta(hours=8) <= s["detected_at"] <= partial_day + timedelta(hours=17)
        for s in day_rows
    )
    assert any(
        not partial_day + timedelta(hours=8)
        <= s["detected_at"]
        <= partial_day + timedelta(hours=17)
        for s in day_rows
    )
    assert any(s["idea_id"] in deleted for s in w.signals.values())

    await check(api, w, partial_day, edge)

    # ---- writes after the fact ---------------------------------------------------------
    with_signals = {s["idea_id"] for s in w.signals.values()}
    live = [i for i in ids if w.ideas[i]["status"] != "deleted" and i not in (a, b)]
    customers = [
        w.customer(12000.5, 1000),
        w.customer(3000, None),
        w.customer(None, 50),
        w.customer(7000, 600),
    ]
    w.link(a, customers[0])
    w.link(gone, customers[1])  # linked to a deleted idea only: not `linked`
    w.link(live[1], customers[3])  # linked to an idea deleted below, and to a live one
    w.link(live[4], customers[3])

    # Through the API: deletions (one twice), undeletions, a batch over both kinds.
    for iid in live[:4]:
        assert iid in with_signals
        await w.api_delete(iid)
    await w.api_delete(live[0])
    await w.api_status(deleted[1], "planned")
    await w.api_status(deleted[2], "shipped")
    await w.api_delete(live[5])
    await w.api_status(live[5], "under_review")
    await w.api_batch_status([live[6], live[7], deleted[3]], "in_progress")
    await w.api_patch(live[9], riceReach=250, riceImpact=2, riceConfidence=0.8, riceEffort=4)
    await w.api_patch(live[10], category=None, riceEffort=0.5)

    # In SQL: RICE (set and cleared), category and source; several status changes in one
    # statement (a deletion, an undeletion); a deleted idea's fields change too.
    w.update_ideas([live[11], live[12]], rice_reach=10.0, rice_impact=0.5)
    w.update_ideas([live[13]], rice_confidence=None)
    w.update_ideas([gone], rice_reach=99999.0, category="security", source="teams")
    w.update_ideas([live[14], live[15], live[16]], category="billing")
    w.update_ideas([live[17], live[18]], source="discord")
    w.update_ideas([live[19], live[20], deleted[4]], status="archived")
    w.update_ideas([live[21]], status="deleted")

    # Signals added afterwards, one statement, to deleted ideas too and on the cut day.
    deleted_now = [i for i in ids if w.ideas[i]["status"] == "deleted"]
    more = [w.signal_row(rnd.choice(ids), w.moment(0, 205)) for _ in range(30)]
    more += [w.signal_row(i, w.moment(0, 100)) for i in deleted_now]
    more += [w.signal_row(a, partial_day + timedelta(hours=h), "slack") for h in (0, 9, 23)]
    more.append(w.signal_row(b, w.midnight(7), "zendesk"))
    rnd.shuffle(more)
    w.insert_signals_at_once(more)

    # Deleted (one statement, then one more), moved in time and platform, moved to another
    # idea (live to deleted and back), relabelled, and shifted by half a day over midnight.
    # (Picks follow insertion order, never the random ids, so that a seed is one scenario.)
    signal_ids = list(w.signals)
    cluster = [
        sid
        for sid, s in w.signals.items()
        if s["idea_id"] == a and s["detected_at"].date() == partial_day.date()
    ]
    w.delete_signals(rnd.sample(signal_ids, 6) + [cluster[0]])
    w.delete_signals([rnd.choice(list(w.signals))])
    movable = [sid for sid, s in w.signals.items() if s["idea_id"] in w.live()]
    moved = rnd.choice(movable)
    w.update_signals(
        [moved], detected_at=partial_day + timedelta(hours=16, minutes=59), platform="zendesk"
    )
    w.update_signals([rnd.choice(movable)], idea_id=gone)
    w.update_signals(
        [next(sid for sid, s in w.signals.items() if s["idea_id"] == gone and sid != moved)],
        idea_id=b,
    )
    w.update_signals(rnd.sample(movable, 3), sentiment="negative", sentiment_score=-0.75)
    late = [
        sid
        for sid, s in w.signals.items()
        if s["detected_at"].hour >= 14
        and s["detected_at"] < t0 - 2 * DAY
        and w.clear(s["detected_at"] + timedelta(hours=12))
    ]
    w.shift_signals(rnd.sample(late, 4), timedelta(hours=12))

    await check(api, w, partial_day, edge)
