"""Response models of the ideas service (the OpenAPI schemas; nullable fields have no default).

A field's docstring is its description in the document; a model's example is its `example(...)`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from libs.api.base import Out, example
from libs.api.enums import IdeaStatus

from . import examples as ex

__all__ = ["Out"]


class RiceScores(Out):
    """RICE prioritisation: reach x impact x confidence / effort."""

    reach: float | None
    """How many people or accounts the idea reaches in a period (0 or more)"""
    impact: float | None
    """How much it helps each of them (0 or more)"""
    confidence: float | None
    """How sure the estimate is, a fraction from 0 to 1"""
    effort: float | None
    """What it costs, e.g. in person-months (more than 0)"""
    score: float | None
    """reach x impact x confidence / effort once all four are set, else null"""
    priority: str | None
    """Label of the score: `critical` (1000 or more), `high` (100), `medium` (10), `low`"""
    source: str | None
    """How the score was set: `manual` when set through the API"""


class ValidationScores(Out):
    """How well the idea is backed by evidence."""

    score: float | None
    """Validation score from 0 to 100"""
    evidenceCount: float | None
    """How many pieces of evidence back the idea"""


class Idea(Out):
    """A product idea: the one JSON form of an idea in lists, details, exports and events."""

    model_config = example(ex.IDEA)

    id: UUID
    """The idea's id"""
    ideaServiceId: str
    """Human-readable id, `IDEA-<n>`, counting from 1 per workspace"""
    title: str
    """Short title"""
    summary: str | None
    """Longer description"""
    status: IdeaStatus
    source: str
    """Where the idea came from (free text; `api` by default)"""
    category: str | None
    """Category, e.g. `feature`, `bug`, `improvement`"""
    ideaType: str | None
    """Kind of idea, as the capturing integration classified it"""
    url: str | None
    """Link to the original item (message, ticket, page)"""
    destination: str | None
    """Issue tracker the idea was sent to"""
    destinationIssueId: str | None
    """Id of the issue created in the destination"""
    destinationIssueUrl: str | None
    """Link to the issue created in the destination"""
    voteCount: int
    """Sum of the vote values (+1 and -1)"""
    publicVoteCount: int
    """Votes from the public submission portal"""
    requestCount: int
    """Number of feature requests behind the idea"""
    signalCount: int
    """Number of signals (mentions detected on other platforms)"""
    rice: RiceScores
    """RICE inputs and score"""
    validation: ValidationScores
    """Evidence-based validation"""
    decisionReason: str | None
    """Why the last decision was taken"""
    decidedAt: datetime | None
    """When the idea was last decided (shipped, rejected, duplicate or archived)"""
    closureCategory: str | None
    """Category of the decision, e.g. `shipped`, `rejected_scope`, `duplicate`, `archived`"""
    decisionOwnerName: str | None
    """Who owns the decision"""
    decisionDeadline: datetime | None
    """When a decision is due"""
    totalCustomerARR: float | None
    """Sum of the annual recurring revenue of the linked customers"""
    lastActivityAt: datetime | None
    """Last change, vote or signal (the `updated_since` filter compares it)"""
    lastSignalAt: datetime | None
    """When the last signal was detected"""
    uniqueSourceCount: int
    """Number of distinct platforms that mentioned the idea"""
    averageSentiment: float | None
    """Mean sentiment of the signals, from -1.0 to 1.0"""
    workItemStatus: str | None
    """Status of the linked external work item"""
    shippedAt: datetime | None
    """When the idea changed to `shipped`"""
    productId: UUID | None
    """The product the idea belongs to"""
    actionable: bool
    """Whether the idea is concrete enough to act on"""
    createdAt: datetime
    """When the idea was created"""
    roadmapStageId: UUID | None
    """The roadmap stage the idea is assigned to"""
    mergedIntoId: UUID | None
    """The primary idea this one was merged into as a duplicate (`POST /ideas/{id}/merge`);
    null unless merged"""
    commentCount: int
    """Comments on the idea that are not internal (`GET /ideas/{id}/comments`); a merged
    duplicate keeps its own"""


class IdeaTag(Out):
    """A tag on an idea."""

    id: UUID
    """The tag's id"""
    name: str
    """Tag name"""
    color: str | None
    """Display colour, e.g. `#6366f1`"""


class ExternalWorkItem(Out):
    """The issue tracker item that implements the idea."""

    system: str
    """Tracker, e.g. `jira`, `linear`, `github`"""
    issueId: str
    """Issue id in the tracker"""
    issueUrl: str | None
    """Link to the issue"""
    status: str | None
    """Issue status in the tracker"""


class IdeaDetail(Idea):
    """An idea with its tags, work item and original input."""

    model_config = example(ex.IDEA_DETAIL)

    tags: list[IdeaTag]
    """Tags of the idea"""
    externalWorkItem: ExternalWorkItem | None
    """Linked issue tracker item"""
    sourceUserId: str | None
    """Id of the author on the source platform"""
    sourceUserName: str | None
    """Name of the author on the source platform"""
    rawInput: str | None
    """The original message the idea was captured from"""


class Decision(Out):
    """An event in an idea's decision history (status changes, closures, snoozes)."""

    model_config = example(ex.DECISION)

    id: UUID
    """The decision's id"""
    eventType: str
    """Kind of event, e.g. `status_changed`"""
    closureCategory: str | None
    """Category of a closing decision"""
    reason: str | None
    """Why (the PATCH's `decisionReason`)"""
    confidenceScore: float | None
    """Confidence in the decision, when an assistant proposed it"""
    previousStatus: str | None
    """Status before the change"""
    newStatus: str | None
    """Status after the change"""
    actorEmail: str | None
    """E-mail of who decided"""
    actorName: str | None
    """Who decided (for API changes, the key's name)"""
    source: str
    """Where the decision was made, `api` for API calls"""
    relatedIdeaId: str | None
    """The other idea of a merge"""
    externalIssueId: str | None
    """Issue tracker item the decision refers to"""
    externalIssueUrl: str | None
    """Link to that item"""
    metadata: dict[str, Any] | None
    """Further details, as JSON"""
    createdAt: datetime
    """When the decision was recorded"""


class Signal(Out):
    """A mention of the idea detected on another platform."""

    model_config = example(ex.SIGNAL)

    id: UUID
    """The signal's id"""
    platform: str
    """Where it was detected, e.g. `slack`, `zendesk`"""
    userId: str | None
    """Id of the person on that platform"""
    userName: str | None
    """Name of the person"""
    userEmail: str | None
    """E-mail of the person"""
    content: str | None
    """What was said"""
    similarity: float
    """Cosine similarity of the mention to the idea, 0 to 1"""
    sentiment: str | None
    """`positive`, `neutral` or `negative`"""
    sentimentScore: float | None
    """Sentiment from -1.0 to 1.0"""
    autoLinkedCustomerId: str | None
    """Customer recognised from the person, if any"""
    detectedAt: datetime
    """When the mention happened"""
    createdAt: datetime
    """When it was recorded"""


class CommentAuthor(Out):
    """Who wrote a comment: the end user it was written for (`userId`), else the API key that
    posted it."""

    type: Literal["user", "key"]
    """`user` for a comment written with a `userId`, else `key`"""
    id: UUID
    """The user's id, or the API key's id"""
    name: str | None
    """The user's name (null when the user has none, and in the `comment.deleted` events
    of the user's erasure), or the key's name"""


class Comment(Out):
    """A comment on an idea: a reply names its parent (replies go one level deep); an
    `internal` one is a note for the team."""

    model_config = example(ex.COMMENT)

    id: UUID
    """The comment's id"""
    ideaId: UUID
    """The idea it is on"""
    body: str
    """The text, 1 to 10,000 characters"""
    internal: bool
    """An internal note for the team (not counted in the idea's `commentCount`)"""
    parentId: UUID | None
    """The comment this one replies to; null for a top-level comment. It stays when that
    comment is deleted"""
    author: CommentAuthor
    """Who wrote it"""
    createdAt: datetime
    """When it was written"""
    updatedAt: datetime | None
    """When its body was last changed; null until then"""


class Evidence(Out):
    """A piece of evidence behind an idea."""

    model_config = example(
        {
            "id": "9d8e7f60-5a4b-4c3d-2e1f-0a9b8c7d6e5f",
            "type": "quote",
            "title": "Night shift feedback",
            "url": None,
            "content": "We dim our screens all night; a dark theme would help a lot.",
            "createdAt": "2025-03-05T14:00:00.000000Z",
        }
    )

    id: UUID
    """The evidence's id"""
    type: Literal["document", "screenshot", "external_issue", "link", "quote"]
    """Kind of evidence"""
    title: str | None
    """Title"""
    url: str | None
    """Where it lives"""
    content: str | None
    """Text of the evidence"""
    createdAt: datetime
    """When it was added"""


class Participant(Out):
    """Someone taking part in the decision on an idea."""

    model_config = example(
        {
            "id": "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
            "name": "Dana Lee",
            "email": "dana@acme.example",
            "role": "owner",
            "decision": "approved",
            "decidedAt": "2025-03-10T08:00:00.000000Z",
        }
    )

    id: UUID
    """The participant's id"""
    name: str
    """Name"""
    email: str | None
    """E-mail"""
    role: Literal["owner", "approver", "reviewer"]
    """Part in the decision"""
    decision: Literal["approved", "rejected", "pending"]
    """Their verdict"""
    decidedAt: datetime | None
    """When they gave it"""


class Meeting(Out):
    """A meeting transcript that mentions the idea."""

    model_config = example(
        {
            "id": "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e",
            "title": "Globex quarterly review",
            "meetingDate": "2025-02-20T15:00:00.000000Z",
            "participants": ["Dana Lee", "Priya Shah"],
            "excerpt": "Priya asked again about a dark theme for the night shift.",
            "relation": "mentioned",
            "transcriptUrl": None,
        }
    )

    id: UUID
    """The meeting's id"""
    title: str
    """Meeting title"""
    meetingDate: datetime
    """When it took place"""
    participants: list[str]
    """Who attended"""
    excerpt: str | None
    """The passage about the idea"""
    relation: Literal["mentioned", "extracted"]
    """Whether the idea was mentioned in it or extracted from it"""
    transcriptUrl: str | None
    """Link to the transcript"""


class SupportTicket(Out):
    """A help desk ticket linked to the idea."""

    model_config = example(
        {
            "id": "3c4d5e6f-7a8b-4c9d-0e1f-2a3b4c5d6e7f",
            "platform": "zendesk",
            "externalId": "48213",
            "subject": "Dark theme?",
            "status": "open",
            "priority": "normal",
            "customerName": "Priya Shah",
            "customerEmail": "priya@globex.example",
            "url": None,
            "createdAt": "2025-03-12T16:02:11.104200Z",
        }
    )

    id: UUID
    """The ticket's id"""
    platform: str
    """Help desk, e.g. `zendesk`, `intercom`"""
    externalId: str
    """Ticket id in the help desk"""
    subject: str | None
    """Subject line"""
    status: str | None
    """Ticket status in the help desk"""
    priority: str | None
    """Ticket priority"""
    customerName: str | None
    """Who opened it"""
    customerEmail: str | None
    """Their e-mail"""
    url: str | None
    """Link to the ticket"""
    createdAt: datetime
    """When it was opened"""


class VoteResult(Out):
    """The vote as recorded, and the idea's new total."""

    model_config = example({"ideaId": ex.IDEA_ID, "voter": "user:42", "value": 1, "voteCount": 13})

    ideaId: UUID
    """The idea voted on"""
    voter: str
    """Who voted (`key:<keyId>` unless the request named a voter)"""
    value: Literal[-1, 0, 1]
    """+1 or -1; 0 when the vote was removed"""
    voteCount: int
    """The idea's sum of vote values after this vote"""


class VoteItem(Out):
    """One voter's vote."""

    voter: str
    """Who voted"""
    value: int
    """+1 or -1"""
    createdAt: datetime
    """When (a replaced vote keeps the time of the replacement)"""
    userId: UUID | None
    """The end user who votes (voter `user:<userId>`); null for other voters"""


class VoteBreakdown(Out):
    """The idea's votes and the counts behind them."""

    model_config = example(
        {
            "voteCount": 12,
            "upvotes": 14,
            "downvotes": 2,
            "publicVoteCount": 3,
            "requestCount": 5,
            "votes": [
                {
                    "voter": "user:5b0e7c1a-3f2d-4c8e-9a61-2d4f8b7e9c03",
                    "value": 1,
                    "createdAt": "2025-03-14T09:26:53.589793Z",
                    "userId": "5b0e7c1a-3f2d-4c8e-9a61-2d4f8b7e9c03",
                }
            ],
        }
    )

    voteCount: int
    """Sum of the vote values"""
    upvotes: int
    """Votes of +1"""
    downvotes: int
    """Votes of -1"""
    publicVoteCount: int
    """Votes from the public submission portal"""
    requestCount: int
    """Number of feature requests behind the idea"""
    votes: list[VoteItem]
    """The 1,000 most recent votes, newest first"""


class IdeaDeleted(Out):
    """A deleted idea: its record stays, with status `deleted`."""

    model_config = example({"id": ex.IDEA_ID, "deleted": True})

    id: UUID
    """The idea's id"""
    deleted: bool
    """Always true"""


class BatchCreateResult(Out):
    """The ideas created, in request order."""

    model_config = example({"created": 1, "ideas": [ex.IDEA]})

    created: int
    """How many ideas were created"""
    ideas: list[Idea]
    """The new ideas, in request order"""


class BatchStatusItem(Out):
    """One idea's status change."""

    id: UUID
    """The idea's id"""
    previousStatus: IdeaStatus
    status: IdeaStatus


class BatchStatusResult(Out):
    """The ideas changed, in request order."""

    model_config = example(
        {
            "updated": 1,
            "ideas": [{"id": ex.IDEA_ID, "previousStatus": "under_review", "status": "planned"}],
        }
    )

    updated: int
    """How many ideas were changed"""
    ideas: list[BatchStatusItem]
    """Each idea with its status before and after"""


class MergeResult(Out):
    """Both ideas of a merge or an unmerge, as they are after it."""

    model_config = example(
        {
            "primary": ex.IDEA_DETAIL,
            "duplicate": {
                **ex.IDEA_DETAIL,
                "id": ex.DUPLICATE_ID,
                "ideaServiceId": "IDEA-43",
                "status": "duplicate",
                "closureCategory": "duplicate",
                "voteCount": 0,
                "mergedIntoId": ex.IDEA_ID,
            },
        }
    )

    primary: IdeaDetail
    """The primary idea"""
    duplicate: IdeaDetail
    """The duplicate"""


class SimilarIdea(Out):
    """An idea and how close in meaning it is to the text asked about."""

    model_config = example({"similarity": 0.83, "idea": ex.IDEA})

    similarity: float
    """Cosine similarity of the meanings, from 0 (unrelated) to 1 (the same)"""
    idea: Idea
    """The similar idea"""


class RoadmapAssignment(Out):
    """An idea's roadmap stage after the assignment."""

    model_config = example({"ideaId": ex.IDEA_ID, "roadmapStageId": ex.STAGE_ID})

    ideaId: UUID
    """The idea's id"""
    roadmapStageId: UUID | None
    """The stage it is on now; null when unassigned"""


class RoadmapStage(Out):
    """A column of the roadmap."""

    model_config = example(
        {
            "id": ex.STAGE_ID,
            "name": "Now",
            "slug": "now",
            "color": "#22c55e",
            "position": 0,
            "isDefault": True,
            "ideaCount": 8,
            "createdAt": "2025-01-06T09:00:00.000000Z",
        }
    )

    id: UUID
    """The stage's id"""
    name: str
    """Stage name"""
    slug: str
    """URL-safe name"""
    color: str | None
    """Display colour"""
    position: int
    """Order on the roadmap, from 0"""
    isDefault: bool
    """Whether new assignments go here by default"""
    ideaCount: int
    """Ideas on this stage (deleted ones left out)"""
    createdAt: datetime
    """When the stage was created"""


class WorkspaceInfo(Out):
    """The key's workspace and its idea counts."""

    model_config = example(
        {
            "id": "7e8f9a0b-1c2d-4e3f-8a5b-6c7d8e9f0a1b",
            "name": "Acme",
            "shortCode": "ACME",
            "plan": "pro",
            "ideasTotal": 1234,
            "ideasThisMonth": 87,
            "activeIdeas": 1011,
            "defaultDestination": None,
            "inboxMode": "direct",
            "publicSubmissionEnabled": False,
            "slug": "acme",
        }
    )

    id: UUID
    """The workspace's id"""
    name: str
    """Workspace name"""
    shortCode: str | None
    """Short code"""
    plan: str
    """Plan: `starter`, `pro`, `growth`, `scale` or `enterprise`"""
    ideasTotal: int
    """Ideas not deleted"""
    ideasThisMonth: int
    """Ideas created in the current UTC month"""
    activeIdeas: int
    """Ideas not shipped, rejected, archived, duplicate or deleted"""
    defaultDestination: str | None
    """Issue tracker ideas are sent to by default"""
    inboxMode: str | None
    """`direct` (new ideas start `new`) or `review` (they start `captured`)"""
    publicSubmissionEnabled: bool
    """Whether the public submission portal is on"""
    slug: str | None
    """URL-safe name"""


class Tag(Out):
    """A tag of the workspace."""

    model_config = example({"id": ex.TAG_ID, "name": "ui", "color": "#6366f1", "ideaCount": 17})

    id: UUID
    """The tag's id"""
    name: str
    """Tag name"""
    color: str | None
    """Display colour"""
    ideaCount: int
    """Ideas with this tag (deleted ones left out)"""


class TagDeleted(Out):
    """A deleted tag: gone from the workspace and from every idea that carried it."""

    model_config = example({"id": ex.TAG_ID, "deleted": True})

    id: UUID
    """The tag's id"""
    deleted: bool
    """Always true"""


class Product(Out):
    """A product of the workspace; products nest."""

    model_config = example(
        {"id": ex.PRODUCT_ID, "name": "Dashboard", "parentId": None, "ideaCount": 240}
    )

    id: UUID
    """The product's id"""
    name: str
    """Product name"""
    parentId: UUID | None
    """The product it belongs to, if any"""
    ideaCount: int
    """Ideas of this product (deleted ones left out)"""


class Member(Out):
    """A member of the workspace's team."""

    model_config = example(
        {
            "id": ex.MEMBER_ID,
            "name": "Dana Lee",
            "email": "dana@acme.example",
            "role": "admin",
            "dashboardAccess": True,
            "lastActiveAt": "2025-03-14T08:00:00.000000Z",
        }
    )

    id: UUID
    """The member's id"""
    name: str
    """Name"""
    email: str
    """E-mail"""
    role: Literal["owner", "admin", "member", "viewer"]
    """Role in the workspace"""
    dashboardAccess: bool
    """Whether they can sign in to the dashboard"""
    lastActiveAt: datetime | None
    """When they were last active; null until the member acts"""


class RecordDeleted(Out):
    """A deleted record of the workspace."""

    model_config = example({"id": ex.PRODUCT_ID, "deleted": True})

    id: UUID
    """The record's id"""
    deleted: bool
    """Always true"""


class AutomationIdea(Out):
    """An idea as the automation API lists it."""

    model_config = example(
        {
            "id": ex.IDEA_ID,
            "title": ex.IDEA["title"],
            "summary": ex.IDEA["summary"],
            "source": "zapier",
            "authorName": "Sam Ortiz",
            "url": None,
            "createdAt": ex.IDEA["createdAt"],
        }
    )

    id: UUID
    """The idea's id"""
    title: str
    """Title"""
    summary: str | None
    """Summary"""
    source: str
    """Where it came from"""
    authorName: str | None
    """Who wrote it"""
    url: str | None
    """Link to the original item"""
    createdAt: datetime
    """When it was created"""


class AutomationCreated(Out):
    """A new idea was created."""

    model_config = example({"id": ex.IDEA_ID, "title": ex.IDEA["title"], "status": "created"})

    id: UUID
    """The new idea's id"""
    title: str
    """Its title"""
    status: Literal["created"]
    """Always `created`"""


class AutomationSkipped(Out):
    """The idea duplicates an existing one: a signal was recorded on that one instead."""

    model_config = example({"status": "skipped", "reason": "Duplicate idea", "id": None})

    status: Literal["skipped"]
    """Always `skipped`"""
    reason: str
    """Why, e.g. `Duplicate idea`"""
    id: None
    """Always null"""
