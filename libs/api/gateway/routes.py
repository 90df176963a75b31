"""Routes the gateway answers itself."""

import uuid

from pydantic import BaseModel, ConfigDict

from libs.api.route import API, Route


class AutomationWorkspace(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID
    name: str
    plan: str


class AutomationAuth(BaseModel):
    """`GET /automation/auth`: the key is valid, and whose it is."""

    model_config = ConfigDict(extra="forbid")

    valid: bool
    workspace: AutomationWorkspace


ROUTES = [
    Route("GET", f"{API}/automation/auth", "gateway", "automation_auth", None,
          "Test a key (automation API)", automation=True, responses={200: AutomationAuth},
          tags=("Automation",)),
]
