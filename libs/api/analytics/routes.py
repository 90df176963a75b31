"""The analytics service's public routes: reports and exports (plan-gated)."""

from typing import Any

from pydantic import BaseModel

from libs.api.route import API, Route, Tool

from . import exports as em
from . import schemas as m

S = "analytics"
A = f"{API}/analytics"
E = f"{API}/export"

REPORTS: tuple[tuple[str, str, type, Any, str], ...] = (
    (
        "summary",
        "Idea, RICE, customer and revenue summary",
        m.NoQuery,
        m.AnalyticsSummary,
        "All time.",
    ),
    (
        "ideas-over-time",
        "Ideas over time",
        m.IdeasOverTimeQuery,
        m.IdeasOverTime,
        "Ideas by `createdAt` in zero-filled buckets (UTC, weeks from Monday), oldest first.",
    ),
    (
        "decisions",
        "Decisions: outcomes, owners, overdue, over time",
        m.DecisionsQuery,
        m.AnalyticsDecisions,
        "Decisions by the idea's `decidedAt`; `overdue` counts ideas of the "
        "owner past their `decisionDeadline` and not decided, today.",
    ),
    (
        "funnel",
        "Ideas per status with ARR and RICE; average days between stages",
        m.RangeQuery,
        m.AnalyticsFunnel,
        "Ideas created in the range, every status but deleted.",
    ),
    (
        "signals",
        "Signal volume, sentiment and platforms",
        m.SignalsQuery,
        m.AnalyticsSignals,
        "Signals by `detectedAt`.",
    ),
    (
        "roadmap",
        "Ideas per roadmap stage and shipping velocity",
        m.NoQuery,
        m.AnalyticsRoadmap,
        "All time.",
    ),
    (
        "revenue-impact",
        "ARR by status and the top 20 ideas by ARR",
        m.NoQuery,
        m.AnalyticsRevenueImpact,
        "All time.",
    ),
    (
        "categories",
        "Per-category metrics",
        m.RangeQuery,
        list[m.CategoryStats],
        "Ideas with a category created in the range, most ideas first.",
    ),
)
# The MCP tool (docs/mcp.md) of the summary report.
ANALYTICS_SUMMARY = Tool(
    "analytics_summary",
    "The workspace at a glance, all time: ideas by status, source and category, average RICE "
    "inputs and score, customers, and revenue (total, MRR, and the ARR of customers linked to "
    "ideas).",
)
TOOLS = {"summary": ANALYTICS_SUMMARY}
RANGE_NOTE = (
    " `start` defaults to 90 days before `end`, `end` to now; `start` after `end` or a "
    "range over 2 years is a validation error."
)


def _report(name: str, summary: str, query: type[BaseModel], data: Any, note: str) -> Route:
    op = f"analytics_{name.replace('-', '_')}"
    model_name = "Analytics" + "".join(p.title() for p in name.split("-")) + "Response"
    dated = "start" in query.model_fields
    return Route(
        "GET",
        f"{A}/{name}",
        S,
        op,
        "analytics:read",
        summary,
        query=query,
        responses={200: m.envelope(model_name, data)},
        plan_gated=True,
        tags=("Analytics",),
        description=note + (RANGE_NOTE if dated else ""),
        tool=TOOLS.get(name),
    )


EXPORT_BOUNDS = (
    "Bounded (docs/analytics.md): an analytics process runs at most `EXPORT_CONCURRENCY` "
    "exports at once (default 2), at most `EXPORT_CONCURRENCY_PER_WORKSPACE` of them (default "
    "1) for one workspace; one more is refused at once with `Retry-After: 5` (429 `rate_limited` "
    "beyond the workspace's bound, 503 `service_unavailable` beyond the process's), and still "
    "counts in the export window. A started export that runs past "
    "`EXPORT_DEADLINE_S` (default 120), or whose client takes more than "
    "`EXPORT_WRITE_TIMEOUT_S` (default 20) to accept 64 KiB, is cut off: the connection is "
    "reset and the body is incomplete (a JSON array without its `]`)."
)


def _export(kind: str, scope: str, query: type, record: type, note: str) -> Route:
    # JSON: a bare array; CSV: the same records, flat, with a header row. Both stream.
    responses: dict[Any, Any] = {200: list[record], "200": "csv"}  # type: ignore[valid-type]
    return Route(
        "GET",
        f"{E}/{kind}",
        S,
        f"export_{kind}",
        scope,
        f"Export {kind} (CSV or JSON)",
        query=query,
        responses=responses,
        plan_gated=True,
        export=True,
        tags=("Export",),
        description=note + " At most 10,000 records (`limit`, default 10000). "
        "CSV or JSON by `format`, else by `Accept` (`text/csv` or `application/json`), "
        "else JSON. "
        "Counts in the export window: 10 per hour per workspace, all kinds together. "
        "CSV text cells starting with =, +, -, @, tab or carriage return get a leading "
        "'; numbers and booleans are written as they are (`-1` stays `-1`). " + EXPORT_BOUNDS,
    )


ROUTES = [
    *(_report(*r) for r in REPORTS),
    _export(
        "ideas",
        "ideas:read",
        m.IdeasExportQuery,
        em.IdeaExportRecord,
        "Ideas newest first, deleted ones only with `status=deleted`.",
    ),
    _export(
        "customers",
        "customers:read",
        m.ExportQuery,
        em.CustomerExportRecord,
        "Customers newest first.",
    ),
    _export(
        "decisions",
        "ideas:read",
        m.DatedExportQuery,
        em.DecisionExportRecord,
        "Decided ideas by `decidedAt`, newest first.",
    ),
    _export(
        "signals",
        "ideas:read",
        m.SignalsExportQuery,
        em.SignalExportRecord,
        "Signals by `detectedAt`, newest first, with their idea.",
    ),
]
