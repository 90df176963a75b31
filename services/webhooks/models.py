"""Request and response models of the webhooks service (validation and OpenAPI schemas)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from libs.common.errors import ValidationFailed
from libs.common.pagination import Pagination
from libs.common.validation import Body, Query

WebhookEventType = Literal[
    "idea.created", "idea.updated", "idea.status_changed", "idea.voted", "idea.scored",
    "idea.assigned", "idea.deleted", "idea.destination_created", "idea.signal_detected",
    "customer.created", "customer.updated",
]
DeliveryStatus = Literal["pending", "delivered", "failed"]


class CreateWebhookRequest(Body):
    name: str | None = Field(default=None, max_length=255)
    targetUrl: str = Field(min_length=1, max_length=2000,
                           description="https URL that receives the signed deliveries")
    events: list[WebhookEventType] = Field(min_length=1, max_length=11)

    @field_validator("events")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("events must not repeat")
        return value


class UpdateWebhookRequest(Body):
    """At least one property; each follows the create body's rules. `isActive: true`
    reactivates the subscription and resets `failureCount` to 0; `isActive: false` pauses it:
    its pending deliveries end `failed`, and events while it is paused are never delivered."""

    model_config = ConfigDict(json_schema_extra={
        "minProperties": 1,
        "examples": [{"events": ["idea.created", "idea.status_changed"]},
                     {"isActive": True},
                     {"name": None, "targetUrl": "https://hooks.example.com/ideas"}]})

    name: str | None = Field(default=None, max_length=255,
                             description="a label for people; null removes it")
    targetUrl: str = Field(default=None, min_length=1, max_length=2000,  # type: ignore[assignment]
                           description="https URL that receives the signed deliveries")
    events: list[WebhookEventType] = Field(default=None, min_length=1,  # type: ignore[assignment]
                                           max_length=11, description="event kinds, no repeats")
    isActive: bool = Field(default=None,  # type: ignore[assignment]
                           description="false pauses deliveries, true resumes them")

    @field_validator("events")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("events must not repeat")
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateWebhookRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        for name in ("targetUrl", "events", "isActive"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValidationFailed(f"{name} must not be null", field=name)
        return self


class RotateSecretRequest(Body):
    """Optional body. The previous secret keeps signing, after the new one, for
    `expiresInSeconds`; a rotation within that time drops the older previous secret."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"expiresInSeconds": 3600}]})

    expiresInSeconds: int = Field(default=86400, ge=0, le=604800,
                                  description="how long the previous secret still signs "
                                              "(0: not at all); default 86400 (a day)")


class DeliveryListQuery(Query):
    limit: int = Field(default=25, ge=1, le=100, description="page size, 1 to 100")
    cursor: str | None = Field(default=None, description="`nextCursor` of the previous page")
    status: DeliveryStatus | None = Field(default=None, description="only deliveries in this "
                                                                    "status")
    event_type: WebhookEventType | None = Field(default=None,
                                                description="only deliveries of this event kind")

    @field_validator("cursor")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        return value or None


class AutomationSubscribeRequest(Body):
    hookUrl: str = Field(min_length=1, max_length=2000,
                         description="https URL that receives new ideas")
    event: str = Field(default="new_idea", description="only `new_idea`")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WebhookSubscription(_Out):
    id: uuid.UUID
    name: str | None
    targetUrl: str
    events: list[WebhookEventType]
    secret: str = Field(description="full value only in the creation response, "
                                    "`whsec_****` + its last 4 characters later")
    isActive: bool
    failureCount: int
    lastDeliveredAt: datetime | None
    lastFailedAt: datetime | None
    lastError: str | None
    createdAt: datetime
    updatedAt: datetime


class WebhookDelivery(_Out):
    id: uuid.UUID
    eventId: str
    eventType: WebhookEventType
    status: DeliveryStatus
    statusCode: int | None
    attemptCount: int
    error: str | None
    durationMs: int | None
    deliveredAt: datetime | None
    createdAt: datetime


class WebhookAttempt(_Out):
    attempt: int = Field(description="counts from 1 over the delivery's life, redeliveries "
                                     "included")
    statusCode: int | None = Field(description="the receiver's status; null without an answer")
    error: str | None
    durationMs: int
    attemptedAt: datetime = Field(description="when the attempt started")


class WebhookDeliveryDetail(WebhookDelivery):
    nextAttemptAt: datetime | None = Field(description="the next scheduled attempt of a pending "
                                                       "delivery; null once delivered or failed")
    payload: dict[str, Any] = Field(description="the JSON body sent, the same on every attempt")
    attempts: list[WebhookAttempt] = Field(description="every attempt kept, oldest first")


class WebhookDeliveryPage(_Out):
    data: list[WebhookDelivery]
    pagination: Pagination


class WebhookDeliveryResult(_Out):
    data: WebhookDelivery


class WebhookDeliveryDetailResult(_Out):
    data: WebhookDeliveryDetail


class WebhookTestResult(_Out):
    success: bool = Field(description="a 2xx answer within the timeout")
    statusCode: int | None = Field(description="the receiver's status; null without an answer")
    durationMs: int = Field(description="time until the answer, or waited for one")
    error: str | None = Field(description="why it failed; null on success")


class WebhookTestResultEnvelope(_Out):
    data: WebhookTestResult


class WebhookSubscriptionDetail(WebhookSubscription):
    recentDeliveries: list[WebhookDelivery] = Field(max_length=20,
                                                    description="the 20 newest, newest first")


class WebhookSubscriptionList(_Out):
    data: list[WebhookSubscription]


class WebhookSubscriptionResult(_Out):
    data: WebhookSubscription


class WebhookSubscriptionDetailResult(_Out):
    data: WebhookSubscriptionDetail


class WebhookDeleted(_Out):
    id: uuid.UUID
    deleted: Literal[True]


class WebhookDeletedResult(_Out):
    data: WebhookDeleted


class AutomationHook(_Out):
    id: uuid.UUID
    hookUrl: str
    event: Literal["new_idea"]


class AutomationUnsubscribed(_Out):
    success: Literal[True]
