"""Request and response models of the webhooks service (validation and OpenAPI schemas)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from libs.common.validation import Body

WebhookEventType = Literal[
    "idea.created", "idea.updated", "idea.status_changed", "idea.voted", "idea.scored",
    "idea.assigned", "idea.deleted", "idea.destination_created", "idea.signal_detected",
    "customer.created", "customer.updated",
]
DeliveryStatus = Literal["pending", "delivered", "failed"]
HTTPS = {"pattern": "^https://"}  # CONTRACT 11: the document states it on targetUrl and hookUrl


class CreateWebhookRequest(Body):
    name: str | None = Field(default=None, max_length=255)
    # The pattern is the production rule; WEBHOOK_ALLOW_HTTP=1 (tests only) also lets http in.
    targetUrl: str = Field(min_length=1, max_length=2000, json_schema_extra=HTTPS,
                           description="https URL that receives the signed deliveries")
    events: list[WebhookEventType] = Field(min_length=1, max_length=11,
                                           json_schema_extra={"uniqueItems": True})

    @field_validator("events")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("events must not repeat")
        return value


class AutomationSubscribeRequest(Body):
    hookUrl: str = Field(min_length=1, max_length=2000, json_schema_extra=HTTPS,
                         description="https URL that receives new ideas")
    event: str = Field(default="new_idea", description="only `new_idea`",
                       json_schema_extra={"enum": ["new_idea"]})


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
