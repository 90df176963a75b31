"""Request and response models of the webhooks service (validation and OpenAPI schemas)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from libs.api.base import Out, data_of, example, page_of
from libs.api.enums import WebhookEventType
from libs.common.errors import ValidationFailed
from libs.common.pagination import CursorParam
from libs.common.validation import Body, JsonInt, Query

__all__ = ["WebhookEventType"]

DeliveryStatus = Literal["pending", "delivered", "failed"]
# The document states the https rule; the service checks it itself (tests may allow http).
HTTPS_ONLY: dict[str, Any] = {"pattern": "^https://"}

WEBHOOK_ID = "f0e1d2c3-b4a5-4968-8776-5a4b3c2d1e0f"
TARGET = "https://hooks.example.com/ideas"


class CreateWebhookRequest(Body):
    """A new subscription: where to deliver, and which events."""

    model_config = example(
        {
            "name": "Product analytics",
            "targetUrl": TARGET,
            "events": ["idea.created", "idea.status_changed"],
        }
    )

    name: str | None = Field(default=None, max_length=255)
    """A name to recognise the subscription by"""
    targetUrl: str = Field(min_length=1, max_length=2000, json_schema_extra=HTTPS_ONLY)
    """https URL that receives the signed deliveries"""
    events: list[WebhookEventType] = Field(
        min_length=1, max_length=14, json_schema_extra={"uniqueItems": True}
    )
    """The events to deliver, 1 to 14, each at most once"""

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

    model_config = example({"events": ["idea.created", "idea.status_changed"]})

    name: str | None = Field(default=None, max_length=255)
    """A label for people; null removes it"""
    targetUrl: str = Field(  # type: ignore[assignment]
        default=None,
        min_length=1,
        max_length=2000,
        json_schema_extra=HTTPS_ONLY,
    )
    """https URL that receives the signed deliveries"""
    events: list[WebhookEventType] = Field(
        default=None,  # type: ignore[arg-type]
        min_length=1,
        max_length=14,
        json_schema_extra={"uniqueItems": True},
    )
    """The events to deliver, 1 to 14, each at most once"""
    isActive: bool = Field(default=None)  # type: ignore[assignment]
    """false pauses deliveries, true resumes them"""

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

    model_config = example({"expiresInSeconds": 3600})

    expiresInSeconds: JsonInt = Field(default=86400, ge=0, le=604800)
    """How long the previous secret still signs (0: not at all); default 86400 (a day)"""


class DeliveryListQuery(Query):
    limit: int = Field(default=25, ge=1, le=100)
    """Page size, 1 to 100"""
    cursor: CursorParam = None
    """`pagination.nextCursor` of the previous page. Empty or absent: the first page"""
    status: DeliveryStatus | None = None
    """Only deliveries in this status"""
    event_type: WebhookEventType | None = None
    """Only deliveries of this event kind"""


class AutomationSubscribeRequest(Body):
    """A hook that receives every new idea of the workspace."""

    model_config = example(
        {"hookUrl": "https://hooks.zapier.example/hooks/catch/123/abc", "event": "new_idea"}
    )

    hookUrl: str = Field(min_length=1, max_length=2000, json_schema_extra=HTTPS_ONLY)
    """https URL that receives new ideas"""
    event: str = Field(default="new_idea", json_schema_extra={"enum": ["new_idea"]})
    """The event to receive; only `new_idea`"""


SUBSCRIPTION: dict[str, Any] = {
    "id": WEBHOOK_ID,
    "name": "Product analytics",
    "targetUrl": TARGET,
    "events": ["idea.created", "idea.status_changed"],
    "secret": "whsec_****Xk2Q",
    "isActive": True,
    "failureCount": 0,
    "lastDeliveredAt": "2025-03-14T09:26:54.120311Z",
    "lastFailedAt": None,
    "lastError": None,
    "createdAt": "2025-03-01T10:00:00.000000Z",
    "updatedAt": "2025-03-01T10:00:00.000000Z",
}
DELIVERY: dict[str, Any] = {
    "id": "0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d",
    "eventId": "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
    "eventType": "idea.created",
    "status": "delivered",
    "statusCode": 200,
    "attemptCount": 1,
    "error": None,
    "durationMs": 84,
    "deliveredAt": "2025-03-14T09:26:54.120311Z",
    "createdAt": "2025-03-14T09:26:53.950122Z",
}


class WebhookSubscription(Out):
    """Where and what the workspace's events are delivered."""

    model_config = example(SUBSCRIPTION)

    id: uuid.UUID
    """The subscription's id"""
    name: str | None
    """Its name"""
    targetUrl: str
    """URL that receives the deliveries"""
    events: list[WebhookEventType]
    """The events it receives"""
    secret: str = Field(
        description="Signing secret: the full value (`whsec_` + 40 base62 "
        "characters) only in the creation response, "
        "`whsec_****` + its last 4 characters later"
    )
    isActive: bool
    """Whether events are delivered to it (false after failing for days, or a 410 answer)"""
    failureCount: int
    """Consecutive failed attempts; 0 after a success"""
    lastDeliveredAt: datetime | None
    """Last successful attempt"""
    lastFailedAt: datetime | None
    """Last failed attempt"""
    lastError: str | None
    """What went wrong in the last failed attempt"""
    createdAt: datetime
    """When it was created"""
    updatedAt: datetime
    """When it last changed"""


class WebhookDelivery(Out):
    """One event on its way to one subscription, with the outcome of its attempts."""

    model_config = example(DELIVERY)

    id: uuid.UUID
    """The delivery's id (the `X-Service-Delivery` header of each attempt)"""
    eventId: str
    """The event's id (the payload's `id`)"""
    eventType: WebhookEventType
    status: DeliveryStatus
    """`pending` until an attempt succeeds (`delivered`) or the attempts run out (`failed`)"""
    statusCode: int | None
    """HTTP status of the last attempt's answer; null without an answer"""
    attemptCount: int
    """Attempts made so far"""
    error: str | None
    """What went wrong in the last attempt"""
    durationMs: int | None
    """How long the last attempt took"""
    deliveredAt: datetime | None
    """When an attempt succeeded"""
    createdAt: datetime
    """When the delivery was created"""


class WebhookAttempt(Out):
    """One attempt of a delivery."""

    attempt: int
    """Counts from 1 over the delivery's life, redeliveries included"""
    statusCode: int | None
    """The receiver's status; null without an answer"""
    error: str | None
    """What went wrong; null on success"""
    durationMs: int
    """How long the attempt took"""
    attemptedAt: datetime
    """When the attempt started"""


class WebhookDeliveryDetail(WebhookDelivery):
    """A delivery with the payload sent and every attempt."""

    model_config = example(
        {
            **DELIVERY,
            "nextAttemptAt": None,
            "payload": {"id": "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9", "type": "idea.created"},
            "attempts": [
                {
                    "attempt": 1,
                    "statusCode": 200,
                    "error": None,
                    "durationMs": 84,
                    "attemptedAt": "2025-03-14T09:26:54.036189Z",
                }
            ],
        }
    )

    nextAttemptAt: datetime | None
    """The next scheduled attempt of a pending delivery; null once delivered or failed"""
    payload: dict[str, Any]
    """The JSON body sent, the same on every attempt"""
    attempts: list[WebhookAttempt]
    """Every attempt kept, oldest first"""


class WebhookTestResult(Out):
    """The outcome of a test ping."""

    model_config = example({"success": True, "statusCode": 200, "durationMs": 42, "error": None})

    success: bool
    """A 2xx answer within the timeout"""
    statusCode: int | None
    """The receiver's status; null without an answer"""
    durationMs: int
    """Time until the answer, or waited for one"""
    error: str | None
    """Why it failed; null on success"""


WebhookDeliveryPage = page_of(
    "WebhookDeliveryPage", WebhookDelivery, "A page of a subscription's deliveries, newest first"
)
WebhookDeliveryResult = data_of(
    "WebhookDeliveryResult", WebhookDelivery, "The delivery, pending again"
)
WebhookDeliveryDetailResult = data_of(
    "WebhookDeliveryDetailResult",
    WebhookDeliveryDetail,
    "The delivery with its payload and attempts",
)
WebhookTestResultEnvelope = data_of(
    "WebhookTestResultEnvelope", WebhookTestResult, "The outcome of the ping"
)


class WebhookSubscriptionDetail(WebhookSubscription):
    """A subscription with its recent deliveries."""

    model_config = example({**SUBSCRIPTION, "recentDeliveries": [DELIVERY]})

    recentDeliveries: list[WebhookDelivery] = Field(
        max_length=20, description="The 20 newest, newest first"
    )


WebhookSubscriptionList = data_of(
    "WebhookSubscriptionList",
    list[WebhookSubscription],
    "The workspace's subscriptions, oldest first",
)
WebhookSubscriptionResult = data_of(
    "WebhookSubscriptionResult", WebhookSubscription, "A subscription"
)
WebhookSubscriptionDetailResult = data_of(
    "WebhookSubscriptionDetailResult",
    WebhookSubscriptionDetail,
    "A subscription with its recent deliveries",
)


class WebhookDeleted(Out):
    """The subscription is gone."""

    model_config = example({"id": WEBHOOK_ID, "deleted": True})

    id: uuid.UUID
    """The subscription's id"""
    deleted: Literal[True]
    """Always true"""


WebhookDeletedResult = data_of(
    "WebhookDeletedResult", WebhookDeleted, "The subscription is deleted"
)


class AutomationHook(Out):
    """A hook subscribed to new ideas."""

    model_config = example(
        {
            "id": "6f7a8b9c-0d1e-4f2a-b3c4-d5e6f7a8b9c0",
            "hookUrl": "https://hooks.zapier.example/hooks/catch/123/abc",
            "event": "new_idea",
        }
    )

    id: uuid.UUID
    """The hook's id (to unsubscribe)"""
    hookUrl: str
    """URL that receives new ideas"""
    event: Literal["new_idea"]
    """Always `new_idea`"""


class AutomationUnsubscribed(Out):
    """The hook is removed."""

    model_config = example({"success": True})

    success: Literal[True]
    """Always true"""
