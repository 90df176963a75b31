"""Routes the gateway answers itself."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import Field, model_validator

from libs.api.base import Out, example
from libs.api.ideas.envelopes import WorkspaceInfoResponse
from libs.api.route import API, Route
from libs.common.errors import ValidationFailed
from libs.common.validation import Body

WORKSPACE_SLUG = r"^[a-z0-9][a-z0-9-]*[a-z0-9]$"


class AutomationWorkspace(Out):
    """The key's workspace."""

    id: uuid.UUID
    """The workspace's id"""
    name: str
    """Workspace name"""
    plan: str
    """Plan: `starter`, `pro`, `growth`, `scale` or `enterprise`"""


class AutomationAuth(Out):
    """`GET /automation/auth`: the key is valid, and whose it is."""

    model_config = example(
        {
            "valid": True,
            "workspace": {
                "id": "7e8f9a0b-1c2d-4e3f-8a5b-6c7d8e9f0a1b",
                "name": "Acme",
                "plan": "pro",
            },
        }
    )

    valid: bool
    """Always true (an invalid key gets 401)"""
    workspace: AutomationWorkspace
    """Whose key it is"""


class UpdateWorkspaceRequest(Body):
    """At least one property; omitted ones stay unchanged."""

    model_config = example({"name": "Acme Inc.", "inboxMode": "review", "slug": "acme"})

    name: str = Field(default=None, min_length=1, max_length=100)  # type: ignore[assignment]
    """Workspace name, 1 to 100 characters (not null)"""
    defaultDestination: Literal["github", "linear", "jira"] | None = None
    """Issue tracker ideas are sent to by default: `github`, `linear`, `jira`, or null"""
    inboxMode: Literal["direct", "review"] = None  # type: ignore[assignment]
    """`direct` (new ideas start `new`) or `review` (they start `captured`); not null"""
    publicSubmissionEnabled: bool = None  # type: ignore[assignment]
    """Whether the public submission portal is on (not null)"""
    slug: str | None = Field(default=None, min_length=3, max_length=50, pattern=WORKSPACE_SLUG)
    """3 to 50 of `[a-z0-9-]`, starting and ending with a letter or digit, unique across all
    workspaces; null clears it"""

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateWorkspaceRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        for name in ("name", "inboxMode", "publicSubmissionEnabled"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValidationFailed(f"{name} must not be null", field=name)
        return self


ROUTES = [
    Route(
        "GET",
        f"{API}/automation/auth",
        "gateway",
        "automation_auth",
        None,
        "Test a key (automation API)",
        automation=True,
        responses={200: AutomationAuth},
        tags=("Automation",),
        description="Answers 200 with the key's workspace when the key is active, 401 "
        "otherwise. Automation platforms call it to check a connection.",
    ),
    Route(
        "PATCH",
        f"{API}/workspace",
        "gateway",
        "update_workspace",
        "workspace:write",
        "Change the workspace's settings",
        body=UpdateWorkspaceRequest,
        responses={200: WorkspaceInfoResponse},
        tags=("Workspace",),
        description="Omitted fields stay unchanged; answers the workspace as `GET /workspace` "
        "does. A `slug` another workspace has is 409 `conflict`. Keys of the workspace see the "
        "new name and inbox mode at once on the gateway that took the change and within "
        "`KEY_CACHE_TTL_S` (2 s) on any other: ideas created after that start `captured` "
        "under the `review` inbox mode, `new` under `direct`.",
    ),
]
