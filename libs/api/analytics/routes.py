"""The analytics service's public routes: reports and exports (plan-gated)."""

from typing import Any

from pydantic import BaseModel

from libs.api.route import API, Route, Tool

from . import exports, schemas

SERVICE = "analytics"
ANALYTICS_PATH = f"{API}/analytics"
EXPORT_PATH = f"{API}/export"

# The MCP tool (docs/mcp.md) of the summary report.
ANALYTICS_SUMMARY = Tool(
    "analytics_summary",
    "The workspace at a glance, all time: ideas by status, source and category, average RICE "
    "inputs and score, customers, and revenue (total, MRR, and the ARR of customers linked to "
    "ideas).",
)
RANGE_NOTE = (
    " `start` defaults to 90 days before `end`, `end` to now; `start` after `end` or a "
    "range over 2 years is a validation error."
)


def _report(
    operation_id: str,
    path: str,
    envelope: str,
    *,
    summary: str,
    query: type[BaseModel],
    data: Any,
    note: str,
    tool: Tool | None = None,
) -> Route:
    dated = "start" in query.model_fields
    return Route(
        "GET",
        path,
        SERVICE,
        operation_id,
        "analytics:read",
        summary,
        query=query,
        responses={200: schemas.envelope(envelope, data)},
        plan_gated=True,
        tags=("Analytics",),
        description=note + (RANGE_NOTE if dated else ""),
        tool=tool,
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


def _export(
    operation_id: str,
    path: str,
    summary: str,
    *,
    scope: str,
    query: type,
    record: type,
    note: str,
) -> Route:
    # JSON: a bare array; CSV: the same records, flat, with a header row. Both stream.
    responses: dict[Any, Any] = {200: list[record], "200": "csv"}  # type: ignore[valid-type]
    return Route(
        "GET",
        path,
        SERVICE,
        operation_id,
        scope,
        summary,
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


# Each route's view is the function of services/analytics/views.py its operation id names.
ROUTES = [
    _report(
        "analytics_summary",
        f"{ANALYTICS_PATH}/summary",
        "AnalyticsSummaryResponse",
        summary="Idea, RICE, customer and revenue summary",
        query=schemas.NoQuery,
        data=schemas.AnalyticsSummary,
        note="All time.",
        tool=ANALYTICS_SUMMARY,
    ),
    _report(
        "analytics_ideas_over_time",
        f"{ANALYTICS_PATH}/ideas-over-time",
        "AnalyticsIdeasOverTimeResponse",
        summary="Ideas over time",
        query=schemas.IdeasOverTimeQuery,
        data=schemas.IdeasOverTime,
        note="Ideas by `createdAt` in zero-filled buckets (UTC, weeks from Monday), oldest first.",
    ),
    _report(
        "analytics_decisions",
        f"{ANALYTICS_PATH}/decisions",
        "AnalyticsDecisionsResponse",
        summary="Decisions: outcomes, owners, overdue, over time",
        query=schemas.DecisionsQuery,
        data=schemas.AnalyticsDecisions,
        note="Decisions by the idea's `decidedAt`; `overdue` counts ideas of the "
        "owner past their `decisionDeadline` and not decided, today.",
    ),
    _report(
        "analytics_funnel",
        f"{ANALYTICS_PATH}/funnel",
        "AnalyticsFunnelResponse",
        summary="Ideas per status with ARR and RICE; average days between stages",
        query=schemas.RangeQuery,
        data=schemas.AnalyticsFunnel,
        note="Ideas created in the range, every status but deleted.",
    ),
    _report(
        "analytics_signals",
        f"{ANALYTICS_PATH}/signals",
        "AnalyticsSignalsResponse",
        summary="Signal volume, sentiment and platforms",
        query=schemas.SignalsQuery,
        data=schemas.AnalyticsSignals,
        note="Signals by `detectedAt`.",
    ),
    _report(
        "analytics_roadmap",
        f"{ANALYTICS_PATH}/roadmap",
        "AnalyticsRoadmapResponse",
        summary="Ideas per roadmap stage and shipping velocity",
        query=schemas.NoQuery,
        data=schemas.AnalyticsRoadmap,
        note="All time.",
    ),
    _report(
        "analytics_revenue_impact",
        f"{ANALYTICS_PATH}/revenue-impact",
        "AnalyticsRevenueImpactResponse",
        summary="ARR by status and the top 20 ideas by ARR",
        query=schemas.NoQuery,
        data=schemas.AnalyticsRevenueImpact,
        note="All time.",
    ),
    _report(
        "analytics_categories",
        f"{ANALYTICS_PATH}/categories",
        "AnalyticsCategoriesResponse",
        summary="Per-category metrics",
        query=schemas.RangeQuery,
        data=list[schemas.CategoryStats],
        note="Ideas with a category created in the range, most ideas first.",
    ),
    _export(
        "export_ideas",
        f"{EXPORT_PATH}/ideas",
        "Export ideas (CSV or JSON)",
        scope="ideas:read",
        query=schemas.IdeasExportQuery,
        record=exports.IdeaExportRecord,
        note="Ideas newest first, deleted ones only with `status=deleted`.",
    ),
    _export(
        "export_customers",
        f"{EXPORT_PATH}/customers",
        "Export customers (CSV or JSON)",
        scope="customers:read",
        query=schemas.ExportQuery,
        record=exports.CustomerExportRecord,
        note="Customers newest first.",
    ),
    _export(
        "export_decisions",
        f"{EXPORT_PATH}/decisions",
        "Export decisions (CSV or JSON)",
        scope="ideas:read",
        query=schemas.DatedExportQuery,
        record=exports.DecisionExportRecord,
        note="Decided ideas by `decidedAt`, newest first.",
    ),
    _export(
        "export_signals",
        f"{EXPORT_PATH}/signals",
        "Export signals (CSV or JSON)",
        scope="ideas:read",
        query=schemas.SignalsExportQuery,
        record=exports.SignalExportRecord,
        note="Signals by `detectedAt`, newest first, with their idea.",
    ),
]
