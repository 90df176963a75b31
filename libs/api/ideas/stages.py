"""Roadmap stage writes: requests, the delete's answer and their envelopes (docs/ideas.md,
"Roadmap stages: the writes")."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import Field, model_validator

from libs.api.base import Out, data_of, example
from libs.common.errors import ValidationFailed
from libs.common.validation import Body, JsonInt

from . import examples as ex
from .requests import HEX_COLOR
from .schemas import RoadmapStage

STAGE_SLUG = r"^[a-z0-9-]+$"


class CreateStageRequest(Body):
    """A new stage of the workspace's roadmap."""

    model_config = example({"name": "Beta", "slug": "beta", "color": "#f59e0b", "position": 1})

    name: str = Field(min_length=1, max_length=100)
    """Stage name, 1 to 100 characters"""
    slug: str = Field(default=None, min_length=1, max_length=50, pattern=STAGE_SLUG)  # type: ignore[assignment]
    """`[a-z0-9-]`, 1 to 50 characters, unique in the workspace; when absent, made from the
    name (lower case, other characters as `-`)"""
    color: str | None = Field(default=None, pattern=HEX_COLOR)
    """Display colour as `#rrggbb`, or null"""
    position: JsonInt = Field(default=None, ge=0)  # type: ignore[assignment]
    """Where it goes, from 0: the stages at this position and after move one down; past the
    end (or absent) means last"""

    @model_validator(mode="after")
    def _not_null(self) -> CreateStageRequest:
        for name in ("slug", "position"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValidationFailed(f"{name} must not be null", field=name)
        return self


class UpdateStageRequest(Body):
    """At least one property; omitted ones stay unchanged."""

    model_config = example({"position": 0, "isDefault": True})

    name: str = Field(default=None, min_length=1, max_length=100)  # type: ignore[assignment]
    """Stage name, 1 to 100 characters (not null)"""
    slug: str = Field(default=None, min_length=1, max_length=50, pattern=STAGE_SLUG)  # type: ignore[assignment]
    """`[a-z0-9-]`, 1 to 50 characters, unique in the workspace (not null)"""
    color: str | None = Field(default=None, pattern=HEX_COLOR)
    """Display colour as `#rrggbb`, or null to clear it"""
    position: JsonInt = Field(default=None, ge=0)  # type: ignore[assignment]
    """Move the stage here, from 0: the others close up around it; past the end means last"""
    isDefault: Literal[True] = None  # type: ignore[assignment]
    """Only `true`: this stage becomes the default, the previous default no longer is"""

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateStageRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        for name in ("name", "slug", "position", "isDefault"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValidationFailed(f"{name} must not be null", field=name)
        return self


class StageDeleted(Out):
    """A deleted stage: its ideas are off the roadmap."""

    model_config = example({"id": ex.STAGE_ID, "deleted": True, "unstaged": 3})

    id: UUID
    """The stage's id"""
    deleted: bool
    """Always true"""
    unstaged: int
    """Ideas that were on the stage (deleted ones included): now on none, each with an
    `idea.assigned` event"""


RoadmapStageResponse = data_of("RoadmapStageResponse", RoadmapStage, "A roadmap stage")
StageDeletedResponse = data_of("StageDeletedResponse", StageDeleted, "The stage is deleted")
