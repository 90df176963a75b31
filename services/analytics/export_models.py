"""Records of the JSON exports (CONTRACT section 9); CSV lines carry the same fields, flat."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IdeaExportRice(_Out):
    reach: float | None
    impact: float | None
    confidence: float | None
    effort: float | None
    score: float | None
    priority: str | None
    source: str | None


class IdeaExportValidation(_Out):
    score: float | None
    evidenceCount: float | None


class IdeaExportRecord(_Out):
    """An Idea; CSV flattens `rice.x` to `riceX` and `validation.x` to `validationX`."""

    id: uuid.UUID
    ideaServiceId: str
    title: str
    summary: str | None
    status: str
    source: str
    category: str | None
    ideaType: str | None
    url: str | None
    destination: str | None
    destinationIssueId: str | None
    destinationIssueUrl: str | None
    voteCount: int
    publicVoteCount: int
    requestCount: int
    signalCount: int
    rice: IdeaExportRice
    validation: IdeaExportValidation
    decisionReason: str | None
    decidedAt: datetime | None
    closureCategory: str | None
    decisionOwnerName: str | None
    decisionDeadline: datetime | None
    totalCustomerARR: float | None
    lastActivityAt: datetime | None
    lastSignalAt: datetime | None
    uniqueSourceCount: int
    averageSentiment: float | None
    workItemStatus: str | None
    shippedAt: datetime | None
    productId: uuid.UUID | None
    actionable: bool
    createdAt: datetime
    roadmapStageId: uuid.UUID | None
    tags: list[str] = Field(None, description="Tag names; only with include_tags (CSV: joined by ;)")  # type: ignore[assignment]
    customerCount: int = Field(None, description="Linked customers; only with include_customer_count")  # type: ignore[assignment]


class CustomerExportRecord(_Out):
    """A CustomerFull; CSV writes `metadata` as JSON text."""

    id: uuid.UUID
    name: str
    email: str | None
    domain: str | None
    arr: float | None
    mrr: float | None
    plan: str | None
    source: str
    externalId: str | None
    crmCompanyId: str | None
    ideaCount: int
    metadata: dict[str, Any] | None
    createdAt: datetime
    updatedAt: datetime | None


class DecisionExportRecord(_Out):
    """A decided idea with its decision context; `id` is the idea's id."""

    id: uuid.UUID
    ideaServiceId: str
    title: str
    status: str
    decidedAt: datetime
    closureCategory: str | None
    decisionReason: str | None
    decisionOwnerName: str | None


class SignalExportRecord(_Out):
    """A Signal with the context of its idea."""

    id: uuid.UUID
    platform: str
    userId: str | None
    userName: str | None
    userEmail: str | None
    content: str | None
    similarity: float
    sentiment: str | None
    sentimentScore: float | None
    autoLinkedCustomerId: str | None
    detectedAt: datetime
    createdAt: datetime
    ideaId: uuid.UUID
    ideaServiceId: str
    ideaTitle: str
