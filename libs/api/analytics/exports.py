"""Records of the JSON exports (docs/analytics.md); CSV lines carry the same fields, flat."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import Field

from libs.api.base import Out, example
from libs.api.customers.schemas import CustomerFull
from libs.api.enums import IdeaStatus
from libs.api.ideas import examples as ideas_ex
from libs.api.ideas.schemas import Idea, Signal


class IdeaExportRecord(Idea):
    """An Idea; CSV flattens `rice.x` to `riceX` and `validation.x` to `validationX`."""

    model_config = example({**ideas_ex.IDEA, "tags": ["ui"], "customerCount": 2})

    tags: list[str] = Field(
        None,  # type: ignore[arg-type]
        description="Tag names; only with include_tags (CSV: joined by ;)",
    )
    customerCount: int = Field(
        None, description="Linked customers; only with include_customer_count"
    )  # type: ignore[assignment]


class CustomerExportRecord(CustomerFull):
    """A CustomerFull; CSV writes `metadata` as JSON text."""


class DecisionExportRecord(Out):
    """A decided idea with its decision context; `id` is the idea's id."""

    model_config = example(
        {
            "id": ideas_ex.IDEA_ID,
            "ideaServiceId": "IDEA-42",
            "title": "Dark mode for the dashboard",
            "status": "shipped",
            "decidedAt": "2025-03-10T08:00:00.000000Z",
            "closureCategory": "shipped",
            "decisionReason": "Top request from enterprise customers",
            "decisionOwnerName": "Dana Lee",
        }
    )

    id: uuid.UUID
    """The idea's id"""
    ideaServiceId: str
    """Its `IDEA-<n>` id"""
    title: str
    """Its title"""
    status: IdeaStatus
    """Its status"""
    decidedAt: datetime
    """When it was decided"""
    closureCategory: str | None
    """Category of the decision"""
    decisionReason: str | None
    """Why"""
    decisionOwnerName: str | None
    """Who owns the decision"""


class SignalExportRecord(Signal):
    """A Signal with the context of its idea."""

    model_config = example(
        {
            **ideas_ex.SIGNAL,
            "ideaId": ideas_ex.IDEA_ID,
            "ideaServiceId": "IDEA-42",
            "ideaTitle": "Dark mode for the dashboard",
        }
    )

    ideaId: uuid.UUID
    """The idea the signal is about"""
    ideaServiceId: str
    """Its `IDEA-<n>` id"""
    ideaTitle: str
    """Its title"""
