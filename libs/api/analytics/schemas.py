"""Query and response models of the analytics service (docs/analytics.md).

Response models forbid extra fields and declare every field required (nullable where a value
may be missing), so that the OpenAPI document and the tests pin the exact shape.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, Field

from libs.api.base import Out, data_of, example
from libs.api.enums import IdeaStatus
from libs.common.validation import Query, UtcDateTime

Period = Literal["day", "week", "month"]
GroupBy = Literal["status", "source", "category", "product"]
ExportFormat = Literal["csv", "json"]
MAX_EXPORT = 10_000


# ---- queries -----------------------------------------------------------------------------


class NoQuery(Query):
    """Reports over all time take no parameter."""


class RangeQuery(Query):
    start: UtcDateTime | None = Field(
        None, description="Start of the range (RFC 3339); default: 90 days before `end`"
    )
    end: UtcDateTime | None = Field(None, description="End of the range (RFC 3339); default: now")


class IdeasOverTimeQuery(RangeQuery):
    period: Period = "week"
    """Bucket size"""
    group_by: GroupBy | None = None
    """Break each bucket down by this key"""


class DecisionsQuery(RangeQuery):
    period: Period = "month"
    """Bucket size of `overTime`"""


class SignalsQuery(RangeQuery):
    period: Period = "week"
    """Bucket size of `overTime`"""


class ExportQuery(Query):
    format: ExportFormat = "json"
    """`csv` or `json`. When absent, the Accept header chooses: `text/csv` or `application/json`
    (quality values count); JSON when it names neither. `format` wins over Accept"""
    limit: int = Field(MAX_EXPORT, ge=1, le=MAX_EXPORT)
    """At most this many records, 1 to 10000"""


class DatedExportQuery(ExportQuery):
    start: UtcDateTime | None = None
    """Only records at or after this date-time (RFC 3339)"""
    end: UtcDateTime | None = None
    """Only records at or before this date-time (RFC 3339)"""


class IdeasExportQuery(DatedExportQuery):
    status: IdeaStatus | None = None
    """Only ideas with this status (deleted ideas only with `deleted`)"""
    category: str | None = Field(None, max_length=100)
    """Only ideas of this category"""
    source: str | None = Field(None, max_length=100)
    """Only ideas from this source"""
    include_tags: bool = False
    """Add `tags`: the idea's tag names (in CSV joined by `;`)"""
    include_customer_count: bool = False
    """Add `customerCount`: how many customers are linked"""


class SignalsExportQuery(DatedExportQuery):
    platform: str | None = Field(None, max_length=100)
    """Only signals from this platform"""


# ---- reports -----------------------------------------------------------------------------

_Out = Out


class SummaryIdeaCounts(_Out):
    """Idea counts (deleted ideas never count)."""

    total: int
    """Ideas not deleted"""
    active: int
    """Ideas not shipped, rejected, archived, duplicate or deleted"""
    thisMonth: int
    """Ideas created in the current UTC month"""


class CategoryCount(_Out):
    category: str
    """Category"""
    count: int
    """Ideas in it"""


class SummaryRice(_Out):
    """Averages of the RICE fields over the ideas that have them."""

    averageReach: float | None
    """Mean reach of the ideas that have one"""
    averageImpact: float | None
    """Mean impact"""
    averageConfidence: float | None
    """Mean confidence"""
    averageEffort: float | None
    """Mean effort"""
    averageScore: float | None
    """Mean RICE score"""
    scoredCount: int
    """Ideas with a RICE score"""


class SummaryCustomers(_Out):
    """Customer counts."""

    total: int
    """Customers"""
    linked: int
    """Customers linked to at least one idea"""


class SummaryRevenue(_Out):
    """Revenue totals."""

    totalARR: float
    """ARR of all customers"""
    totalMRR: float
    """MRR of all customers"""
    linkedARR: float
    """ARR of the customers linked to at least one idea"""


class AnalyticsSummary(_Out):
    """Counts and totals over all time."""

    model_config = example(
        {
            "ideas": {"total": 1234, "active": 1011, "thisMonth": 87},
            "byStatus": {"new": 400, "planned": 211, "shipped": 180},
            "bySource": {"slack": 500, "api": 300, "zendesk": 200},
            "categories": [{"category": "feature", "count": 700}],
            "rice": {
                "averageReach": 420.5,
                "averageImpact": 1.8,
                "averageConfidence": 0.7,
                "averageEffort": 3.2,
                "averageScore": 165.4,
                "scoredCount": 312,
            },
            "customers": {"total": 150, "linked": 96},
            "revenue": {"totalARR": 4200000, "totalMRR": 350000, "linkedARR": 3100000},
        }
    )

    ideas: SummaryIdeaCounts
    """Idea counts"""
    byStatus: dict[str, int]
    """Ideas per status"""
    bySource: dict[str, int]
    """Ideas per source"""
    categories: list[CategoryCount]
    """Ideas per category, most first"""
    rice: SummaryRice
    """RICE averages"""
    customers: SummaryCustomers
    """Customer counts"""
    revenue: SummaryRevenue
    """Revenue totals"""


class IdeasBucket(_Out):
    start: date
    """First day of the bucket (UTC)"""
    count: int
    """Ideas created in the bucket"""
    # Absent (never null) without `group_by`: optional in the schema, not nullable.
    breakdown: dict[str, int] = Field(None, description="Only with `group_by`")  # type: ignore[arg-type]


class IdeasOverTime(_Out):
    """Ideas created per bucket."""

    model_config = example(
        {
            "period": "week",
            "groupBy": "status",
            "start": "2025-02-24T00:00:00.000000Z",
            "end": "2025-03-09T23:59:59.999999Z",
            "buckets": [
                {"start": "2025-02-24", "count": 5, "breakdown": {"new": 3, "planned": 2}},
                {"start": "2025-03-03", "count": 0, "breakdown": {}},
            ],
        }
    )

    period: Period
    """Bucket size"""
    groupBy: GroupBy | None
    """The breakdown key, or null"""
    start: datetime
    """Start of the range"""
    end: datetime
    """End of the range"""
    buckets: list[IdeasBucket]
    """Zero-filled buckets, oldest first"""


class DecisionSummary(_Out):
    """Decision totals of the range."""

    total: int
    """Decisions in the range"""
    averageDaysToDecision: float | None
    """Mean days from creation to decision"""
    byOutcome: dict[str, int]
    """Decisions per closure category"""


class DecisionOwner(_Out):
    owner: str | None = Field(description="The decision owner's e-mail")
    name: str | None
    """The decision owner's name"""
    total: int
    """Decisions they took in the range"""
    overdue: int
    """Their ideas past the decision deadline and not decided"""
    averageDaysToDecision: float | None
    """Mean days from creation to decision"""


class CountBucket(_Out):
    start: date
    """First day of the bucket (UTC)"""
    count: int
    """Decisions in the bucket"""


class AnalyticsDecisions(_Out):
    """Decisions taken in the range."""

    model_config = example(
        {
            "summary": {
                "total": 12,
                "averageDaysToDecision": 9.5,
                "byOutcome": {"shipped": 7, "rejected_scope": 5},
            },
            "byOwner": [
                {
                    "owner": "dana@acme.example",
                    "name": "Dana Lee",
                    "total": 12,
                    "overdue": 1,
                    "averageDaysToDecision": 9.5,
                }
            ],
            "overTime": [{"start": "2025-03-01", "count": 12}],
        }
    )

    summary: DecisionSummary
    """Totals"""
    byOwner: list[DecisionOwner]
    """Per decision owner"""
    overTime: list[CountBucket]
    """Zero-filled buckets, oldest first"""


class FunnelStage(_Out):
    status: IdeaStatus
    """The status"""
    count: int
    """Ideas with it"""
    totalARR: float
    """ARR of their linked customers"""
    averageRiceScore: float | None
    """Their mean RICE score"""


class FunnelDays(_Out):
    """Mean days between the funnel's stages."""

    capturedToDecided: float | None
    """Mean days from creation to decision"""
    capturedToShipped: float | None
    """Mean days from creation to shipping"""
    decidedToShipped: float | None
    """Mean days from decision to shipping"""


class AnalyticsFunnel(_Out):
    """Ideas per status, and the time between stages."""

    model_config = example(
        {
            "stages": [
                {"status": "planned", "count": 40, "totalARR": 950000, "averageRiceScore": 180.2}
            ],
            "averageDays": {
                "capturedToDecided": 9.5,
                "capturedToShipped": 41.0,
                "decidedToShipped": 31.5,
            },
        }
    )

    stages: list[FunnelStage]
    """One entry per status"""
    averageDays: FunnelDays
    """Mean days between the stages"""


class SignalBucket(_Out):
    start: date
    """First day of the bucket (UTC)"""
    count: int
    """Signals in the bucket"""
    averageSentiment: float | None
    """Their mean sentiment score"""


class SignalPlatform(_Out):
    platform: str
    """The platform"""
    signals: int
    """Signals from it"""
    uniqueIdeas: int
    """Ideas they mention"""


class SignalSentiment(_Out):
    sentiment: str | None
    """The sentiment, or null when unknown"""
    count: int
    """Signals with it"""


class AnalyticsSignals(_Out):
    """Signals detected in the range."""

    model_config = example(
        {
            "overTime": [{"start": "2025-03-10", "count": 14, "averageSentiment": 0.2}],
            "byPlatform": [{"platform": "zendesk", "signals": 9, "uniqueIdeas": 6}],
            "bySentiment": [{"sentiment": "positive", "count": 8}],
        }
    )

    overTime: list[SignalBucket]
    """Zero-filled buckets, oldest first"""
    byPlatform: list[SignalPlatform]
    """Per platform"""
    bySentiment: list[SignalSentiment]
    """Per sentiment"""


class RoadmapStageStats(_Out):
    id: str
    """The stage's id"""
    name: str
    """Stage name"""
    ideaCount: int
    """Ideas on the stage"""
    totalARR: float
    """ARR of their linked customers"""
    averageRiceScore: float | None
    """Their mean RICE score"""


class RoadmapVelocity(_Out):
    """Ideas shipped recently."""

    shippedLast30Days: int
    """Ideas shipped in the last 30 days"""
    shippedLast90Days: int
    """Ideas shipped in the last 90 days"""


class AnalyticsRoadmap(_Out):
    """The roadmap's stages and velocity."""

    model_config = example(
        {
            "stages": [
                {
                    "id": "8a6e0f4b-2c1d-4b7a-9e3f-5d2c1b0a9f87",
                    "name": "Now",
                    "ideaCount": 8,
                    "totalARR": 640000,
                    "averageRiceScore": 210.0,
                }
            ],
            "velocity": {"shippedLast30Days": 4, "shippedLast90Days": 11},
            "unstagedCount": 1180,
        }
    )

    stages: list[RoadmapStageStats]
    """Per roadmap stage"""
    velocity: RoadmapVelocity
    """Shipping velocity"""
    unstagedCount: int
    """Ideas on no stage"""


class RevenueByStatus(_Out):
    status: IdeaStatus
    """The status"""
    ideaCount: int
    """Ideas with it"""
    totalARR: float
    """ARR of their linked customers"""


class RevenueTopIdea(_Out):
    id: str
    """The idea's id"""
    ideaServiceId: str
    """Its `IDEA-<n>` id"""
    title: str
    """Its title"""
    status: IdeaStatus
    """Its status"""
    totalCustomerARR: float
    """ARR of its linked customers"""
    customerCount: int
    """Customers linked to it"""


class AnalyticsRevenueImpact(_Out):
    """Linked revenue per status and the top ideas by it."""

    model_config = example(
        {
            "byStatus": [{"status": "planned", "ideaCount": 40, "totalARR": 950000}],
            "topIdeas": [
                {
                    "id": "3f1c2a9e-8b4d-4e61-9a57-0c2d5e7f8a91",
                    "ideaServiceId": "IDEA-42",
                    "title": "Dark mode for the dashboard",
                    "status": "planned",
                    "totalCustomerARR": 120000,
                    "customerCount": 2,
                }
            ],
        }
    )

    byStatus: list[RevenueByStatus]
    """Per status"""
    topIdeas: list[RevenueTopIdea]
    """The 20 ideas with the most linked ARR, most first"""


class CategoryStats(_Out):
    """Metrics of one category."""

    model_config = example(
        {
            "category": "feature",
            "ideaCount": 700,
            "voteCount": 5400,
            "signalCount": 820,
            "averageRiceScore": 150.3,
            "totalARR": 2100000,
            "decidedCount": 210,
            "shippedCount": 150,
            "averageDaysToDecision": 12.4,
            "uniqueSourceCount": 9,
        }
    )

    category: str
    """Category"""
    ideaCount: int
    """Ideas in it"""
    voteCount: int
    """Sum of their votes"""
    signalCount: int
    """Sum of their signals"""
    averageRiceScore: float | None
    """Their mean RICE score"""
    totalARR: float
    """ARR of their linked customers"""
    decidedCount: int
    """Decided ideas"""
    shippedCount: int
    """Shipped ideas"""
    averageDaysToDecision: float | None
    """Mean days from creation to decision"""
    uniqueSourceCount: int
    """Distinct sources"""


def envelope(name: str, inner: type) -> type[BaseModel]:
    """`{"data": inner}` as a named model for the OpenAPI document."""
    return data_of(name, inner, "The report")
