"""Report queries over the ideas and customers schemas; each takes a cursor and returns rows.

Shared definitions (docs/analytics.md): deleted ideas never count; an idea counts in a range
by `created_at`, a decision by the idea's `decided_at`, a signal by `detected_at`; both ends
of a range are inclusive.

How they stay fast on a million ideas (plans in docs/analytics.md): summary and signals read
rollups the ideas service keeps by trigger in the same transaction as each write (ideas
migration 0300); every other report reads one covering partial index of migration ideas/0200
by an index-only scan, in one pass grouped as
finely as its answer needs (days, not weeks or months; one row per combination of keys), and
the caller folds those few rows. No GROUPING SETS or DISTINCT aggregates in the big pass, so
that it can run in parallel. Spans of time are summed as intervals (exact integers of days and
microseconds), never as rounded fractional days.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import aiopg

from libs.common.db import Row, fetchall, fetchone

from .periods import Range

LIVE = "workspace_id = %(ws)s AND status <> 'deleted'"
IN_RANGE = "{col} >= %(start)s AND {col} <= %(end)s"
# Day buckets by arithmetic on the UTC instant (date_bin), cheaper per row than date_trunc;
# the caller folds days into weeks or months. The origin is a Monday, midnight UTC.
DAY = "date_bin('1 day', {col}, '2000-01-03 00:00:00+00')"
# group_by values to SQL; never formatted from user input, only looked up here.
GROUP_KEYS = {
    "status": "status",
    "source": "source",
    "category": "category",
    "product": "product_id::text",
}
# Signals of deleted ideas: the anti-join reads only the deleted ideas (index ideas_status).
NOT_DELETED_IDEA = """NOT EXISTS (SELECT 1 FROM ideas.ideas d
                    WHERE d.workspace_id = %(ws)s AND d.status = 'deleted' AND d.id = {col})"""


def _args(workspace_id: uuid.UUID, rng: Range | None = None, **extra: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"ws": workspace_id, **extra}
    if rng is not None:
        args.update(start=rng.start, end=rng.end)
    return args


async def status_counts(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> dict[str, int]:
    """Live ideas per status, from the counters the ideas service keeps by trigger in the same
    transaction as every insert, status change and removal (ideas migrations 0001/0002): exact,
    and from the same snapshot as the other queries of the report."""
    rows = await fetchall(
        cur,
        """
        SELECT status, n FROM ideas.status_counts
         WHERE workspace_id = %(ws)s AND status <> 'deleted' AND n <> 0""",
        _args(workspace_id),
    )
    return {r["status"]: r["n"] for r in rows}


async def summary_ideas(cur: aiopg.Cursor, workspace_id: uuid.UUID, month_start: date) -> list[Row]:
    """Sums per (source, category) over every live idea, from the monthly rollup the ideas
    service keeps by trigger (ideas migration 0300): a few rows per month, whatever the size."""
    return await fetchall(
        cur,
        """
        SELECT source, category, sum(n)::bigint AS n,
               coalesce(sum(n) FILTER (WHERE month >= %(month)s), 0)::bigint AS this_month,
               sum(reach_sum) AS reach, sum(reach_n)::bigint AS reach_n,
               sum(impact_sum) AS impact, sum(impact_n)::bigint AS impact_n,
               sum(confidence_sum) AS confidence, sum(confidence_n)::bigint AS confidence_n,
               sum(effort_sum) AS effort, sum(effort_n)::bigint AS effort_n,
               sum(score_sum) AS score, sum(score_n)::bigint AS score_n
          FROM ideas.idea_months WHERE workspace_id = %(ws)s
         GROUP BY source, category HAVING sum(n) <> 0""",
        _args(workspace_id, month=month_start),
    )


async def summary_customers(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> Row:
    """Customers, and those linked to a live idea. Ideas are never removed from their table
    (removal is the status `deleted`), so a link counts unless its idea is deleted."""
    row = await fetchone(
        cur,
        f"""
        SELECT count(*) AS total, count(k.customer_id) AS linked,
               coalesce(sum(c.arr), 0) AS total_arr, coalesce(sum(c.mrr), 0) AS total_mrr,
               coalesce(sum(c.arr) FILTER (WHERE k.customer_id IS NOT NULL), 0) AS linked_arr
          FROM customers.customers c
          LEFT JOIN (SELECT DISTINCT l.customer_id FROM customers.idea_links l
                      WHERE l.workspace_id = %(ws)s
                        AND {NOT_DELETED_IDEA.format(col="l.idea_id")}) k
                 ON k.customer_id = c.id
         WHERE c.workspace_id = %(ws)s""",
        _args(workspace_id),
    )
    assert row is not None
    return row


async def ideas_over_time(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range, group_by: str | None
) -> list[Row]:
    key = GROUP_KEYS[group_by] if group_by else "NULL::text"
    return await fetchall(
        cur,
        f"""
        SELECT {DAY.format(col="created_at")} AS day, {key} AS key, count(*) AS n
          FROM ideas.ideas
         WHERE {LIVE} AND {IN_RANGE.format(col="created_at")}
         GROUP BY 1, 2""",
        _args(workspace_id, rng),
    )


async def decisions(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range, now: datetime
) -> list[Row]:
    """One pass over the decisions of the range, grouped per (outcome, owner, day); the small
    result is then shaped three ways in SQL: `kind` is 'outcome' (the rollup row has
    g = 1), 'owner' (with the overdue ideas, a state of today whatever the range; g is the
    owner's rank) or 'day'."""
    owner_key = (
        "decision_owner_email AS email, CASE WHEN decision_owner_email IS NULL"
        " THEN decision_owner_name END AS name_key"
    )
    return await fetchall(
        cur,
        f"""
        WITH fine AS (
            SELECT closure_category AS outcome, {owner_key},
                   max(decision_owner_name) AS name, {DAY.format(col="decided_at")} AS day,
                   count(*) AS n, sum(decided_at - created_at) AS span
              FROM ideas.ideas
             WHERE {LIVE} AND {IN_RANGE.format(col="decided_at")}
             GROUP BY 1, 2, 3, 5),
        overdue AS (
            SELECT {owner_key}, max(decision_owner_name) AS name, count(*) AS n
              FROM ideas.ideas
             WHERE {LIVE} AND decided_at IS NULL AND decision_deadline < %(now)s
             GROUP BY 1, 2),
        owners AS (
            SELECT email, max(name) AS name, sum(total)::bigint AS total,
                   sum(overdue)::bigint AS overdue, sum(span) AS span
              FROM (SELECT email, name_key, name, n AS total, 0 AS overdue, span FROM fine
                    UNION ALL
                    SELECT email, name_key, name, 0, n, NULL FROM overdue) o
             GROUP BY email, name_key)
        SELECT 'outcome' AS kind, GROUPING(outcome) AS g, outcome AS key, NULL AS name,
               sum(n)::bigint AS n, 0::bigint AS overdue, sum(span) AS span,
               NULL::timestamptz AS day
          FROM fine GROUP BY ROLLUP (outcome)
        UNION ALL
        SELECT 'owner', row_number() OVER (
                   ORDER BY total DESC, overdue DESC, email NULLS LAST, name NULLS LAST),
               email, name, total, overdue, span, NULL FROM owners
        UNION ALL
        SELECT 'day', 0, NULL, NULL, sum(n)::bigint, 0, NULL, day FROM fine GROUP BY day""",
        _args(workspace_id, rng, now=now),
    )


async def funnel(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range) -> list[Row]:
    """Per status: counts, sums and the summed spans behind the average days."""
    both = "shipped_at IS NOT NULL AND decided_at IS NOT NULL"
    return await fetchall(
        cur,
        f"""
        SELECT status, count(*) AS n, coalesce(sum(total_customer_arr), 0) AS arr,
               sum(rice_score) AS rice, count(rice_score) AS rice_n,
               sum(decided_at - created_at) AS to_decided, count(decided_at) AS to_decided_n,
               sum(shipped_at - created_at) AS to_shipped, count(shipped_at) AS to_shipped_n,
               sum(shipped_at - decided_at) AS decided_to_shipped,
               count(*) FILTER (WHERE {both}) AS decided_to_shipped_n
          FROM ideas.ideas
         WHERE {LIVE} AND {IN_RANGE.format(col="created_at")}
         GROUP BY status""",
        _args(workspace_id, rng),
    )


@dataclass(frozen=True)
class DaySplit:
    """A range cut into whole UTC days [first, after) read from the rollups, and the instants
    before and after them, [start, first) and [after, end], read from the signals themselves.
    With no whole day inside, the whole range is an edge: first = after, edges [start, start)
    and [start, end]."""

    first: date
    after: date
    head_end: datetime
    tail_start: datetime


def split_days(rng: Range) -> DaySplit:
    first = rng.start.astimezone(UTC).date()
    if rng.start != _midnight(first):
        first += timedelta(days=1)
    after = (rng.end.astimezone(UTC) + timedelta(microseconds=1)).date()
    if first >= after:
        return DaySplit(first, first, rng.start, rng.start)
    return DaySplit(first, after, _midnight(first), _midnight(after))


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(0), UTC)


def _split_args(workspace_id: uuid.UUID, rng: Range) -> dict[str, Any]:
    split = split_days(rng)
    return _args(
        workspace_id,
        rng,
        first=split.first,
        after=split.after,
        head_end=split.head_end,
        tail_start=split.tail_start,
    )


async def signals(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range) -> list[Row]:
    """Signals of live ideas in one statement, rows of two kinds:
    - 'day': per (day, platform, sentiment label) the count and sentiment sums: whole days from
      the daily rollup (ideas migration 0300), the edges of the range from the signals;
    - 'ideas': per platform the distinct live ideas: over the whole days, the (idea, platform)
      pairs whose first day there follows no day of theirs inside (ideas.signal_firsts), plus
      the pairs of the edges with no signal on those whole days (ideas.signal_idea_days).
    The edges are read once, by index-only scans of signals_an_detected."""
    return await fetchall(
        cur,
        f"""
        WITH edge AS MATERIALIZED (
            SELECT e.* FROM (
                SELECT detected_at, platform, sentiment, sentiment_score, idea_id
                  FROM ideas.signals
                 WHERE workspace_id = %(ws)s
                   AND detected_at >= %(start)s AND detected_at < %(head_end)s
                UNION ALL
                SELECT detected_at, platform, sentiment, sentiment_score, idea_id
                  FROM ideas.signals
                 WHERE workspace_id = %(ws)s
                   AND detected_at >= %(tail_start)s AND detected_at <= %(end)s) e
             WHERE {NOT_DELETED_IDEA.format(col="e.idea_id")})
        SELECT 'day' AS kind, day, platform, sentiment, n, score_sum AS score, score_n
          FROM ideas.signal_days
         WHERE workspace_id = %(ws)s AND day >= %(first)s AND day < %(after)s AND n <> 0
        UNION ALL
        SELECT 'day', (detected_at AT TIME ZONE 'UTC')::date, platform, sentiment, count(*),
               sum(sentiment_score::numeric), count(sentiment_score)
          FROM edge GROUP BY 2, 3, 4
        UNION ALL
        SELECT 'ideas', NULL, platform, NULL, sum(n)::bigint, NULL, NULL FROM (
            SELECT platform, n FROM ideas.signal_firsts
             WHERE workspace_id = %(ws)s AND day >= %(first)s AND day < %(after)s
               AND prev_day < %(first)s
            UNION ALL
            SELECT p.platform, 1 FROM (SELECT DISTINCT idea_id, platform FROM edge) p
             WHERE NOT EXISTS (SELECT 1 FROM ideas.signal_idea_days t
                                WHERE t.workspace_id = %(ws)s AND t.idea_id = p.idea_id
                                  AND t.platform = p.platform
                                  AND t.day >= %(first)s AND t.day < %(after)s)) u
         GROUP BY platform HAVING sum(n) <> 0""",
        _split_args(workspace_id, rng),
    )


async def roadmap_stages(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> list[Row]:
    return await fetchall(
        cur,
        """
        SELECT id, name FROM ideas.roadmap_stages WHERE workspace_id = %(ws)s
         ORDER BY position, name, id""",
        _args(workspace_id),
    )


async def staged_ideas(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> list[Row]:
    """Live ideas per stage id (a stage id with no stage row counts as staged too)."""
    return await fetchall(
        cur,
        f"""
        SELECT roadmap_stage_id AS id, count(*) AS n, coalesce(sum(total_customer_arr), 0) AS arr,
               sum(rice_score) AS rice, count(rice_score) AS rice_n
          FROM ideas.ideas WHERE {LIVE} AND roadmap_stage_id IS NOT NULL
         GROUP BY 1""",
        _args(workspace_id),
    )


async def shipped_since(cur: aiopg.Cursor, workspace_id: uuid.UUID, now: datetime) -> Row:
    row = await fetchone(
        cur,
        f"""
        SELECT count(*) FILTER (WHERE shipped_at >= %(d30)s) AS shipped30,
               count(*) AS shipped90
          FROM ideas.ideas
         WHERE {LIVE} AND shipped_at >= %(d90)s AND shipped_at <= %(now)s""",
        _args(workspace_id, now=now, d30=now - timedelta(days=30), d90=now - timedelta(days=90)),
    )
    assert row is not None
    return row


async def revenue_by_status(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> dict[str, Any]:
    """ARR per status, summed over the ideas that have any (others add nothing)."""
    rows = await fetchall(
        cur,
        f"""
        SELECT status, sum(total_customer_arr) AS arr
          FROM ideas.ideas WHERE {LIVE} AND total_customer_arr <> 0
         GROUP BY status""",
        _args(workspace_id),
    )
    return {r["status"]: r["arr"] for r in rows}


async def revenue_top_ideas(cur: aiopg.Cursor, workspace_id: uuid.UUID, limit: int) -> list[Row]:
    """Ideas with customer ARR, highest first (the order of the ARR index)."""
    return await fetchall(
        cur,
        f"""
        SELECT id, number, title, status, total_customer_arr AS arr, customer_count
          FROM ideas.ideas
         WHERE {LIVE} AND total_customer_arr > 0
         ORDER BY total_customer_arr DESC NULLS LAST, id DESC
         LIMIT %(limit)s""",
        _args(workspace_id, limit=limit),
    )


async def categories(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range) -> list[Row]:
    """Sums per (category, source); the caller folds them per category (sources = groups)."""
    return await fetchall(
        cur,
        f"""
        SELECT category, source, count(*) AS n, coalesce(sum(vote_count), 0) AS votes,
               coalesce(sum(signal_count), 0) AS signals, sum(rice_score) AS rice,
               count(rice_score) AS rice_n, coalesce(sum(total_customer_arr), 0) AS arr,
               count(decided_at) AS decided, count(shipped_at) AS shipped,
               sum(decided_at - created_at) AS span
          FROM ideas.ideas
         WHERE {LIVE} AND category IS NOT NULL AND {IN_RANGE.format(col="created_at")}
         GROUP BY category, source""",
        _args(workspace_id, rng),
    )
