"""Response models of the ideas service (the OpenAPI schemas; nullable fields have no default)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RiceScores(Out):
    reach: float | None
    impact: float | None
    confidence: float | None
    effort: float | None
    score: float | None
    priority: str | None
    source: str | None


class ValidationScores(Out):
    score: float | None
    evidenceCount: float | None


class Idea(Out):
    id: UUID
    ideaServiceId: str
    title: str
    summary: str | None
    status: Literal["captured", "new", "under_review", "planned", "in_progress", "shipped",
                    "rejected", "archived", "duplicate", "deleted"]
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
    rice: RiceScores
    validation: ValidationScores
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
    productId: UUID | None
    actionable: bool
    createdAt: datetime
    roadmapStageId: UUID | None


class IdeaTag(Out):
    id: UUID
    name: str
    color: str | None


class ExternalWorkItem(Out):
    system: str
    issueId: str
    issueUrl: str | None
    status: str | None


class IdeaDetail(Idea):
    tags: list[IdeaTag]
    externalWorkItem: ExternalWorkItem | None
    sourceUserId: str | None
    sourceUserName: str | None
    rawInput: str | None


class Decision(Out):
    id: UUID
    eventType: str
    closureCategory: str | None
    reason: str | None
    confidenceScore: float | None
    previousStatus: str | None
    newStatus: str | None
    actorEmail: str | None
    actorName: str | None
    source: str
    relatedIdeaId: str | None
    externalIssueId: str | None
    externalIssueUrl: str | None
    metadata: dict[str, Any] | None
    createdAt: datetime


class Signal(Out):
    id: UUID
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


class Evidence(Out):
    id: UUID
    type: Literal["document", "screenshot", "external_issue", "link", "quote"]
    title: str | None
    url: str | None
    content: str | None
    createdAt: datetime


class Participant(Out):
    id: UUID
    name: str
    email: str | None
    role: Literal["owner", "approver", "reviewer"]
    decision: Literal["approved", "rejected", "pending"]
    decidedAt: datetime | None


class Meeting(Out):
    id: UUID
    title: str
    meetingDate: datetime
    participants: list[str]
    excerpt: str | None
    relation: Literal["mentioned", "extracted"]
    transcriptUrl: str | None


class SupportTicket(Out):
    id: UUID
    platform: str
    externalId: str
    subject: str | None
    status: str | None
    priority: str | None
    customerName: str | None
    customerEmail: str | None
    url: str | None
    createdAt: datetime


class VoteResult(Out):
    ideaId: UUID
    voter: str
    value: int
    voteCount: int


class VoteItem(Out):
    voter: str
    value: int
    createdAt: datetime


class VoteBreakdown(Out):
    voteCount: int
    upvotes: int
    downvotes: int
    publicVoteCount: int
    requestCount: int
    votes: list[VoteItem]


class IdeaDeleted(Out):
    id: UUID
    deleted: bool


class BatchCreateResult(Out):
    created: int
    ideas: list[Idea]


class BatchStatusItem(Out):
    id: UUID
    previousStatus: str
    status: str


class BatchStatusResult(Out):
    updated: int
    ideas: list[BatchStatusItem]


class RoadmapAssignment(Out):
    ideaId: UUID
    roadmapStageId: UUID | None


class RoadmapStage(Out):
    id: UUID
    name: str
    slug: str
    color: str | None
    position: int
    isDefault: bool
    ideaCount: int
    createdAt: datetime


class WorkspaceInfo(Out):
    id: UUID
    name: str
    shortCode: str | None
    plan: str
    ideasTotal: int
    ideasThisMonth: int
    activeIdeas: int
    defaultDestination: str | None
    inboxMode: str | None
    publicSubmissionEnabled: bool
    slug: str | None


class Tag(Out):
    id: UUID
    name: str
    color: str | None
    ideaCount: int


class Product(Out):
    id: UUID
    name: str
    parentId: UUID | None
    ideaCount: int


class Member(Out):
    id: UUID
    name: str
    email: str
    role: Literal["owner", "admin", "member", "viewer"]
    dashboardAccess: bool
    lastActiveAt: datetime | None


class AutomationIdea(Out):
    id: UUID
    title: str
    summary: str | None
    source: str
    authorName: str | None
    url: str | None
    createdAt: datetime


class AutomationCreated(Out):
    id: UUID
    title: str
    status: Literal["created"]


class AutomationSkipped(Out):
    status: Literal["skipped"]
    reason: str
    id: None
