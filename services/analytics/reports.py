"""Report queries over the ideas and customers schemas; each takes a cursor and returns rows.

Shared definitions (CONTRACT section 8): deleted ideas never count; an idea counts in a range
by `created_at`, a decision by the idea's `decided_at`, a signal by `detected_at`; both ends
of a range are inclusive.

How they stay fast on a million ideas (plans in docs/analytics.md): each report reads one
covering partial index of migration ideas/0200 by an index-only scan, in one pass grouped as
finely as its answer needs (days, not weeks or months; one row per combination of keys), and
the caller folds those few rows. No GROUPING SETS or DISTINCT aggregates in the big pass, so
that it can run in parallel. Spans of time are summed as intervals (exact integers of days and
microseconds), never as rounded fractional days.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
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
GROUP_KEYS = {"status": "status", "source": "source", "category": "category",
              "product": "product_id::text"}
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
    rows = await fetchall(cur, """
        SELECT status, n FROM ideas.status_counts
         WHERE workspace_id = %(ws)s AND status <> 'deleted' AND n <> 0""", _args(workspace_id))
    return {r["status"]: r["n"] for r in rows}


async def summary_ideas(cur: aiopg.Cursor, workspace_id: uuid.UUID,
                        month_start: datetime) -> list[Row]:
    """Sums per (source, category) over every live idea: one index-only pass."""
    return await fetchall(cur, f"""
        SELECT source, category, count(*) AS n,
               count(*) FILTER (WHERE created_at >= %(month)s) AS this_month,
               sum(rice_reach) AS reach, count(rice_reach) AS reach_n,
               sum(rice_impact) AS impact, count(rice_impact) AS impact_n,
               sum(rice_confidence) AS confidence, count(rice_confidence) AS confidence_n,
               sum(rice_effort) AS effort, count(rice_effort) AS effort_n,
               sum(rice_score) AS score, count(rice_score) AS score_n
          FROM ideas.ideas WHERE {LIVE}
         GROUP BY source, category""", _args(workspace_id, month=month_start))


async def summary_customers(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> Row:
    """Customers, and those linked to a live idea. Ideas are never removed from their table
    (removal is the status `deleted`), so a link counts unless its idea is deleted."""
    row = await fetchone(cur, f"""
        SELECT count(*) AS total, count(k.customer_id) AS linked,
               coalesce(sum(c.arr), 0) AS total_arr, coalesce(sum(c.mrr), 0) AS total_mrr,
               coalesce(sum(c.arr) FILTER (WHERE k.customer_id IS NOT NULL), 0) AS linked_arr
          FROM customers.customers c
          LEFT JOIN (SELECT DISTINCT l.customer_id FROM customers.idea_links l
                      WHERE l.workspace_id = %(ws)s
                        AND {NOT_DELETED_IDEA.format(col="l.idea_id")}) k
                 ON k.customer_id = c.id
         WHERE c.workspace_id = %(ws)s""", _args(workspace_id))
    assert row is not None
    return row


async def ideas_over_time(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range,
                          group_by: str | None) -> list[Row]:
    key = GROUP_KEYS[group_by] if group_by else "NULL::text"
    return await fetchall(cur, f"""
        SELECT {DAY.format(col="created_at")} AS day, {key} AS key, count(*) AS n
          FROM ideas.ideas
         WHERE {LIVE} AND {IN_RANGE.format(col="created_at")}
         GROUP BY 1, 2""", _args(workspace_id, rng))


async def decisions(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range,
                    now: datetime) -> list[Row]:
    """One pass over the decisions of the range, grouped per (outcome, owner, day); the small
    result is then shaped three ways in SQL: `kind` is 'outcome' (the rollup row has
    g = 1), 'owner' (with the overdue ideas, a state of today whatever the range; g is the
    owner's rank) or 'day'."""
    owner_key = ("decision_owner_email AS email, CASE WHEN decision_owner_email IS NULL"
                 " THEN decision_owner_name END AS name_key")
    return await fetchall(cur, f"""
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
        _args(workspace_id, rng, now=now))


async def funnel(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range) -> list[Row]:
    """Per status: counts, sums and the summed spans behind the average days."""
    both = "shipped_at IS NOT NULL AND decided_at IS NOT NULL"
    return await fetchall(cur, f"""
        SELECT status, count(*) AS n, coalesce(sum(total_customer_arr), 0) AS arr,
               sum(rice_score) AS rice, count(rice_score) AS rice_n,
               sum(decided_at - created_at) AS to_decided, count(decided_at) AS to_decided_n,
               sum(shipped_at - created_at) AS to_shipped, count(shipped_at) AS to_shipped_n,
               sum(shipped_at - decided_at) AS decided_to_shipped,
               count(*) FILTER (WHERE {both}) AS decided_to_shipped_n
          FROM ideas.ideas
         WHERE {LIVE} AND {IN_RANGE.format(col="created_at")}
         GROUP BY status""", _args(workspace_id, rng))


async def signals(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range) -> list[Row]:
    """Signals of live ideas per (day, platform, sentiment label)."""
    return await fetchall(cur, f"""
        SELECT {DAY.format(col="s.detected_at")} AS day, s.platform, s.sentiment,
               count(*) AS n, sum(s.sentiment_score) AS score, count(s.sentiment_score) AS score_n
          FROM ideas.signals s
         WHERE s.workspace_id = %(ws)s AND {IN_RANGE.format(col="s.detected_at")}
           AND {NOT_DELETED_IDEA.format(col="s.idea_id")}
         GROUP BY 1, 2, 3""", _args(workspace_id, rng))


async def signal_ideas(cur: aiopg.Cursor, workspace_id: uuid.UUID, rng: Range) -> list[Row]:
    """Distinct live ideas per platform. Read in (idea, platform) order from signals_an_idea, so
    that the anti-join is a merge and DISTINCT ON a streaming Unique: no hash of every pair."""
    return await fetchall(cur, f"""
        SELECT platform, count(*) AS ideas
          FROM (SELECT DISTINCT ON (s.idea_id, s.platform) s.platform FROM ideas.signals s
                 WHERE s.workspace_id = %(ws)s AND {IN_RANGE.format(col="s.detected_at")}
                   AND {NOT_DELETED_IDEA.format(col="s.idea_id")}) p
         GROUP BY platform""", _args(workspace_id, rng))


async def roadmap_stages(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> list[Row]:
    return await fetchall(cur, """
        SELECT id, name FROM ideas.roadmap_stages WHERE workspace_id = %(ws)s
         ORDER BY position, name, id""", _args(workspace_id))


async def staged_ideas(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> list[Row]:
    """Live ideas per stage id (a stage id with no stage row counts as staged too)."""
    return await fetchall(cur, f"""
        SELECT roadmap_stage_id AS id, count(*) AS n, coalesce(sum(total_customer_arr), 0) AS arr,
               sum(rice_score) AS rice, count(rice_score) AS rice_n
          FROM ideas.ideas WHERE {LIVE} AND roadmap_stage_id IS NOT NULL
         GROUP BY 1""", _args(workspace_id))


async def shipped_since(cur: aiopg.Cursor, workspace_id: uuid.UUID, now: datetime) -> Row:
    row = await fetchone(cur, f"""
        SELECT count(*) FILTER (WHERE shipped_at >= %(d30)s) AS shipped30,
               count(*) AS shipped90
          FROM ideas.ideas
         WHERE {LIVE} AND shipped_at >= %(d90)s AND shipped_at <= %(now)s""",
        _args(workspace_id, now=now, d30=now - timedelta(days=30), d90=now - timedelta(days=90)))
    assert row is not None
    return row


async def revenue_by_status(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> dict[str, Any]:
    """ARR per status, summed over the ideas that have any (others add nothing)."""
    rows = await fetchall(cur, f"""
        SELECT status, sum(total_customer_arr) AS arr
          FROM ideas.ideas WHERE {LIVE} AND total_customer_arr <> 0
         GROUP BY status""", _args(workspace_id))
    return {r["status"]: r["arr"] for r in rows}


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
               sum(decided_at - created_at) AS span
          FROM ideas.ideas
         WHERE {LIVE} AND category IS NOT NULL AND {IN_RANGE.format(col="created_at")}
         GROUP BY category, source""", _args(workspace_id, rng))
