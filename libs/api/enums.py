"""The enumerations the API shares between resources, requests and events.

Each is a named type alias: validation sees the `Literal`, and the OpenAPI document gets one
component of that name (`IdeaStatus`, `IdeaSource`, `WebhookEventType`) that every use refers
to, so a generated client has one type for each instead of one per field.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field
from typing_extensions import TypeAliasType

IdeaStatus = TypeAliasType(
    "IdeaStatus",
    Annotated[
        Literal[
            "captured",
            "new",
            "under_review",
            "planned",
            "in_progress",
            "shipped",
            "rejected",
            "archived",
            "duplicate",
            "deleted",
        ],
        Field(
            description="Where an idea stands. `captured` ideas wait in a review inbox; `shipped`, "
            "`rejected`, `duplicate` and `archived` are decisions; `deleted` ideas are "
            "kept but left out of lists, exports and analytics unless asked for."
        ),
    ],
)

IdeaSource = TypeAliasType(
    "IdeaSource",
    Annotated[
        Literal[
            "discord",
            "slack",
            "teams",
            "sentry",
            "zapier",
            "chrome",
            "vscode",
            "outlook",
            "zendesk",
            "intercom",
            "freshdesk",
            "helpscout",
            "extension",
            "api",
            "email",
        ],
        Field(
            description="Where an idea came from: the values the `source` list filter takes (an "
            "idea's own `source` is free text)."
        ),
    ],
)

WebhookEventType = TypeAliasType(
    "WebhookEventType",
    Annotated[
        Literal[
            "idea.created",
            "idea.updated",
            "idea.status_changed",
            "idea.voted",
            "idea.scored",
            "idea.assigned",
            "idea.deleted",
            "idea.destination_created",
            "idea.signal_detected",
            "customer.created",
            "customer.updated",
            "comment.created",
            "comment.updated",
            "comment.deleted",
        ],
        Field(
            description="A kind of event a webhook subscription can receive; the payload of each "
            "is in the document's `webhooks` section."
        ),
    ],
)


def values(alias: TypeAliasType) -> tuple[str, ...]:
    """The values of one of these enumerations, in declared order."""
    literal = get_args(alias.__value__)[0]
    return tuple(get_args(literal))
