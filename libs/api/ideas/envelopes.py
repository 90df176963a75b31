"""Response envelopes of the ideas service: `{"data": ...}` and pages, as named models (OpenAPI
component names must be plain identifiers)."""

from __future__ import annotations

from libs.api.base import data_of, page_of

from .schemas import (
    BatchCreateResult,
    BatchStatusResult,
    Decision,
    Evidence,
    Idea,
    IdeaDeleted,
    IdeaDetail,
    Meeting,
    Member,
    MergeResult,
    Participant,
    Product,
    RecordDeleted,
    RoadmapAssignment,
    RoadmapStage,
    Signal,
    SimilarIdea,
    SupportTicket,
    Tag,
    TagDeleted,
    VoteBreakdown,
    VoteResult,
    WorkspaceInfo,
)

__all__ = ["data_of", "page_of"]

IdeaPage = page_of(
    "IdeaPage", Idea, "A page of ideas, with the total matching the filters", total=True
)
IdeaResponse = data_of("IdeaResponse", Idea, "An idea")
IdeaDetailResponse = data_of("IdeaDetailResponse", IdeaDetail, "An idea with its details")
IdeaDeletedResponse = data_of("IdeaDeletedResponse", IdeaDeleted, "The idea is deleted")
VoteResultResponse = data_of("VoteResultResponse", VoteResult, "The vote as recorded")
VoteBreakdownResponse = data_of("VoteBreakdownResponse", VoteBreakdown, "An idea's votes")
SignalPage = page_of("SignalPage", Signal, "A page of an idea's signals")
SignalResponse = data_of("SignalResponse", Signal, "A signal")
SignalDeletedResponse = data_of("SignalDeletedResponse", RecordDeleted, "The signal is deleted")
DecisionPage = page_of("DecisionPage", Decision, "A page of an idea's decision history")
EvidenceList = data_of("EvidenceList", list[Evidence], "An idea's evidence")
ParticipantList = data_of(
    "ParticipantList", list[Participant], "The participants in an idea's decision"
)
MeetingList = data_of("MeetingList", list[Meeting], "Meetings that mention an idea")
SupportTicketList = data_of(
    "SupportTicketList", list[SupportTicket], "Support tickets linked to an idea"
)
RoadmapAssignmentResponse = data_of(
    "RoadmapAssignmentResponse", RoadmapAssignment, "The idea's roadmap stage"
)
BatchCreateResponse = data_of("BatchCreateResponse", BatchCreateResult, "The new ideas")
BatchStatusResponse = data_of("BatchStatusResponse", BatchStatusResult, "The changed ideas")
RoadmapStageList = data_of("RoadmapStageList", list[RoadmapStage], "The workspace's roadmap stages")
WorkspaceInfoResponse = data_of("WorkspaceInfoResponse", WorkspaceInfo, "The workspace")
TagList = data_of("TagList", list[Tag], "The workspace's tags")
TagResponse = data_of("TagResponse", Tag, "A tag")
TagDeletedResponse = data_of("TagDeletedResponse", TagDeleted, "The tag is deleted")
ProductList = data_of("ProductList", list[Product], "The workspace's products")
ProductResponse = data_of("ProductResponse", Product, "A product")
ProductDeletedResponse = data_of("ProductDeletedResponse", RecordDeleted, "The product is deleted")
MemberResponse = data_of("MemberResponse", Member, "A member")
MemberDeletedResponse = data_of("MemberDeletedResponse", RecordDeleted, "The member is deleted")
MergeResponse = data_of("MergeResponse", MergeResult, "The primary and the duplicate")
SimilarIdeaList = data_of(
    "SimilarIdeaList", list[SimilarIdea], "Ideas closest in meaning, most similar first"
)
MemberList = data_of("MemberList", list[Member], "The workspace's team members")
