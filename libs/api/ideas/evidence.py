"""The writes of an idea's evidence, support tickets, meetings and participants: requests,
envelopes and routes (docs/ideas.md, "Evidence, tickets, meetings and participants")."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from pydantic import Field, model_validator

from libs.api.base import data_of, example
from libs.api.route import API, Route
from libs.common.errors import ValidationFailed
from libs.common.validation import Body

from . import examples as ex
from .requests import BodyDateTime
from .schemas import Evidence, Meeting, Participant, RecordDeleted, SupportTicket

SERVICE = "ideas"
IDEAS_PATH = f"{API}/ideas"
# An http or https URL with a host (scheme case-insensitive).
HTTP_URL = r"^[Hh][Tt][Tt][Pp][Ss]?://[^\s/?#]+[^\s]*$"
MeetingParticipant = Annotated[str, Field(min_length=1, max_length=255)]


class CreateEvidenceRequest(Body):
    """A piece of evidence behind the idea."""

    model_config = example(
        {
            "type": "quote",
            "title": "Night shift feedback",
            "content": "We dim our screens all night; a dark theme would help a lot.",
        }
    )

    type: Literal["document", "screenshot", "external_issue", "link", "quote"]
    """Kind of evidence"""
    title: str = Field(min_length=1, max_length=500)
    """Title, 1 to 500 characters"""
    url: str | None = Field(default=None, max_length=2000, pattern=HTTP_URL)
    """Where it lives: an http or https URL, at most 2000 characters"""
    content: str | None = Field(default=None, max_length=10000)
    """Text of the evidence, at most 10000 characters"""


class CreateSupportTicketRequest(Body):
    """A help desk ticket; a second one with the same `platform` and `externalId` on the idea
    updates that ticket."""

    model_config = example(
        {
            "platform": "zendesk",
            "externalId": "48213",
            "subject": "Dark theme?",
            "status": "open",
            "priority": "normal",
            "customerName": "Priya Shah",
            "customerEmail": "priya@globex.example",
        }
    )

    platform: str = Field(min_length=1, max_length=50)
    """Help desk, e.g. `zendesk`, 1 to 50 characters"""
    externalId: str = Field(min_length=1, max_length=200)
    """Ticket id in the help desk, 1 to 200 characters"""
    subject: str = Field(min_length=1, max_length=500)
    """Subject, 1 to 500 characters"""
    status: str | None = Field(default=None, max_length=100)
    """Status in the help desk"""
    priority: str | None = Field(default=None, max_length=100)
    """Priority in the help desk"""
    customerName: str | None = Field(default=None, max_length=255)
    """Who raised it"""
    customerEmail: str | None = Field(default=None, max_length=255)
    """Their e-mail"""
    url: str | None = Field(default=None, max_length=2000)
    """Link to the ticket"""


class CreateMeetingRequest(Body):
    """A meeting whose transcript mentions the idea (or that it was extracted from)."""

    model_config = example(
        {
            "title": "Globex quarterly review",
            "meetingDate": "2025-02-20T15:00:00Z",
            "participants": ["Dana Lee", "Priya Shah"],
            "excerpt": "Priya asked again about a dark theme for the night shift.",
            "relation": "mentioned",
        }
    )

    title: str = Field(min_length=1, max_length=500)
    """Meeting title, 1 to 500 characters"""
    meetingDate: BodyDateTime
    """When it took place"""
    participants: list[MeetingParticipant] = Field(default_factory=list, max_length=50)
    """Who attended: 0 to 50 names, each 1 to 255 characters"""
    excerpt: str | None = Field(default=None, max_length=10000)
    """The passage about the idea, at most 10000 characters"""
    relation: Literal["mentioned", "extracted"] = "mentioned"
    """Whether the idea was mentioned in it or extracted from it"""
    transcriptUrl: str | None = Field(default=None, max_length=2000)
    """Link to the transcript"""


class CreateParticipantRequest(Body):
    """A member of the workspace taking part in the decision."""

    model_config = example({"memberId": ex.MEMBER_ID, "role": "approver"})

    memberId: UUID
    """A member of the workspace (name and e-mail come from them); once per idea"""
    role: Literal["owner", "approver", "reviewer"]
    """Part in the decision; an `owner` becomes the idea's decision owner"""


class UpdateParticipantRequest(Body):
    """At least one property; omitted ones stay unchanged."""

    model_config = example({"decision": "approved"})

    role: Literal["owner", "approver", "reviewer"] = None  # type: ignore[assignment]
    """Part in the decision; `owner` makes the member the idea's decision owner (not null)"""
    decision: Literal["approved", "rejected", "pending"] = None  # type: ignore[assignment]
    """Their verdict; `approved` and `rejected` set `decidedAt`, `pending` clears it
    (not null)"""

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateParticipantRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        for name in ("role", "decision"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValidationFailed(f"{name} must not be null", field=name)
        return self


EvidenceResponse = data_of("EvidenceResponse", Evidence, "The evidence")
SupportTicketResponse = data_of("SupportTicketResponse", SupportTicket, "The support ticket")
MeetingResponse = data_of("MeetingResponse", Meeting, "The meeting")
ParticipantResponse = data_of("ParticipantResponse", Participant, "The participant")
EvidenceDeletedResponse = data_of(
    "EvidenceDeletedResponse", RecordDeleted, "The evidence is deleted"
)
SupportTicketDeletedResponse = data_of(
    "SupportTicketDeletedResponse", RecordDeleted, "The support ticket is deleted"
)
MeetingDeletedResponse = data_of("MeetingDeletedResponse", RecordDeleted, "The meeting is deleted")
ParticipantDeletedResponse = data_of(
    "ParticipantDeletedResponse", RecordDeleted, "The participant is deleted"
)

UPDATED = " Emits `idea.updated`, in the write's transaction."
NOT_FOUND = "An unknown idea, or a {0} that is not the idea's: 404 `not_found`."

ROUTES = [
    Route(
        "POST",
        f"{IDEAS_PATH}/{{id}}/evidence",
        SERVICE,
        "create_evidence",
        "ideas:write",
        "Add evidence to an idea",
        body=CreateEvidenceRequest,
        responses={200: EvidenceResponse},
        tags=("Ideas",),
        description="The idea's `validation.evidenceCount` counts it at once." + UPDATED,
    ),
    Route(
        "DELETE",
        f"{IDEAS_PATH}/{{id}}/evidence/{{evidenceId}}",
        SERVICE,
        "delete_evidence",
        "ideas:write",
        "Remove evidence from an idea",
        responses={200: EvidenceDeletedResponse},
        tags=("Ideas",),
        description="`validation.evidenceCount` follows at once. "
        + NOT_FOUND.format("piece of evidence")
        + UPDATED,
    ),
    Route(
        "POST",
        f"{IDEAS_PATH}/{{id}}/support-tickets",
        SERVICE,
        "create_support_ticket",
        "ideas:write",
        "Link a support ticket to an idea (or update it)",
        body=CreateSupportTicketRequest,
        responses={200: SupportTicketResponse},
        tags=("Ideas",),
        description="Upserted by (`platform`, `externalId`) on the idea: a second POST of the "
        "pair updates the given fields of that ticket (its id stays; omitted optional fields "
        "keep their values) and answers it, so a help desk can keep its status current. Two "
        "at once give one ticket." + UPDATED,
    ),
    Route(
        "DELETE",
        f"{IDEAS_PATH}/{{id}}/support-tickets/{{ticketId}}",
        SERVICE,
        "delete_support_ticket",
        "ideas:write",
        "Unlink a support ticket from an idea",
        responses={200: SupportTicketDeletedResponse},
        tags=("Ideas",),
        description=NOT_FOUND.format("ticket") + UPDATED,
    ),
    Route(
        "POST",
        f"{IDEAS_PATH}/{{id}}/meetings",
        SERVICE,
        "create_meeting",
        "ideas:write",
        "Record a meeting about an idea",
        body=CreateMeetingRequest,
        responses={200: MeetingResponse},
        tags=("Ideas",),
        description="`relation` is `mentioned` when absent." + UPDATED,
    ),
    Route(
        "DELETE",
        f"{IDEAS_PATH}/{{id}}/meetings/{{meetingId}}",
        SERVICE,
        "delete_meeting",
        "ideas:write",
        "Remove a meeting from an idea",
        responses={200: MeetingDeletedResponse},
        tags=("Ideas",),
        description=NOT_FOUND.format("meeting") + UPDATED,
    ),
    Route(
        "POST",
        f"{IDEAS_PATH}/{{id}}/participants",
        SERVICE,
        "create_participant",
        "ideas:write",
        "Add a member to an idea's decision",
        body=CreateParticipantRequest,
        responses={200: ParticipantResponse},
        tags=("Ideas",),
        description="`name` and `email` come from the member; `decision` starts `pending`. A "
        "member takes part once per idea (a second is 409 `conflict`); an unknown member, or "
        "another workspace's, is 404 `not_found`. An `owner` becomes the idea's "
        "`decisionOwnerId` and the previous owner participant, if any, leaves the list (an "
        "idea has at most one)." + UPDATED,
    ),
    Route(
        "PATCH",
        f"{IDEAS_PATH}/{{id}}/participants/{{participantId}}",
        SERVICE,
        "update_participant",
        "ideas:write",
        "Change a participant's role or decision",
        body=UpdateParticipantRequest,
        responses={200: ParticipantResponse},
        tags=("Ideas",),
        description="`decidedAt` is set when the decision becomes `approved` or `rejected`, "
        "null when `pending`. Made `owner`, the member becomes the idea's `decisionOwnerId` "
        "(the previous owner participant leaves the list); the owner given another role "
        "clears it. " + NOT_FOUND.format("participant") + UPDATED,
    ),
    Route(
        "DELETE",
        f"{IDEAS_PATH}/{{id}}/participants/{{participantId}}",
        SERVICE,
        "delete_participant",
        "ideas:write",
        "Remove a participant from an idea's decision",
        responses={200: ParticipantDeletedResponse},
        tags=("Ideas",),
        description="Removing the `owner` clears the idea's `decisionOwnerId`. "
        + NOT_FOUND.format("participant")
        + UPDATED,
    ),
]
