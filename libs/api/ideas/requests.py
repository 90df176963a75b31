"""Request bodies and query parameters of the ideas service (validated, and the OpenAPI schemas)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from libs.api.base import example
from libs.api.enums import IdeaSource, IdeaStatus
from libs.common.errors import ValidationFailed
from libs.common.pagination import CursorParam
from libs.common.validation import Body, JsonInt, Query, UtcDateTime, _rfc3339, _utc

from . import examples as ex

__all__ = ["IdeaSource", "IdeaStatus"]
SortKey = Literal[
    "createdAt",
    "voteCount",
    "riceScore",
    "validationScore",
    "signalCount",
    "lastActivityAt",
    "totalCustomerARR",
    "shippedAt",
    "decidedAt",
]
Number = float
# An idea's tags as a request names them: the tags' ids, each once (docs/ideas.md).
TagIds = Annotated[
    list[UUID],
    Field(max_length=50, json_schema_extra={"uniqueItems": True}),
    AfterValidator(lambda ids: _unique(ids, "tagIds")),
]
HEX_COLOR = r"^#[0-9a-fA-F]{6}$"


def _body_datetime(value: Any) -> Any:
    """A JSON body's date-time: the RFC 3339 form only, parsed here (strict bodies take no
    string for a datetime); fractions past microseconds are cut."""
    if isinstance(value, datetime):
        return value
    text = _rfc3339(value).upper()
    text = re.sub(r"(\.\d{6})\d+", r"\1", text)
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("must be an RFC 3339 date-time such as 2024-01-31T12:00:00Z") from None


# A date-time in a request body (RFC 3339 with an offset; stored in UTC).
BodyDateTime = Annotated[
    datetime,
    BeforeValidator(_body_datetime),
    AfterValidator(_utc),
    Field(description="An RFC 3339 date-time with an offset, e.g. 2024-01-31T12:00:00Z"),
]


def _unique(ids: list[UUID], name: str) -> list[UUID]:
    if len(set(ids)) != len(ids):
        raise ValueError(f"{name} must not repeat an id")
    return ids


class CreateIdeaRequest(Body):
    """A new idea; only `title` is required."""

    model_config = example(ex.CREATE_IDEA)

    title: str = Field(min_length=1, max_length=500)
    """Short title"""
    summary: str | None = Field(default=None, max_length=5000)
    """Longer description"""
    source: str = Field(default="api", min_length=1, max_length=100)
    """Where the idea came from (free text)"""
    category: str | None = Field(default=None, max_length=100)
    """Category, e.g. `feature`, `bug`, `improvement`"""
    url: str | None = Field(default=None, max_length=2000)
    """Link to the original item"""
    tagIds: TagIds = Field(default_factory=list)
    """Tags of the workspace to put on the idea (0 to 50, each once)"""
    ideaType: str | None = Field(default=None, min_length=1, max_length=50)
    """Kind of idea, 1 to 50 characters"""
    productId: UUID | None = None
    """A product of the workspace"""
    decisionOwnerId: UUID | None = None
    """A member of the workspace who owns the decision: sets `decisionOwnerName`"""
    decisionDeadline: BodyDateTime | None = None
    """When a decision is due"""
    actionable: bool = True
    """Whether the idea is concrete enough to act on"""
    validationScore: Number | None = Field(default=None, ge=0, le=100, allow_inf_nan=False)
    """Validation score, 0 to 100"""
    userId: UUID | None = None
    """The end user who asks for the idea: its `sourceUserId` and `sourceUserName`, and the
    user votes +1 on it"""


class UpdateIdeaRequest(Body):
    """At least one property; omitted ones stay unchanged, `null` clears a nullable one."""

    model_config = example(ex.UPDATE_IDEA)

    title: str = Field(default=None, min_length=1, max_length=500)  # type: ignore[assignment]
    """Short title (not null)"""
    summary: str | None = Field(default=None, max_length=5000)
    """Longer description"""
    status: IdeaStatus = None  # type: ignore[assignment]
    category: str | None = Field(default=None, max_length=100)
    """Category"""
    decisionReason: str | None = Field(default=None, max_length=5000)
    """Why: recorded as the reason of the Decision a status change appends"""
    riceReach: Number | None = Field(default=None, ge=0, allow_inf_nan=False)
    """RICE reach (0 or more)"""
    riceImpact: Number | None = Field(default=None, ge=0, allow_inf_nan=False)
    """RICE impact (0 or more)"""
    riceConfidence: Number | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    """RICE confidence, a fraction from 0 to 1"""
    riceEffort: Number | None = Field(default=None, gt=0, allow_inf_nan=False)
    """RICE effort (more than 0)"""
    tagIds: TagIds = None  # type: ignore[assignment]
    """The idea's tags: replaces its set (0 to 50 tags of the workspace, each once; not null)"""
    ideaType: str | None = Field(default=None, min_length=1, max_length=50)
    """Kind of idea, 1 to 50 characters"""
    productId: UUID | None = None
    """A product of the workspace, or null"""
    decisionOwnerId: UUID | None = None
    """A member of the workspace who owns the decision (sets `decisionOwnerName` and the
    e-mail the `decision_owner` filter compares), or null to clear both"""
    decisionDeadline: BodyDateTime | None = None
    """When a decision is due, or null"""
    actionable: bool = None  # type: ignore[assignment]
    """Whether the idea is concrete enough to act on (not null)"""
    validationScore: Number | None = Field(default=None, ge=0, le=100, allow_inf_nan=False)
    """Validation score, 0 to 100, or null"""
    url: str | None = Field(default=None, max_length=2000)
    """Link to the original item, or null"""
    closureCategory: str = Field(default=None, min_length=1, max_length=50)  # type: ignore[assignment]
    """Category of the decision, 1 to 50 characters: only with a change of `status` to
    `shipped`, `rejected`, `duplicate` or `archived`, in place of the derived one (not null)"""

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateIdeaRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        for name in ("title", "status", "tagIds", "actionable", "closureCategory"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValidationFailed(f"{name} must not be null", field=name)
        return self


# The voter of a vote on an end user's behalf: only `userId` makes one (docs/ideas.md, End
# users), so a `voter` of that form is refused.
USER_VOTER = re.compile(
    r"user:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def _not_a_user_voter(value: str | None) -> str | None:
    if value is not None and USER_VOTER.fullmatch(value):
        raise ValueError("`user:<userId>` votes on a user's behalf: send userId instead")
    return value


def _voter_or_user(voter: str | None, user_id: UUID | None) -> None:
    if voter is not None and user_id is not None:
        raise ValidationFailed("userId: give either voter or userId, not both", field="userId")


Voter = Annotated[
    str | None,
    Field(default=None, min_length=1, max_length=255),
    AfterValidator(_not_a_user_voter),
]


class VoteRequest(Body):
    """Optional: an empty body is an upvote by the key."""

    model_config = example({"voter": "user:42", "value": 1})

    voter: Voter = None
    """Who votes; `key:<keyId>` when absent. A voter's second vote replaces the first"""
    value: Literal[-1, 1] = 1
    """+1 or -1"""
    userId: UUID | None = None
    """An end user of the workspace who votes (instead of `voter`): the vote's voter is
    `user:<userId>`, and the user's customer is linked to the idea while the user votes +1"""

    @model_validator(mode="after")
    def _one_voter(self) -> VoteRequest:
        _voter_or_user(self.voter, self.userId)
        return self

    @field_validator("value", mode="before")
    @classmethod
    def _integer(cls, value: object) -> object:
        # The literal check alone would take `true` and `1.0` for 1.
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("Input should be -1 or 1")
        return value


class UnvoteQuery(Query):
    voter: Voter = None
    """Whose vote to remove; `key:<keyId>` when absent, as for a vote"""
    userId: UUID | None = None
    """The end user whose vote to remove (instead of `voter`)"""

    @model_validator(mode="after")
    def _one_voter(self) -> UnvoteQuery:
        _voter_or_user(self.voter, self.userId)
        return self


Sentiment = Literal["positive", "neutral", "negative"]


class CreateSignalRequest(Body):
    """A mention of the idea detected on another platform."""

    model_config = example(
        {
            "platform": "zendesk",
            "content": "Any plans for a dark theme? Our support team works night shifts.",
            "userId": "48213",
            "userName": "Priya Shah",
            "userEmail": "priya@globex.example",
            "similarity": 0.91,
            "detectedAt": "2025-03-12T16:02:11Z",
        }
    )

    platform: str = Field(min_length=1, max_length=50)
    """Where it was detected, e.g. `slack` or `zendesk` (1 to 50 characters)"""
    content: str | None = Field(default=None, max_length=10000)
    """What was said (at most 10,000 characters)"""
    userId: str | None = Field(default=None, max_length=255)
    """Id of the person on that platform"""
    userName: str | None = Field(default=None, max_length=255)
    """Name of the person"""
    userEmail: str | None = Field(default=None, max_length=255)
    """E-mail of the person; a customer's e-mail or company domain links that customer"""
    sentiment: Sentiment | None = None
    """`positive`, `neutral` or `negative`; computed from `content` with `sentimentScore` when
    both are absent"""
    sentimentScore: Number | None = Field(default=None, ge=-1, le=1, allow_inf_nan=False)
    """Sentiment from -1.0 to 1.0"""
    similarity: Number = Field(default=1.0, ge=0, le=1, allow_inf_nan=False)
    """Similarity of the mention to the idea, 0 to 1 (default 1.0)"""
    detectedAt: BodyDateTime | None = None
    """When the mention happened (not in the future); now when absent"""

    @field_validator("detectedAt")
    @classmethod
    def _not_future(cls, value: datetime | None) -> datetime | None:
        if value is not None and value > datetime.now(UTC) + timedelta(seconds=1):
            raise ValueError("must not be in the future")
        return value


class CreateTagRequest(Body):
    """A new tag of the workspace."""

    model_config = example({"name": "ui", "color": "#6366f1"})

    name: str = Field(min_length=1, max_length=50)
    """Tag name, 1 to 50 characters; unique in the workspace, ignoring case"""
    color: str | None = Field(default=None, pattern=HEX_COLOR)
    """Display colour as `#rrggbb`, or null"""


class UpdateTagRequest(Body):
    """At least one property; omitted ones stay unchanged."""

    model_config = example({"name": "user interface", "color": None})

    name: str = Field(default=None, min_length=1, max_length=50)  # type: ignore[assignment]
    """Tag name, 1 to 50 characters; unique in the workspace, ignoring case (not null)"""
    color: str | None = Field(default=None, pattern=HEX_COLOR)
    """Display colour as `#rrggbb`, or null to clear it"""

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateTagRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        if "name" in self.model_fields_set and self.name is None:
            raise ValidationFailed("name must not be null", field="name")
        return self


class CreateProductRequest(Body):
    """A new product of the workspace."""

    model_config = example({"name": "Dashboard", "parentId": None})

    name: str = Field(min_length=1, max_length=100)
    """Product name, 1 to 100 characters"""
    parentId: UUID | None = None
    """The product it belongs to (a product of the workspace), or null"""


class UpdateProductRequest(Body):
    """At least one property; omitted ones stay unchanged."""

    model_config = example({"parentId": ex.PRODUCT_ID})

    name: str = Field(default=None, min_length=1, max_length=100)  # type: ignore[assignment]
    """Product name, 1 to 100 characters (not null)"""
    parentId: UUID | None = None
    """The product it belongs to, or null for a top-level product; never itself or one of
    its own descendants"""

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateProductRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        if "name" in self.model_fields_set and self.name is None:
            raise ValidationFailed("name must not be null", field="name")
        return self


MemberRole = Literal["owner", "admin", "member", "viewer"]
# local@domain.tld without spaces or control characters (the same in every regex dialect:
# Python's, Rust's and ECMA-262's `\s` differ, explicit ranges do not).
EMAIL_CHAR = r"[^@\x00-\x20\x7f-\x9f]"
EMAIL = rf"^{EMAIL_CHAR}+@{EMAIL_CHAR}+\.{EMAIL_CHAR}+$"


class CreateMemberRequest(Body):
    """A new member of the workspace's team."""

    model_config = example(
        {"name": "Dana Lee", "email": "dana@acme.example", "role": "admin", "dashboardAccess": True}
    )

    name: str = Field(min_length=1, max_length=100)
    """Name, 1 to 100 characters"""
    email: str = Field(min_length=3, max_length=254, pattern=EMAIL)
    """E-mail address; unique in the workspace, ignoring case"""
    role: MemberRole = "member"
    """Role in the workspace"""
    dashboardAccess: bool = True
    """Whether they can sign in to the dashboard"""


class UpdateMemberRequest(Body):
    """At least one property; omitted ones stay unchanged (none takes null)."""

    model_config = example({"role": "owner"})

    name: str = Field(default=None, min_length=1, max_length=100)  # type: ignore[assignment]
    """Name, 1 to 100 characters"""
    email: str = Field(default=None, min_length=3, max_length=254, pattern=EMAIL)  # type: ignore[assignment]
    """E-mail address; unique in the workspace, ignoring case"""
    role: MemberRole = None  # type: ignore[assignment]
    """Role in the workspace; the last `owner` cannot be demoted"""
    dashboardAccess: bool = None  # type: ignore[assignment]
    """Whether they can sign in to the dashboard"""

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateMemberRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        for name in ("name", "email", "role", "dashboardAccess"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValidationFailed(f"{name} must not be null", field=name)
        return self


class MergeRequest(Body):
    """The primary idea the path's idea (the duplicate) merges into."""

    model_config = example({"intoId": ex.PRIMARY_ID})

    intoId: UUID
    """The primary: an idea of the workspace other than the duplicate"""


class SimilarQuery(Query):
    limit: int = Field(default=10, ge=1, le=50)
    """How many ideas, 1 to 50"""
    min_similarity: float = Field(default=0, ge=0, le=1, allow_inf_nan=False)
    """Leave out ideas less similar than this (0 to 1)"""


class SimilarRequest(Body):
    """A text that is not an idea yet: its title and, optionally, its summary."""

    model_config = example(
        {
            "title": "Dark theme for the dashboard",
            "summary": "The white screens hurt at night",
            "limit": 5,
        }
    )

    title: str = Field(min_length=1, max_length=500)
    """The title to compare"""
    summary: str | None = Field(default=None, max_length=5000)
    """A longer description to compare with it"""
    limit: JsonInt = Field(default=10, ge=1, le=50)
    """How many ideas, 1 to 50"""
    minSimilarity: float = Field(default=0, ge=0, le=1, allow_inf_nan=False)
    """Leave out ideas less similar than this (0 to 1)"""

    @field_validator("minSimilarity", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        # JSON has one number type: 1 is as good a similarity as 1.0 (but not `true`).
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


class RoadmapAssignRequest(Body):
    """The stage to put the idea on, or null to take it off the roadmap."""

    model_config = example({"stageId": ex.STAGE_ID})

    stageId: UUID | None
    """A roadmap stage of the workspace, or null"""

    @model_validator(mode="before")
    @classmethod
    def _uuid_text(cls, data: object) -> object:
        # Strict mode takes no UUID from JSON text; accept the canonical string form.
        if isinstance(data, dict) and isinstance(data.get("stageId"), str):
            try:
                data = {**data, "stageId": UUID(data["stageId"])}
            except ValueError:
                raise ValidationFailed("stageId must be a UUID", field="stageId") from None
        return data


class BatchCreateRequest(Body):
    """Up to 100 new ideas, created together or not at all."""

    model_config = example({"ideas": [ex.CREATE_IDEA, {"title": "Export to PDF"}]})

    ideas: list[CreateIdeaRequest] = Field(min_length=1, max_length=100)
    """The ideas, 1 to 100"""


class BatchStatusRequest(Body):
    """One status for up to 100 ideas, changed together or not at all."""

    model_config = example(
        {"ids": [ex.IDEA_ID], "status": "planned", "reason": "Planned for the next quarter"}
    )

    ids: list[UUID] = Field(min_length=1, max_length=100)
    """The ideas' ids, 1 to 100"""
    status: IdeaStatus
    reason: str | None = Field(default=None, max_length=5000)
    """Why: recorded as the reason of each Decision"""

    @model_validator(mode="before")
    @classmethod
    def _uuid_texts(cls, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("ids"), list):
            ids = []
            for n, value in enumerate(data["ids"]):
                try:
                    ids.append(UUID(value) if isinstance(value, str) else value)
                except ValueError:
                    raise ValidationFailed("not a UUID", field=f"ids[{n}]") from None
            data = {**data, "ids": ids}
        return data


class PageQuery(Query):
    limit: int = Field(default=25, ge=1, le=100)
    """Page size, 1 to 100"""
    cursor: CursorParam = None
    """`pagination.nextCursor` of the previous page; valid only with the same sort, order and
    filters. Empty or absent: the first page"""


class ListIdeasQuery(PageQuery):
    sort: SortKey = "createdAt"
    """Sort key; ties are broken by `id`, nulls come last in both orders"""
    order: Literal["asc", "desc"] = "desc"
    """Sort order"""
    status: IdeaStatus | None = None
    """Only ideas with this status (deleted ideas only with `deleted`)"""
    source: IdeaSource | None = None
    """Only ideas from this source"""
    category: str | None = Field(default=None, max_length=100)
    """Only ideas of this category"""
    destination: str | None = Field(default=None, max_length=200)
    """Only ideas sent to this issue tracker"""
    roadmapStageId: UUID | None = None
    """Only ideas on this roadmap stage"""
    since: UtcDateTime | None = None
    """Only ideas created at or after this date-time (RFC 3339)"""
    search: str | None = Field(default=None, max_length=200)
    """Words that must all appear in the title or summary (case-insensitive)"""
    updated_since: UtcDateTime | None = None
    """Only ideas whose `lastActivityAt` is at or after this date-time"""
    decided_since: UtcDateTime | None = None
    """Only ideas decided at or after this date-time"""
    shipped_since: UtcDateTime | None = None
    """Only ideas shipped at or after this date-time"""
    product_id: UUID | None = None
    """Only ideas of this product"""
    tag_id: UUID | None = None
    """Only ideas with this tag"""
    decision_owner: str | None = Field(default=None, max_length=255)
    """Only ideas whose decision owner has this e-mail (any case)"""
    has_customers: bool | None = None
    """`true`: only ideas with a linked customer; `false`: only ideas with none"""
    min_arr: float | None = Field(default=None, allow_inf_nan=False)
    """Only ideas whose `totalCustomerARR` is at least this"""


class AutomationListQuery(Query):
    limit: int = Field(default=10, ge=1, le=100)
    """How many of the newest ideas, 1 to 100"""


class AutomationCreateIdea(Body):
    """A new idea from an automation platform; duplicates are recorded as signals instead."""

    model_config = example(
        {
            "title": "Dark mode for the dashboard",
            "summary": "Could we get a dark mode? The dashboard is blinding at night.",
            "url": "https://acme.slack.com/archives/C024BE91L/p1741944413000100",
            "source": "slack",
            "authorName": "Sam Ortiz",
            "authorId": "U024BE7LH",
        }
    )

    title: str = Field(min_length=1, max_length=255)
    """Short title"""
    summary: str | None = Field(default=None, max_length=5000)
    """Summary or the original message"""
    url: str | None = Field(default=None, max_length=2000)
    """Link to the original item; used to detect duplicates"""
    source: str | None = Field(default=None, max_length=100)
    """Where it came from, e.g. a platform name"""
    authorName: str | None = Field(default=None, max_length=255)
    """Who wrote it"""
    authorId: str | None = Field(default=None, max_length=255)
    """Unique id of the author on the source platform"""
