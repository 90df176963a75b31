"""The ideas service's public routes: the route table's entries for ideas, roadmap, workspace."""

from pydantic import BaseModel

from libs.api.route import API, Route, Tool

from . import comments, envelopes, evidence, requests, stages
from . import schemas as models

SERVICE = "ideas"
IDEAS_PATH = f"{API}/ideas"
IDEA_REF = "The idea: its uuid or its `IDEA-<n>` id."


def _inputs(
    body: type[BaseModel], first: tuple[str, ...] = (), but: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """A tool's inputs from its route's body: `first`, then the body's other fields in its
    order, but those in `but`; a field added to the body is an input with its own doc."""
    rest = (n for n in body.model_fields if n not in first and n not in but)
    return (*first, *rest)


# MCP tools (docs/mcp.md), each beside the route it calls.
SEARCH_IDEAS = Tool(
    "search_ideas",
    "Search the workspace's ideas (deleted ones left out unless status is `deleted`). `query` "
    "matches every word in the title or summary, case-insensitive. Sort by `sort` in `order`; "
    "pass `nextCursor` back as `cursor` for the next page. `total` counts every match.",
    inputs=("query", "status", "sort", "order", "limit", "cursor"),
    rename={"query": "search"},
    limit=(10, 50),
    key="ideas",
    page=True,
    descriptions={
        "query": "Free text: every word must appear in the title or summary.",
        "status": "Only ideas with this status.",
        "sort": "The sort key.",
        "order": "Sort order.",
        "limit": "Ideas per page (1 to 50).",
        "cursor": "`nextCursor` of the previous page, with the same other inputs.",
    },
)
GET_IDEA = Tool(
    "get_idea",
    "Get one idea with its details (votes, RICE score, customers' ARR, roadmap stage, tags, "
    "decision) by its uuid or its `IDEA-<n>` id.",
    path_input="id",
    idea_inputs=("id",),
    descriptions={"id": IDEA_REF},
)
CREATE_IDEA = Tool(
    "create_idea",
    "Capture a new idea in the workspace. Returns the idea with its `IDEA-<n>` id. Fires "
    "`idea.created` webhooks.",
    # The contract's four first, then the body's other fields but `url` in the body's order.
    inputs=_inputs(
        requests.CreateIdeaRequest, first=("title", "summary", "category", "source"), but=("url",)
    ),
    descriptions={
        "title": "A short title (1 to 500 characters).",
        "summary": "The idea in a few sentences.",
        "category": "A free-form category, e.g. `feature` or `bug`.",
        "source": "Where the idea came from; `api` when omitted.",
        "tagIds": "Ids of the workspace's tags to put on the idea (0 to 50).",
        "ideaType": "Kind of idea (1 to 50 characters), or null.",
        "productId": "Id of a product of the workspace, or null.",
        "decisionOwnerId": "Id of the member of the workspace who owns the decision, or null.",
        "decisionDeadline": "When a decision is due (RFC 3339 date-time), or null.",
        "actionable": "Whether the idea is concrete enough to act on.",
        "validationScore": "Validation score from 0 to 100, or null.",
    },
)
UPDATE_IDEA = Tool(
    "update_idea",
    "Change an idea: title, summary, category, status (with `decisionReason`), RICE inputs "
    "(reach and impact >= 0, confidence 0 to 1, effort > 0), its tags (`tagIds` replaces "
    "the set), product, decision owner and deadline, type, url, actionable or validation "
    "score. Give at least one field; `null` clears a nullable one. A status change is "
    "recorded as a decision (`closureCategory` only with a change to a decided status).",
    path_input="id",
    idea_inputs=("id",),
    inputs=_inputs(requests.UpdateIdeaRequest),
    descriptions={
        "id": IDEA_REF,
        "title": "New title.",
        "summary": "New summary.",
        "status": "New status.",
        "category": "New category.",
        "decisionReason": "Why the status changes; kept on the decision.",
        "riceReach": "RICE reach (>= 0).",
        "riceImpact": "RICE impact (>= 0).",
        "riceConfidence": "RICE confidence, a fraction from 0 to 1.",
        "riceEffort": "RICE effort (> 0).",
        "tagIds": "The idea's tags, by id: replaces its set (0 to 50 tags of the workspace).",
        "ideaType": "Kind of idea (1 to 50 characters), or null.",
        "productId": "Id of a product of the workspace, or null.",
        "decisionOwnerId": "Id of the member of the workspace who owns the decision, or null.",
        "decisionDeadline": "When a decision is due (RFC 3339 date-time), or null.",
        "actionable": "Whether the idea is concrete enough to act on.",
        "validationScore": "Validation score from 0 to 100, or null.",
        "url": "Link to the original item (max 2000 characters), or null.",
        "closureCategory": "Category of the decision (1 to 50 characters), only together with "
        "a change of status to shipped, rejected, duplicate or archived.",
    },
)
RECORD_SIGNAL = Tool(
    "record_signal",
    "Record a mention of an idea detected on another platform (a Slack thread, a support "
    "ticket, a call): the idea's signal count, sources, last signal time and average sentiment "
    "follow. Without `sentiment` and `sentimentScore`, both are computed from `content`. A "
    "`userEmail` of a customer (or of a customer's company domain) links that customer to the "
    "idea. Fires `idea.signal_detected` webhooks.",
    path_input="ideaId",
    idea_inputs=("ideaId",),
    inputs=(
        "platform",
        "content",
        "userId",
        "userName",
        "userEmail",
        "sentiment",
        "sentimentScore",
        "similarity",
        "detectedAt",
    ),
    descriptions={
        "ideaId": IDEA_REF,
        "platform": "Where it was detected, e.g. `slack` or `zendesk` (1 to 50 characters).",
        "content": "What was said (at most 10,000 characters).",
        "userId": "Id of the person on that platform.",
        "userName": "Name of the person.",
        "userEmail": "E-mail of the person.",
        "sentiment": "`positive`, `neutral` or `negative`.",
        "sentimentScore": "Sentiment from -1 to 1.",
        "similarity": "Similarity of the mention to the idea, 0 to 1 (default 1).",
        "detectedAt": "When the mention happened (RFC 3339, not in the future); now when absent.",
    },
)
VOTE_IDEA = Tool(
    "vote_idea",
    "Vote for (1) or against (-1) an idea. One vote per voter per idea: a second vote replaces "
    "the first. `voter` defaults to the API key. Returns the idea's new vote count.",
    path_input="id",
    idea_inputs=("id",),
    inputs=("value", "voter"),
    descriptions={
        "id": IDEA_REF,
        "value": "1 (for) or -1 (against).",
        "voter": "Who votes, e.g. an e-mail address; the API key when omitted.",
    },
)
LIST_ROADMAP_STAGES = Tool(
    "list_roadmap_stages",
    "List the workspace's roadmap stages (e.g. Now, Next, Later) in their order.",
    key="stages",
)

# The duplicates routes of docs/ideas.md (merge; similar ideas: libs/api/similar/routes.py).
MERGE_IDEAS = Tool(
    "merge_ideas",
    "Merge a duplicate idea into its primary: the duplicate becomes `duplicate`, its votes, "
    "signals and customer links move to the primary. Both ideas are returned.",
    path_input="duplicateId",
    idea_inputs=("duplicateId", "intoId"),
    inputs=("intoId",),
    descriptions={
        "duplicateId": "The duplicate: its uuid or its `IDEA-<n>` id.",
        "intoId": "The primary it merges into: its uuid or its `IDEA-<n>` id.",
    },
)
ROUTES = [
    Route(
        "GET",
        IDEAS_PATH,
        SERVICE,
        "list_ideas",
        "ideas:read",
        "List ideas",
        query=requests.ListIdeasQuery,
        responses={200: envelopes.IdeaPage},
        tags=("Ideas",),
        tool=SEARCH_IDEAS,
        description="Keyset pages of ideas, newest first by default. Deleted ideas are left out"
        " unless `status=deleted`. Filters combine with AND; `pagination.total` "
        "counts every idea matching them.",
    ),
    Route(
        "POST",
        IDEAS_PATH,
        SERVICE,
        "create_idea",
        "ideas:write",
        "Create an idea",
        body=requests.CreateIdeaRequest,
        responses={200: envelopes.IdeaResponse},
        tags=("Ideas",),
        tool=CREATE_IDEA,
        description="The idea gets the next `IDEA-<n>` id and status `new` (`captured` when the"
        " workspace's inbox mode is `review`). `tagIds` puts tags of the workspace on it, "
        "`productId` a product and `decisionOwnerId` a member as decision owner (an unknown "
        "tag, product or member: 404, and nothing is created). Emits `idea.created`.",
    ),
    Route(
        "POST",
        f"{IDEAS_PATH}/batch",
        SERVICE,
        "batch_create_ideas",
        "ideas:write",
        "Create up to 100 ideas in one transaction",
        body=requests.BatchCreateRequest,
        responses={200: envelopes.BatchCreateResponse},
        tags=("Ideas",),
        description="All or nothing: one invalid idea fails the call with the field named "
        "(`ideas[3].title`) and creates none. The answer lists the new ideas in "
        "request order. Emits `idea.created` for each.",
    ),
    Route(
        "PATCH",
        f"{IDEAS_PATH}/batch/status",
        SERVICE,
        "batch_update_status",
        "ideas:write",
        "Change the status of up to 100 ideas in one transaction",
        body=requests.BatchStatusRequest,
        responses={200: envelopes.BatchStatusResponse},
        tags=("Ideas",),
        description="All or nothing: an id not in the workspace answers 404 and changes none. "
        "Each change appends a Decision and emits `idea.status_changed` (and "
        "`idea.deleted` for `deleted`).",
    ),
    Route(
        "GET",
        f"{IDEAS_PATH}/{{id}}",
        SERVICE,
        "get_idea",
        "ideas:read",
        "Get an idea",
        responses={200: envelopes.IdeaDetailResponse},
        tags=("Ideas",),
        tool=GET_IDEA,
        description="The idea with its tags, work item and original input. A deleted idea is "
        "still returned, with status `deleted`.",
    ),
    Route(
        "PATCH",
        f"{IDEAS_PATH}/{{id}}",
        SERVICE,
        "update_idea",
        "ideas:write",
        "Update an idea",
        body=requests.UpdateIdeaRequest,
        responses={200: envelopes.IdeaDetailResponse},
        tags=("Ideas",),
        tool=UPDATE_IDEA,
        description="Omitted fields stay unchanged. A status change appends a Decision (with "
        "`decisionReason` as its reason); a change to `shipped`, `rejected`, "
        "`duplicate` or `archived` sets `decidedAt` and `closureCategory`. Setting "
        "a RICE field recomputes `rice.score` and emits `idea.scored`. Emits "
        "`idea.updated`, and `idea.status_changed` when the status changed. `tagIds` "
        "replaces the idea's tags; `decisionOwnerId` sets `decisionOwnerName` (and the e-mail "
        "the `decision_owner` filter compares) from the member, null clears both; an unknown "
        "tag, product or member: 404, and nothing changes. `closureCategory` replaces the "
        "derived category, and only comes with a change of status to `shipped`, `rejected`, "
        "`duplicate` or `archived` (else 400 on `closureCategory`).",
    ),
    Route(
        "DELETE",
        f"{IDEAS_PATH}/{{id}}",
        SERVICE,
        "delete_idea",
        "ideas:write",
        "Soft-delete an idea",
        responses={200: envelopes.IdeaDeletedResponse},
        tags=("Ideas",),
        description="Sets status `deleted` and keeps the record; idempotent. Emits "
        "`idea.status_changed` and `idea.deleted`.",
    ),
    Route(
        "POST",
        f"{IDEAS_PATH}/{{id}}/vote",
        SERVICE,
        "vote_idea",
        "ideas:vote",
        "Vote on an idea",
        body=requests.VoteRequest,
        body_required=False,
        responses={200: envelopes.VoteResultResponse},
        tags=("Ideas",),
        tool=VOTE_IDEA,
        description="One vote per voter per idea: a second vote replaces the first. Without a "
        "body, an upvote by the key (`key:<keyId>`). Emits `idea.voted`.",
    ),
    Route(
        "DELETE",
        f"{IDEAS_PATH}/{{id}}/vote",
        SERVICE,
        "unvote_idea",
        "ideas:vote",
        "Remove a vote from an idea",
        query=requests.UnvoteQuery,
        responses={200: envelopes.VoteResultResponse},
        tags=("Ideas",),
        description="Removes the vote of `voter` (`key:<keyId>` when absent, as for a vote); "
        "the answer has `value` 0 and the idea's new `voteCount`. A voter without a vote on "
        "the idea: 404 `not_found`. Emits `idea.voted` with `value` 0.",
    ),
    Route(
        "GET",
        f"{IDEAS_PATH}/{{id}}/votes",
        SERVICE,
        "get_votes",
        "ideas:read",
        "Vote breakdown",
        responses={200: envelopes.VoteBreakdownResponse},
        tags=("Ideas",),
        description="Up- and downvotes, and the 1,000 most recent votes.",
    ),
    Route(
        "GET",
        f"{IDEAS_PATH}/{{id}}/signals",
        SERVICE,
        "list_signals",
        "ideas:read",
        "Signals of an idea",
        query=requests.PageQuery,
        responses={200: envelopes.SignalPage},
        tags=("Ideas",),
        description="Mentions of the idea detected on other platforms, newest first.",
    ),
    Route(
        "POST",
        f"{IDEAS_PATH}/{{id}}/signals",
        SERVICE,
        "create_signal",
        "ideas:write",
        "Record a signal on an idea",
        body=requests.CreateSignalRequest,
        responses={200: envelopes.SignalResponse},
        tags=("Ideas",),
        tool=RECORD_SIGNAL,
        description="In one transaction with the signal, the idea's `signalCount` rises by one, "
        "`lastSignalAt` becomes the latest `detectedAt`, `uniqueSourceCount` the number of "
        "distinct platforms and `averageSentiment` the mean `sentimentScore` of its signals "
        "(nulls skipped). With `content` and neither `sentiment` nor `sentimentScore`, both are "
        "computed from the text; when only one is given, the other stays null. A `detectedAt` "
        "in the future is 400. A `userEmail` that is a customer's e-mail (ignoring case), or "
        "else whose domain is exactly one customer's `domain` and not a public mail domain, "
        "sets `autoLinkedCustomerId` and links that customer to the idea (`totalCustomerARR` "
        "follows within a second). Emits `idea.signal_detected`.",
    ),
    Route(
        "DELETE",
        f"{IDEAS_PATH}/{{id}}/signals/{{signalId}}",
        SERVICE,
        "delete_signal",
        "ideas:write",
        "Delete a signal of an idea",
        responses={200: envelopes.SignalDeletedResponse},
        tags=("Ideas",),
        description="The idea's `signalCount`, `lastSignalAt`, `uniqueSourceCount` and "
        "`averageSentiment` take the signal's part back in the same transaction. A signal "
        "that is not the idea's: 404 `not_found`.",
    ),
    Route(
        "GET",
        f"{IDEAS_PATH}/{{id}}/decisions",
        SERVICE,
        "list_decisions",
        "ideas:read",
        "Decision history of an idea (oldest first)",
        query=requests.PageQuery,
        responses={200: envelopes.DecisionPage},
        tags=("Ideas",),
        description="Every status change and closure of the idea, oldest first.",
    ),
    Route(
        "GET",
        f"{IDEAS_PATH}/{{id}}/evidence",
        SERVICE,
        "list_evidence",
        "ideas:read",
        "Evidence of an idea",
        responses={200: envelopes.EvidenceList},
        tags=("Ideas",),
        description="Documents, screenshots, issues, links and quotes that back the idea.",
    ),
    Route(
        "GET",
        f"{IDEAS_PATH}/{{id}}/participants",
        SERVICE,
        "list_participants",
        "ideas:read",
        "Decision participants of an idea",
        responses={200: envelopes.ParticipantList},
        tags=("Ideas",),
        description="Owners, approvers and reviewers of the decision, with their verdicts.",
    ),
    Route(
        "GET",
        f"{IDEAS_PATH}/{{id}}/meetings",
        SERVICE,
        "list_meetings",
        "ideas:read",
        "Meeting transcripts mentioning an idea",
        responses={200: envelopes.MeetingList},
        tags=("Ideas",),
        description="Meetings whose transcripts mention the idea or that it was extracted from.",
    ),
    Route(
        "GET",
        f"{IDEAS_PATH}/{{id}}/support-tickets",
        SERVICE,
        "list_support_tickets",
        "ideas:read",
        "Support tickets linked to an idea",
        responses={200: envelopes.SupportTicketList},
        tags=("Ideas",),
        description="Help desk tickets linked to the idea.",
    ),
    *evidence.ROUTES,
    *comments.ROUTES,
    Route(
        "POST",
        f"{IDEAS_PATH}/{{id}}/merge",
        SERVICE,
        "merge_idea",
        "ideas:write",
        "Merge a duplicate idea into its primary",
        body=requests.MergeRequest,
        responses={200: envelopes.MergeResponse},
        tags=("Ideas",),
        tool=MERGE_IDEAS,
        description="`{id}` is the duplicate, `intoId` the primary. In one transaction the "
        "duplicate gets status `duplicate`, `mergedIntoId` and one Decision "
        "(`eventType` `merged`); its votes move to the primary (a voter with votes "
        "on both keeps the primary's: every voter counts once), its signals move, "
        "its `publicVoteCount` and `requestCount` are added to the primary's. Every"
        " customer linked to the duplicate becomes linked to the primary too (the "
        "primary's `totalCustomerARR` follows within a second). `intoId` equal to "
        "`{id}` answers 400; either idea deleted, the duplicate already merged or "
        "the primary merged into another idea answers 409. Emits `idea.updated` and"
        " `idea.status_changed` for the duplicate, `idea.updated` for the primary.",
    ),
    Route(
        "POST",
        f"{IDEAS_PATH}/{{id}}/unmerge",
        SERVICE,
        "unmerge_idea",
        "ideas:write",
        "Undo the merge of a duplicate idea",
        responses={200: envelopes.MergeResponse},
        tags=("Ideas",),
        description="The exact inverse of the merge: the duplicate gets back its status, "
        "`decidedAt`, `closureCategory`, votes and signals, and a Decision "
        "(`eventType` `unmerged`); the primary loses the votes, signals, counts and"
        " customer links the merge added (a voter who voted on the primary since "
        "keeps that vote; links made directly stay). 409 when the idea is not "
        "merged or its primary is now merged into another idea. Emits as a merge.",
    ),
    Route(
        "PUT",
        f"{IDEAS_PATH}/{{id}}/roadmap",
        SERVICE,
        "assign_roadmap",
        "roadmap:write",
        "Assign an idea to a roadmap stage (or unassign it)",
        body=requests.RoadmapAssignRequest,
        responses={200: envelopes.RoadmapAssignmentResponse},
        tags=("Roadmap",),
        description="`stageId` null takes the idea off the roadmap. An unknown stage answers "
        "404. Emits `idea.assigned`.",
    ),
    Route(
        "GET",
        f"{API}/roadmap/stages",
        SERVICE,
        "list_stages",
        "roadmap:read",
        "Roadmap stages",
        responses={200: envelopes.RoadmapStageList},
        tags=("Roadmap",),
        tool=LIST_ROADMAP_STAGES,
        description="The workspace's stages with their idea counts; a new workspace has `Now` "
        "(the default), `Next` and `Later`.",
    ),
    Route(
        "POST",
        f"{API}/roadmap/stages",
        SERVICE,
        "create_stage",
        "roadmap:write",
        "Add a roadmap stage",
        body=stages.CreateStageRequest,
        responses={200: stages.RoadmapStageResponse},
        tags=("Roadmap",),
        description="The slug is unique in the workspace (409 `conflict`); without one it is "
        "made from the name. The stage goes to `position` (the stages from there on move one "
        "down) or, absent or past the end, last: positions stay 0, 1, 2, ... in list order.",
    ),
    Route(
        "PATCH",
        f"{API}/roadmap/stages/{{id}}",
        SERVICE,
        "update_stage",
        "roadmap:write",
        "Rename, move or make default a roadmap stage",
        body=stages.UpdateStageRequest,
        responses={200: stages.RoadmapStageResponse},
        tags=("Roadmap",),
        description="Omitted fields stay unchanged. `position` moves the stage there (past the "
        "end: last), the others close up around it; `isDefault: true` makes it the default "
        "and the previous default not. A slug another stage has is 409 `conflict`.",
    ),
    Route(
        "DELETE",
        f"{API}/roadmap/stages/{{id}}",
        SERVICE,
        "delete_stage",
        "roadmap:write",
        "Delete a roadmap stage",
        responses={200: stages.StageDeletedResponse},
        tags=("Roadmap",),
        description="Its ideas go off the roadmap (`roadmapStageId` null), each emitting "
        "`idea.assigned` with `previousRoadmapStageId`; `unstaged` counts them. The stages "
        "after it move up. The default stage, or the workspace's last stage, is 409 `conflict`.",
    ),
    Route(
        "GET",
        f"{API}/workspace",
        SERVICE,
        "get_workspace",
        "workspace:read",
        "Workspace info",
        responses={200: envelopes.WorkspaceInfoResponse},
        tags=("Workspace",),
        description="The key's workspace: plan, inbox mode and idea counts.",
    ),
    Route(
        "GET",
        f"{API}/tags",
        SERVICE,
        "list_tags",
        "workspace:read",
        "Tags with idea counts",
        responses={200: envelopes.TagList},
        tags=("Workspace",),
        description="Every tag of the workspace with the number of ideas that carry it.",
    ),
    Route(
        "POST",
        f"{API}/tags",
        SERVICE,
        "create_tag",
        "workspace:write",
        "Create a tag",
        body=requests.CreateTagRequest,
        responses={200: envelopes.TagResponse},
        tags=("Workspace",),
        description="A tag's name is unique in the workspace, ignoring case: a second one is "
        "409 `conflict`.",
    ),
    Route(
        "PATCH",
        f"{API}/tags/{{id}}",
        SERVICE,
        "update_tag",
        "workspace:write",
        "Rename or recolour a tag",
        body=requests.UpdateTagRequest,
        responses={200: envelopes.TagResponse},
        tags=("Workspace",),
        description="Omitted fields stay unchanged. A name another tag of the workspace has "
        "(ignoring case) is 409 `conflict`.",
    ),
    Route(
        "DELETE",
        f"{API}/tags/{{id}}",
        SERVICE,
        "delete_tag",
        "workspace:write",
        "Delete a tag",
        responses={200: envelopes.TagDeletedResponse},
        tags=("Workspace",),
        description="The tag is removed from every idea that carried it, then deleted.",
    ),
    Route(
        "GET",
        f"{API}/products",
        SERVICE,
        "list_products",
        "workspace:read",
        "Products with idea counts and parents",
        responses={200: envelopes.ProductList},
        tags=("Workspace",),
        description="Every product of the workspace with its parent and idea count.",
    ),
    Route(
        "POST",
        f"{API}/products",
        SERVICE,
        "create_product",
        "workspace:write",
        "Create a product",
        body=requests.CreateProductRequest,
        responses={200: envelopes.ProductResponse},
        tags=("Workspace",),
        description="`parentId` nests it under another product of the workspace (unknown or "
        "another workspace's: 404 `not_found`).",
    ),
    Route(
        "PATCH",
        f"{API}/products/{{id}}",
        SERVICE,
        "update_product",
        "workspace:write",
        "Rename or move a product",
        body=requests.UpdateProductRequest,
        responses={200: envelopes.ProductResponse},
        tags=("Workspace",),
        description="Omitted fields stay unchanged. A `parentId` that would make the product "
        "its own ancestor: 400 on `parentId`; an unknown one: 404 `not_found`.",
    ),
    Route(
        "DELETE",
        f"{API}/products/{{id}}",
        SERVICE,
        "delete_product",
        "workspace:write",
        "Delete a product",
        responses={200: envelopes.ProductDeletedResponse},
        tags=("Workspace",),
        description="A product with child products: 409 `conflict`. Otherwise its ideas get "
        "`productId` null (each emits `idea.updated`) and the product is deleted.",
    ),
    Route(
        "GET",
        f"{API}/members",
        SERVICE,
        "list_members",
        "workspace:read",
        "Team members",
        responses={200: envelopes.MemberList},
        tags=("Workspace",),
        description="The workspace's team with roles and dashboard access.",
    ),
    Route(
        "POST",
        f"{API}/members",
        SERVICE,
        "create_member",
        "workspace:write",
        "Add a team member",
        body=requests.CreateMemberRequest,
        responses={200: envelopes.MemberResponse},
        tags=("Workspace",),
        description="A member's e-mail is unique in the workspace, ignoring case: a second "
        "one is 409 `conflict`. `lastActiveAt` is null until the member acts.",
    ),
    Route(
        "PATCH",
        f"{API}/members/{{id}}",
        SERVICE,
        "update_member",
        "workspace:write",
        "Change a team member",
        body=requests.UpdateMemberRequest,
        responses={200: envelopes.MemberResponse},
        tags=("Workspace",),
        description="Omitted fields stay unchanged. An e-mail another member has (ignoring "
        "case) is 409 `conflict`; so is demoting the workspace's last `owner`. A new name or "
        "e-mail also becomes the decision owner's on the ideas the member owns (each emits "
        "`idea.updated`).",
    ),
    Route(
        "DELETE",
        f"{API}/members/{{id}}",
        SERVICE,
        "delete_member",
        "workspace:write",
        "Remove a team member",
        responses={200: envelopes.MemberDeletedResponse},
        tags=("Workspace",),
        description="Removing the workspace's last `owner` is 409 `conflict`. Ideas the "
        "member owned keep `decisionOwnerName` (the record of who owned the decision).",
    ),
    Route(
        "GET",
        f"{API}/automation/ideas",
        SERVICE,
        "automation_list_ideas",
        "ideas:read",
        "Recent ideas (automation API)",
        query=requests.AutomationListQuery,
        responses={200: list[models.AutomationIdea]},
        automation=True,
        tags=("Automation",),
        description="The newest ideas, newest first, in the automation API's short form (for "
        "polling triggers).",
    ),
    Route(
        "POST",
        f"{API}/automation/ideas",
        SERVICE,
        "automation_create_idea",
        "ideas:write",
        "Create an idea with duplicate detection (automation API)",
        body=requests.AutomationCreateIdea,
        responses={201: models.AutomationCreated, 200: models.AutomationSkipped},
        automation=True,
        success_status=201,
        tags=("Automation",),
        description="201 with the new idea, or 200 `skipped` when it duplicates an existing one"
        " (same normalised `url`, else the same title within 30 days, else, without a `url`,"
        " the idea closest in meaning when close enough): the "
        "duplicate is recorded as a Signal on that idea instead and emits "
        "`idea.signal_detected`. Counts towards the plan's monthly automation quota"
        " (403 `limit_exceeded` when reached); skipped ideas do not. Once the quota is reached,"
        " only the `url` and title rules are checked: a request only the meaning rule would"
        " have matched is refused like any new idea.",
    ),
]
