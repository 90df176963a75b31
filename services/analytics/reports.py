"""Report queries over the ideas and customers schemas; each takes a cursor and returns rows.

Shared definitions (CONTRACT section 8): deleted ideas never count; an idea counts in a range
by `created_at`, a decision by the idea's `decided_at`, a signal by `detected_at`; both ends
of a range are inclusive. Days between two moments are fractional (seconds / 86400).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import aiopg

from libs.common.db import Row, fetchall, fetchone

from .periods import Period, Range

LIVE = "workspace_id = %(ws)s AND status <> 'deleted'"
CLOSED = "('shipped', 'rejected', 'archived', 'duplicate')"
DAYS_TO_DECISION = "extract(epoch FROM decided_at - created_at) / 86400.0"
# group_by values to SQL; never formatted from user input, only looked up here.
GROUP_KEYS = {"status": "status", "source": "source", "category": "category",
              "product": "product_id::text"}
PERIODS = {"day", "week", "month"}


def _args(workspace_id: uuid.UUID, rng: Range | None = None, **extra: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"ws": workspace_id, **extra}
    if rng is not None:
        args.update(start=rng.start, end=rng.end)
    return args


def _bucket(column: str, period: Period) -> str:
    assert period in PERIODS
    return f"date_trunc('{period}', {column})::date"


async def summary_ideas(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> list[Row]:
    """Sums per (status, source, category), folded by the caller: one parallel-friendly pass."""
    return await fetchall(cur, f"""
        SELECT status, source, category, count(*) AS n,
               count(*) FILTER (WHERE created_at >= date_trunc('month', now())) AS this_month,
               sum(rice_reach) AS reach, count(rice_reach) AS reach_n,
               sum(rice_impact) AS impact, count(rice_impact) AS impact_n,
               sum(rice_confidence) AS confidence, count(rice_confidence) AS confidence_n,
               sum(rice_effort) AS effort, count(rice_effort) AS effort_n,
               sum(rice_score) AS score, count(rice_score) AS score_n
          FROM ideas.ideas WHERE {LIVE}
         GROUP BY status, source, category""", _args(workspace_id))


async def summary_customers(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> Row:
    row = await fetchone(cur, """
        SELECT count(*) AS total, count(*) FILTER (WHERE linked) AS linked,
               coalesce(sum(arr), 0) AS total_arr, coalesce(sum(mrr), 0) AS total_mrr,
               coalesce(sum(arr) FILTER (WHERE linked), 0) AS linked_arr
          FROM (SELECT c.arr, c.mrr, EXISTS (
                    SELECT 1 FROM customers.idea_links l
                      JOIN ideas.ideas i ON i.id = l.idea_id AND i.workspace_id = l.workspace_id
                     WHERE l.workspace_id = c.workspace_id AND l.customer_id = c.id
                       AND i.status <> 'deleted') AS linked
                  FROM customers.customers c WHERE c.workspace_id = %(ws)s) x""",
        _args(workspace_id))
    assert row is not None
    return row


async def ideas_over_time(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range,
                          period: Period, group_by: str | None) -> list[Row]:
    key = GROUP_KEYS[group_by] if group_by else "NULL::text"
    return await fetchall(cur, f"""
        SELECT {_bucket("created_at", period)} AS bucket, {key} AS key, count(*) AS n
          FROM ideas.ideas
         WHERE {LIVE} AND created_at >= %(start)s AND created_at <= %(end)s
         GROUP BY 1, 2""", _args(workspace_id, rng))


async def decision_outcomes(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range) -> list[Row]:
    """Per closure category, and the totals row (`g` = 1)."""
    return await fetchall(cur, f"""
        SELECT GROUPING(closure_category) AS g, closure_category, count(*) AS n,
               avg({DAYS_TO_DECISION}) AS days
          FROM ideas.ideas
         WHERE {LIVE} AND decided_at >= %(start)s AND decided_at <= %(end)s
         GROUP BY ROLLUP (closure_category)""", _args(workspace_id, rng))


async def decision_owners(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range) -> list[Row]:
    """Owners with decisions in the range or overdue ideas (overdue is a state of today)."""
    in_range = "decided_at >= %(start)s AND decided_at <= %(end)s"
    overdue = "decided_at IS NULL AND decision_deadline < now()"
    return await fetchall(cur, f"""
        SELECT decision_owner_email AS owner, max(decision_owner_name) AS name,
               count(*) FILTER (WHERE {in_range}) AS total,
               count(*) FILTER (WHERE {overdue}) AS overdue,
               avg({DAYS_TO_DECISION}) FILTER (WHERE {in_range}) AS days
          FROM ideas.ideas
         WHERE {LIVE} AND (({in_range}) OR ({overdue}))
         GROUP BY decision_owner_email,
                  CASE WHEN decision_owner_email IS NULL THEN decision_owner_name END
         ORDER BY total DESC, overdue DESC, owner NULLS LAST, name NULLS LAST""",
        _args(workspace_id, rng))


async def decisions_over_time(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range,
                              period: Period) -> list[Row]:
    return await fetchall(cur, f"""
        SELECT {_bucket("decided_at", period)} AS bucket, count(*) AS n
          FROM ideas.ideas
         WHERE {LIVE} AND decided_at >= %(start)s AND decided_at <= %(end)s
         GROUP BY 1""", _args(workspace_id, rng))


async def funnel(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range) -> list[Row]:
    """Per status: counts, sums and the sums behind the average days (folded by the caller)."""
    return await fetchall(cur, f"""
        SELECT status, count(*) AS n, coalesce(sum(total_customer_arr), 0) AS arr,
               sum(rice_score) AS rice, count(rice_score) AS rice_n,
               sum({DAYS_TO_DECISION}) AS to_decided, count(decided_at) AS to_decided_n,
               sum(extract(epoch FROM shipped_at - created_at) / 86400.0) AS to_shipped,
               count(shipped_at) AS to_shipped_n,
               sum(extract(epoch FROM shipped_at - decided_at) / 86400.0) AS decided_to_shipped,
               count(shipped_at - decided_at) AS decided_to_shipped_n
          FROM ideas.ideas
         WHERE {LIVE} AND created_at >= %(start)s AND created_at <= %(end)s
         GROUP BY status""", _args(workspace_id, rng))


async def signals(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range,
                  period: Period) -> list[Row]:
    """One pass grouped three ways: by bucket, by platform, by sentiment label."""
    bucket = _bucket("s.detected_at", period)
    return await fetchall(cur, f"""
        SELECT GROUPING(s.platform) AS g_platform, GROUPING(s.sentiment) AS g_sentiment,
               {bucket} AS bucket, s.platform, s.sentiment,
               count(*) AS n, avg(s.sentiment_score) AS sentiment_avg,
               count(DISTINCT s.idea_id) AS ideas
          FROM ideas.signals s
          JOIN ideas.ideas i ON i.id = s.idea_id AND i.workspace_id = s.workspace_id
         WHERE s.workspace_id = %(ws)s AND i.status <> 'deleted'
           AND s.detected_at >= %(start)s AND s.detected_at <= %(end)s
         GROUP BY GROUPING SETS (({bucket}), (s.platform), (s.sentiment))""",
        _args(workspace_id, rng))


async def roadmap_stages(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> list[Row]:
    return await fetchall(cur, """
        SELECT st.id, st.name, count(i.id) AS n,
               coalesce(sum(i.total_customer_arr), 0) AS arr, avg(i.rice_score) AS rice
          FROM ideas.roadmap_stages st
          LEFT JOIN ideas.ideas i ON i.workspace_id = st.workspace_id
                                 AND i.roadmap_stage_id = st.id AND i.status <> 'deleted'
         WHERE st.workspace_id = %(ws)s
         GROUP BY st.id, st.name, st.position
         ORDER BY st.position, st.name, st.id""", _args(workspace_id))


async def roadmap_counts(cur: aiopg.Cursor, workspace_id: uuid.UUID, now: datetime) -> Row:
    row = await fetchone(cur, f"""
        SELECT (SELECT count(*) FROM ideas.ideas
                 WHERE {LIVE} AND shipped_at >= %(now)s - interval '30 days'
                   AND shipped_at <= %(now)s) AS shipped30,
               (SELECT count(*) FROM ideas.ideas
                 WHERE {LIVE} AND shipped_at >= %(now)s - interval '90 days'
                   AND shipped_at <= %(now)s) AS shipped90,
               (SELECT count(*) FROM ideas.ideas
                 WHERE {LIVE} AND roadmap_stage_id IS NULL) AS unstaged""",
        _args(workspace_id, now=now))
    assert row is not None
    return row


async def revenue_by_status(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> list[Row]:
    return await fetchall(cur, f"""
        SELECT status, count(*) AS n, coalesce(sum(total_customer_arr), 0) AS arr
          FROM ideas.ideas WHERE {LIVE} GROUP BY status""", _args(workspace_id))


async def revenue_top_ideas(cur: aiopg.Cursor, workspace_id: uuid.UUID, limit: int) -> list[Row]:
    """Ideas with customer ARR, highest first (the order of the ARR index)."""
    return await fetchall(cur, f"""
        SELECT id, number, title, status, total_customer_arr AS arr, customer_count
          FROM ideas.ideas
         WHERE {LIVE} AND total_customer_arr > 0
         ORDER BY total_customer_arr DESC NULLS LAST, id DESC
         LIMIT %(limit)s""", _args(workspace_id, limit=limit))


async def categories(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range) -> list[Row]:
    """Sums per (category, source); the caller folds them per category (sources = groups)."""
    return await fetchall(cur, f"""
        SELECT category, source, count(*) AS n, coalesce(sum(vote_count), 0) AS votes,
               coalesce(sum(signal_count), 0) AS signals, sum(rice_score) AS rice,
               count(rice_score) AS rice_n, coalesce(sum(total_customer_arr), 0) AS arr,
               count(decided_at) AS decided, count(shipped_at) AS shipped,
               sum({DAYS_TO_DECISION}) AS days
          FROM ideas.ideas
         WHERE {LIVE} AND category IS NOT NULL
           AND created_at >= %(start)s AND created_at <= %(end)s
         GROUP BY category, source""", _args(workspace_id, rng))
