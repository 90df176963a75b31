"""Request bodies and query parameters of the ideas service (validated, and the OpenAPI schemas)."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import Field, field_validator, model_validator

from libs.common.errors import ValidationFailed
from libs.common.pagination import CursorParam
from libs.common.validation import Body, Query, UtcDateTime

IdeaStatus = Literal["captured", "new", "under_review", "planned", "in_progress", "shipped",
                     "rejected", "archived", "duplicate", "deleted"]
IdeaSource = Literal["discord", "slack", "teams", "sentry", "zapier", "chrome", "vscode",
                     "outlook", "zendesk", "intercom", "freshdesk", "helpscout", "extension",
                     "api", "email"]
SortKey = Literal["createdAt", "voteCount", "riceScore", "validationScore", "signalCount",
                  "lastActivityAt", "totalCustomerARR", "shippedAt", "decidedAt"]
Number = float


class CreateIdeaRequest(Body):
    title: str = Field(min_length=1, max_length=500)
    summary: str | None = Field(default=None, max_length=5000)
    source: str = Field(default="api", min_length=1, max_length=100)
    category: str | None = Field(default=None, max_length=100)
    url: str | None = Field(default=None, max_length=2000)


class UpdateIdeaRequest(Body):
    """At least one property. RICE: reach, impact >= 0; confidence 0..1; effort > 0."""

    title: str = Field(default=None, min_length=1, max_length=500)  # type: ignore[assignment]
    summary: str | None = Field(default=None, max_length=5000)
    status: IdeaStatus = None  # type: ignore[assignment]
    category: str | None = Field(default=None, max_length=100)
    decisionReason: str | None = Field(default=None, max_length=5000)
    riceReach: Number | None = Field(default=None, ge=0, allow_inf_nan=False)
    riceImpact: Number | None = Field(default=None, ge=0, allow_inf_nan=False)
    riceConfidence: Number | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    riceEffort: Number | None = Field(default=None, gt=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateIdeaRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        for name in ("title", "status"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValidationFailed(f"{name} must not be null", field=name)
        return self


class VoteRequest(Body):
    voter: str | None = Field(default=None, min_length=1, max_length=255)
    value: Literal[-1, 1] = 1

    @field_validator("value", mode="before")
    @classmethod
    def _integer(cls, value: object) -> object:
        # The literal check alone would take `true` and `1.0` for 1.
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("Input should be -1 or 1")
        return value


class RoadmapAssignRequest(Body):
    stageId: UUID | None

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
    ideas: list[CreateIdeaRequest] = Field(min_length=1, max_length=100)


class BatchStatusRequest(Body):
    ids: list[UUID] = Field(min_length=1, max_length=100)
    status: IdeaStatus
    reason: str | None = Field(default=None, max_length=5000)

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
    cursor: CursorParam = None


class ListIdeasQuery(PageQuery):
    sort: SortKey = "createdAt"
    order: Literal["asc", "desc"] = "desc"
    status: IdeaStatus | None = None
    source: IdeaSource | None = None
    category: str | None = Field(default=None, max_length=100)
    destination: str | None = Field(default=None, max_length=200)
    roadmapStageId: UUID | None = None
    since: UtcDateTime | None = None
    search: str | None = Field(default=None, max_length=200)
    updated_since: UtcDateTime | None = None
    decided_since: UtcDateTime | None = None
    shipped_since: UtcDateTime | None = None
    product_id: UUID | None = None
    tag_id: UUID | None = None
    decision_owner: str | None = Field(default=None, max_length=255)
    has_customers: bool | None = None
    min_arr: float | None = Field(default=None, allow_inf_nan=False)


class AutomationListQuery(Query):
    limit: int = Field(default=10, ge=1, le=100)


class AutomationCreateIdea(Body):
    title: str = Field(min_length=1, max_length=255)
    summary: str | None = Field(default=None, max_length=5000)
    url: str | None = Field(default=None, max_length=2000)
    source: str | None = Field(default=None, max_length=100)
    authorName: str | None = Field(default=None, max_length=255)
    authorId: str | None = Field(default=None, max_length=255)
