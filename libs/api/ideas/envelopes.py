"""Response envelopes of the ideas service: `{"data": ...}` and pages, as named models (OpenAPI
component names must be plain identifiers)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, create_model

from libs.common.pagination import Pagination, PaginationWithTotal

from .schemas import (BatchCreateResult, BatchStatusResult, Decision, Evidence, Idea, IdeaDeleted,
                     IdeaDetail, Meeting, Member, Out, Participant, Product, RoadmapAssignment,
                     RoadmapStage, Signal, SupportTicket, Tag, VoteBreakdown, VoteResult,
                     WorkspaceInfo)


def data_of(name: str, tp: Any) -> type[BaseModel]:
    """`{"data": tp}` as a named model (component names must be plain identifiers)."""
    return create_model(name, __base__=Out, data=(tp, ...))


def page_of(name: str, tp: Any, total: bool = False) -> type[BaseModel]:
    return create_model(name, __base__=Out, data=(list[tp], ...),
                        pagination=(PaginationWithTotal if total else Pagination, ...))


IdeaPage = page_of("IdeaPage", Idea, total=True)
IdeaResponse = data_of("IdeaResponse", Idea)
IdeaDetailResponse = data_of("IdeaDetailResponse", IdeaDetail)
IdeaDeletedResponse = data_of("IdeaDeletedResponse", IdeaDeleted)
VoteResultResponse = data_of("VoteResultResponse", VoteResult)
VoteBreakdownResponse = data_of("VoteBreakdownResponse", VoteBreakdown)
SignalPage = page_of("SignalPage", Signal)
DecisionPage = page_of("DecisionPage", Decision)
EvidenceList = data_of("EvidenceList", list[Evidence])
ParticipantList = data_of("ParticipantList", list[Participant])
MeetingList = data_of("MeetingList", list[Meeting])
SupportTicketList = data_of("SupportTicketList", list[SupportTicket])
RoadmapAssignmentResponse = data_of("RoadmapAssignmentResponse", RoadmapAssignment)
BatchCreateResponse = data_of("BatchCreateResponse", BatchCreateResult)
BatchStatusResponse = data_of("BatchStatusResponse", BatchStatusResult)
RoadmapStageList = data_of("RoadmapStageList", list[RoadmapStage])
WorkspaceInfoResponse = data_of("WorkspaceInfoResponse", WorkspaceInfo)
TagList = data_of("TagList", list[Tag])
ProductList = data_of("ProductList", list[Product])
MemberList = data_of("MemberList", list[Member])
