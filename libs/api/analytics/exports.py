"""Records of the JSON exports (CONTRACT section 9); CSV lines carry the same fields, flat."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from libs.api.customers.schemas import CustomerFull
from libs.api.ideas.schemas import Idea, Signal


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IdeaExportRecord(Idea):
    """An Idea; CSV flattens `rice.x` to `riceX` and `validation.x` to `validationX`."""

    tags: list[str] = Field(None, description="Tag names; only with include_tags (CSV: joined by ;)")  # type: ignore[assignment]
    customerCount: int = Field(None, description="Linked customers; only with include_customer_count")  # type: ignore[assignment]


class CustomerExportRecord(CustomerFull):
    """A CustomerFull; CSV writes `metadata` as JSON text."""


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


class SignalExportRecord(Signal):
    """A Signal with the context of its idea."""

    ideaId: uuid.UUID
    ideaServiceId: str
    ideaTitle: str
