"""Query and response models of the analytics service (CONTRACT sections 8 and 9).

Response models forbid extra fields and declare every field required (nullable where a value
may be missing), so that the OpenAPI document and the tests pin the exact shape.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from libs.common.validation import Query, UtcDateTime

Period = Literal["day", "week", "month"]
GroupBy = Literal["status", "source", "category", "product"]
IdeaStatus = Literal["captured", "new", "under_review", "planned", "in_progress", "shipped",
                     "rejected", "archived", "duplicate", "deleted"]
ExportFormat = Literal["csv", "json"]
MAX_EXPORT = 10_000


# ---- queries -----------------------------------------------------------------------------

class NoQuery(Query):
    """Reports over all time take no parameter."""


class RangeQuery(Query):
    start: UtcDateTime | None = Field(None, description="Default: 90 days before `end`")
    end: UtcDateTime | None = Field(None, description="Default: now")


class IdeasOverTimeQuery(RangeQuery):
    period: Period = "week"
    group_by: GroupBy | None = None


class DecisionsQuery(RangeQuery):
    period: Period = "month"


class SignalsQuery(RangeQuery):
    period: Period = "week"


class ExportQuery(Query):
    format: ExportFormat = Field(
        "json", description="`csv` or `json`. When absent, the Accept header chooses: "
        "`text/csv` or `application/json` (quality values count); JSON when it names neither. "
        "`format` wins over Accept.")
    limit: int = Field(MAX_EXPORT, ge=1, le=MAX_EXPORT)


class DatedExportQuery(ExportQuery):
    start: UtcDateTime | None = None
    end: UtcDateTime | None = None


class IdeasExportQuery(DatedExportQuery):
    status: IdeaStatus | None = None
    category: str | None = Field(None, max_length=100)
    source: str | None = Field(None, max_length=100)
    include_tags: bool = False
    include_customer_count: bool = False


class SignalsExportQuery(DatedExportQuery):
    platform: str | None = Field(None, max_length=100)


# ---- reports -----------------------------------------------------------------------------

class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SummaryIdeaCounts(_Out):
    total: int
    active: int
    thisMonth: int


class CategoryCount(_Out):
    category: str
    count: int


class SummaryRice(_Out):
    averageReach: float | None
    averageImpact: float | None
    averageConfidence: float | None
    averageEffort: float | None
    averageScore: float | None
    scoredCount: int


class SummaryCustomers(_Out):
    total: int
    linked: int


class SummaryRevenue(_Out):
    totalARR: float
    totalMRR: float
    linkedARR: float


class AnalyticsSummary(_Out):
    ideas: SummaryIdeaCounts
    byStatus: dict[str, int]
    bySource: dict[str, int]
    categories: list[CategoryCount]
    rice: SummaryRice
    customers: SummaryCustomers
    revenue: SummaryRevenue


class IdeasBucket(_Out):
    start: date
    count: int
    # Absent (never null) without `group_by`: optional in the schema, not nullable.
    breakdown: dict[str, int] = Field(None, description="Only with `group_by`")  # type: ignore[assignment]


class IdeasOverTime(_Out):
    period: Period
    groupBy: GroupBy | None
    start: datetime
    end: datetime
    buckets: list[IdeasBucket]


class DecisionSummary(_Out):
    total: int
    averageDaysToDecision: float | None
    byOutcome: dict[str, int]


class DecisionOwner(_Out):
    owner: str | None = Field(description="The decision owner's e-mail")
    name: str | None
    total: int
    overdue: int
    averageDaysToDecision: float | None


class CountBucket(_Out):
    start: date
    count: int


class AnalyticsDecisions(_Out):
    summary: DecisionSummary
    byOwner: list[DecisionOwner]
    overTime: list[CountBucket]


class FunnelStage(_Out):
    status: str
    count: int
    totalARR: float
    averageRiceScore: float | None


class FunnelDays(_Out):
    capturedToDecided: float | None
    capturedToShipped: float | None
    decidedToShipped: float | None


class AnalyticsFunnel(_Out):
    stages: list[FunnelStage]
    averageDays: FunnelDays


class SignalBucket(_Out):
    start: date
    count: int
    averageSentiment: float | None


class SignalPlatform(_Out):
    platform: str
    signals: int
    uniqueIdeas: int


class SignalSentiment(_Out):
    sentiment: str | None
    count: int


class AnalyticsSignals(_Out):
    overTime: list[SignalBucket]
    byPlatform: list[SignalPlatform]
    bySentiment: list[SignalSentiment]


class RoadmapStageStats(_Out):
    id: str
    name: str
    ideaCount: int
    totalARR: float
    averageRiceScore: float | None


class RoadmapVelocity(_Out):
    shippedLast30Days: int
    shippedLast90Days: int


class AnalyticsRoadmap(_Out):
    stages: list[RoadmapStageStats]
    velocity: RoadmapVelocity
    unstagedCount: int


class RevenueByStatus(_Out):
    status: str
    ideaCount: int
    totalARR: float


class RevenueTopIdea(_Out):
    id: str
    ideaServiceId: str
    title: str
    status: str
    totalCustomerARR: float
    customerCount: int


class AnalyticsRevenueImpact(_Out):
    byStatus: list[RevenueByStatus]
    topIdeas: list[RevenueTopIdea]


class CategoryStats(_Out):
    category: str
    ideaCount: int
    voteCount: int
    signalCount: int
    averageRiceScore: float | None
    totalARR: float
    decidedCount: int
    shippedCount: int
    averageDaysToDecision: float | None
    uniqueSourceCount: int


def envelope(name: str, inner: type) -> type[BaseModel]:
    """`{"data": inner}` as a named model for the OpenAPI document."""
    return create_model(name, __base__=_Out, data=(inner, ...))
