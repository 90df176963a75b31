"""Routes the gateway answers itself."""

import uuid

from libs.api.base import Out, example
from libs.api.route import API, Route


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
]
