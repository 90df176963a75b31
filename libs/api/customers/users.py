"""Request and response models of end users: the people who ask for ideas and
vote, each optionally of a customer. The customers service owns them (docs/customers.md, End
users)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import Field, field_validator, model_validator

from libs.api.base import Out, data_of, example, page_of
from libs.api.ideas import examples as idea_examples
from libs.api.ideas.requests import EMAIL
from libs.api.ideas.schemas import Comment, Idea, Signal
from libs.common.errors import ValidationFailed
from libs.common.validation import Body, stored_json_size

from .schemas import MAX_METADATA_BYTES, PageQuery

USER_ID = "5b0e7c1a-3f2d-4c8e-9a61-2d4f8b7e9c03"
USER: dict[str, Any] = {
    "id": USER_ID,
    "name": "Dana Lee",
    "email": "dana@acme.example",
    "externalId": "chat-7731",
    "customerId": "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
    "avatarUrl": "https://cdn.acme.example/avatars/dana.png",
    "metadata": {"plan": "team"},
    "voteCount": 3,
    "createdAt": "2025-02-01T12:00:00.000000Z",
    "updatedAt": "2025-03-01T12:00:00.000000Z",
}
# An avatar's address: https, no spaces or control characters.
HTTPS_URL = r"^https://[^\x00-\x20\x7f-\x9f]+$"


class _UserFields(Body):
    """The fields a client may set, shared by create, identify and update."""

    email: str | None = Field(default=None, min_length=3, max_length=254, pattern=EMAIL)
    """E-mail address; unique in the workspace, ignoring case"""
    externalId: str | None = Field(default=None, min_length=1, max_length=255)
    """The user's id in your system (chat, help desk, product); unique in the workspace"""
    customerId: uuid.UUID | None = None
    """The customer (company) the user belongs to, or null"""
    avatarUrl: str | None = Field(default=None, max_length=2000, pattern=HTTPS_URL)
    """Picture of the user, an https URL"""
    metadata: dict[str, Any] | None = None
    """Any JSON object, at most 16 KiB as compact UTF-8 JSON; null clears it"""

    @field_validator("metadata")
    @classmethod
    def _small(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        size = stored_json_size(value)
        if size > MAX_METADATA_BYTES:
            raise ValueError(f"must be at most 16 KiB (16384 bytes) as JSON, got {size} bytes")
        return value


class CreateUserRequest(_UserFields):
    """A new end user; only `name` is required."""

    model_config = example({k: USER[k] for k in ("name", "email", "externalId", "customerId")})

    name: str = Field(min_length=1, max_length=255)
    """The user's name"""


class IdentifyUserRequest(_UserFields):
    """Finds the user by `externalId`, else by `email`, else creates one; then applies the
    given fields. One of `externalId` or `email` is required."""

    model_config = example({"email": "dana@acme.example", "name": "Dana Lee"})

    name: str | None = Field(default=None, min_length=1, max_length=255)
    """The user's name"""

    @model_validator(mode="after")
    def _one_key(self) -> IdentifyUserRequest:
        if self.externalId is None and self.email is None:
            raise ValidationFailed(
                "externalId: one of externalId or email is required", field="externalId"
            )
        return self


class UpdateUserRequest(_UserFields):
    """At least one property; omitted ones stay unchanged, `null` clears one."""

    model_config = example({"customerId": "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"})

    name: str | None = Field(default=None, min_length=1, max_length=255)
    """The user's name, or null"""

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateUserRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        return self


class ListUsersQuery(PageQuery):
    search: str | None = Field(default=None, max_length=200)
    """Text found in the name or e-mail (case-insensitive)"""
    customer_id: uuid.UUID | None = None
    """Only the users of this customer"""


class User(Out):
    """An end user: someone who asks for ideas and votes, not a team member."""

    model_config = example(USER)

    id: uuid.UUID
    """The user's id"""
    name: str | None
    """The user's name"""
    email: str | None
    """E-mail address"""
    externalId: str | None
    """The user's id in your system"""
    customerId: uuid.UUID | None
    """The customer the user belongs to"""
    avatarUrl: str | None
    """Picture of the user"""
    metadata: dict[str, Any] | None
    """Any JSON object"""
    voteCount: int
    """Ideas the user votes +1 on now"""
    createdAt: datetime
    """When the user was created"""
    updatedAt: datetime | None
    """When the user last changed; null until then"""


class UserDeleted(Out):
    """An erased user: the user, their votes and their comments are gone."""

    model_config = example(
        {"id": USER_ID, "deleted": True, "votesRemoved": 3, "commentsRemoved": 1}
    )

    id: uuid.UUID
    """The user's id"""
    deleted: bool
    """Always true"""
    votesRemoved: int
    """Votes removed (each idea's `voteCount` followed)"""
    commentsRemoved: int
    """Comments removed (replies to them stay)"""


class UserVote(Out):
    """One of the user's votes."""

    ideaId: uuid.UUID
    """The idea voted on"""
    value: int
    """+1 or -1"""
    createdAt: datetime
    """When (a replaced vote keeps the time of the replacement)"""


class UserSignal(Signal):
    """A signal that carries the user's e-mail, with its idea."""

    ideaId: uuid.UUID
    """The idea the signal belongs to"""


class UserExport(Out):
    """Everything the service holds about one user: exactly what erasing the user removes."""

    model_config = example(
        {
            "user": USER,
            "votes": [
                {
                    "ideaId": "3f1c2a9e-8b4d-4e61-9a57-0c2d5e7f8a91",
                    "value": 1,
                    "createdAt": "2025-03-02T09:30:00.000000Z",
                }
            ],
            "comments": [
                {
                    **idea_examples.COMMENT,
                    "author": {"type": "user", "id": USER_ID, "name": USER["name"]},
                }
            ],
            "ideas": [],
            "signals": [],
        }
    )

    user: User
    """The user"""
    votes: list[UserVote]
    """The user's votes, oldest first"""
    comments: list[Comment]
    """The user's comments, oldest first (internal ones too)"""
    ideas: list[Idea]
    """Ideas the user asked for (their `sourceUserId`): erasure keeps them, without author"""
    signals: list[UserSignal]
    """Signals whose `userEmail` is the user's e-mail: erasure clears their `userId`,
    `userName` and `userEmail`"""


UserResponse = data_of("UserResponse", User, "An end user")
UserListResponse = page_of(
    "UserListResponse", User, "A page of end users, with the total matching the filters", total=True
)
UserDeletedResponse = data_of("UserDeletedResponse", UserDeleted, "The user is erased")
UserExportResponse = data_of("UserExportResponse", UserExport, "Everything about the user")
