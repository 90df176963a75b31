"""What receivers get: the payload of every webhook event, for the document's `webhooks` section.

A main-API delivery is `{"id", "type", "createdAt", "workspaceId", "data"}`; `data` holds the
resource in its one JSON form (an Idea, a CustomerFull) and what the event adds. The automation
API's `new_idea` hook gets a flat body of its own.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from libs.api.base import Out, example
from libs.api.customers.schemas import CUSTOMER, CustomerFull
from libs.api.enums import IdeaStatus
from libs.api.ideas import examples as ideas_ex
from libs.api.ideas.schemas import Comment, Idea, Signal

# A message header of `idea.created` (not part of the payload receivers get): the idea's
# author as the ideas service keeps it (IdeaDetail's `sourceUserName`), which the automation
# `new_idea` payload names.
AUTHOR_HEADER = "x-idea-author"

EVENT_ID = "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9"
WORKSPACE_ID = "7e8f9a0b-1c2d-4e3f-8a5b-6c7d8e9f0a1b"
CREATED_AT = "2025-03-14T09:26:53.589793Z"


class IdeaEventData(Out):
    """The idea after the change."""

    idea: Idea
    """The idea after the change"""


class IdeaStatusChangedData(IdeaEventData):
    """The idea after the change and its status before."""

    previousStatus: IdeaStatus
    """The status before the change"""


class VoteCast(Out):
    """The vote that was cast, or removed."""

    voter: str
    """Who voted"""
    value: Literal[-1, 0, 1]
    """+1 or -1; 0 when the voter's vote was removed (`DELETE /ideas/{id}/vote`)"""


class IdeaVotedData(IdeaEventData):
    """The idea with its new vote count, and the vote."""

    vote: VoteCast
    """The vote"""


class IdeaAssignedData(IdeaEventData):
    """The idea on its new roadmap stage, and the stage it left."""

    previousRoadmapStageId: uuid.UUID | None
    """The stage before; null when it had none"""


class IdeaSignalData(IdeaEventData):
    """The idea and the signal detected for it."""

    signal: Signal
    """The signal"""


class CommentEventData(Out):
    """The comment and the idea it is on, after the change."""

    comment: Comment
    """The comment (for `comment.deleted`, as it was)"""
    idea: Idea
    """The idea after the change (its `commentCount` follows)"""


class CustomerEventData(Out):
    """The customer after the change."""

    customer: CustomerFull
    """The customer after the change"""


class WebhookTestData(Out):
    """Which subscription is being tested."""

    subscriptionId: uuid.UUID
    """The subscription pinged"""


# event type -> (data model, example data, when it is sent)
IDEA = {"idea": ideas_ex.IDEA}
EVENTS: dict[str, tuple[type[BaseModel], dict[str, Any], str]] = {
    "idea.created": (IdeaEventData, IDEA, "An idea was created (API, batch or automation)."),
    "idea.updated": (IdeaEventData, IDEA, "An idea was changed by a successful PATCH."),
    "idea.status_changed": (
        IdeaStatusChangedData,
        {**IDEA, "previousStatus": "under_review"},
        "An idea's status changed (PATCH, batch status or delete).",
    ),
    "idea.voted": (
        IdeaVotedData,
        {**IDEA, "vote": {"voter": "user:42", "value": 1}},
        "Someone voted on an idea.",
    ),
    "idea.scored": (IdeaEventData, IDEA, "A RICE field of an idea was set."),
    "idea.assigned": (
        IdeaAssignedData,
        {**IDEA, "previousRoadmapStageId": None},
        "An idea was put on a roadmap stage, moved, or taken off the roadmap.",
    ),
    "idea.deleted": (
        IdeaEventData,
        {"idea": {**ideas_ex.IDEA, "status": "deleted"}},
        "An idea was deleted (it keeps its record, with status `deleted`).",
    ),
    "idea.destination_created": (
        IdeaEventData,
        IDEA,
        "An issue was created for an idea in its destination tracker.",
    ),
    "idea.signal_detected": (
        IdeaSignalData,
        {**IDEA, "signal": ideas_ex.SIGNAL},
        "A mention of an existing idea was recorded, e.g. a duplicate sent to the automation API.",
    ),
    "customer.created": (CustomerEventData, {"customer": CUSTOMER}, "A customer was created."),
    "customer.updated": (CustomerEventData, {"customer": CUSTOMER}, "A customer was changed."),
    "comment.created": (
        CommentEventData,
        {"comment": ideas_ex.COMMENT, "idea": ideas_ex.IDEA},
        "A comment was written on an idea (internal ones too).",
    ),
    "comment.updated": (
        CommentEventData,
        {"comment": ideas_ex.REPLY, "idea": ideas_ex.IDEA},
        "A comment's body was changed.",
    ),
    "comment.deleted": (
        CommentEventData,
        {"comment": ideas_ex.COMMENT, "idea": {**ideas_ex.IDEA, "commentCount": 1}},
        "A comment was deleted (through the API, or as its author was erased); its replies stay.",
    ),
    "webhook.test": (
        WebhookTestData,
        {"subscriptionId": "f0e1d2c3-b4a5-4968-8776-5a4b3c2d1e0f"},
        "A test ping of one subscription, sent on request. It is not a delivery: "
        "it is not retried or recorded.",
    ),
}


def _name(event_type: str) -> str:
    """`idea.status_changed` -> `IdeaStatusChangedEvent`."""
    words = event_type.replace(".", "_").split("_")
    return "".join(w.title() for w in words) + "Event"


def _event_model(
    event_type: str, data: type[BaseModel], data_example: dict[str, Any], description: str
) -> type[BaseModel]:
    body = {
        "id": EVENT_ID,
        "type": event_type,
        "createdAt": CREATED_AT,
        "workspaceId": WORKSPACE_ID,
        "data": data_example,
    }
    base = type(f"_{_name(event_type)}", (Out,), {"model_config": example(body)})
    return create_model(
        _name(event_type),
        __base__=base,
        __doc__=description,
        id=(
            uuid.UUID,
            Field(
                description="The event's id: the same on every attempt; "
                "receivers use it to drop a repeat"
            ),
        ),
        type=(Literal[event_type], Field(description="The event type")),  # type: ignore[arg-type]
        createdAt=(datetime, Field(description="When the event occurred")),
        workspaceId=(uuid.UUID, Field(description="The workspace it occurred in")),
        data=(data, Field(description="What the event is about")),
    )


EVENT_MODELS: dict[str, type[BaseModel]] = {
    kind: _event_model(kind, *spec) for kind, spec in EVENTS.items()
}


class NewIdeaPayload(Out):
    """What an automation hook receives for each new idea, whatever created it."""

    model_config = example(
        {
            "id": ideas_ex.IDEA_ID,
            "title": ideas_ex.IDEA["title"],
            "summary": ideas_ex.IDEA["summary"],
            "source": "slack",
            "authorName": "Sam Ortiz",
            "url": ideas_ex.IDEA["url"],
            "category": "feature",
            "createdAt": ideas_ex.IDEA["createdAt"],
        }
    )

    id: uuid.UUID
    """The idea's id: receivers use it to drop a repeat"""
    title: str
    """Title"""
    summary: str
    """Summary, or the original message (empty when the idea has none)"""
    source: str
    """Where the idea came from"""
    authorName: str
    """Who wrote it (empty when unknown)"""
    authorAvatar: str = Field(None, description="URL of the author's avatar, when known")  # type: ignore[assignment]
    url: str = Field(None, description="Link to the original item, when there is one")  # type: ignore[assignment]
    category: str = Field(None, description="Category, when set")  # type: ignore[assignment]
    createdAt: datetime
    """When the idea was created"""
