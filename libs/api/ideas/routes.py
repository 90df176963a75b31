"""The ideas service's public routes: the route table's entries for ideas, roadmap, workspace."""

from libs.api.route import API, Route, Tool

from . import requests as b
from . import envelopes as m
from . import schemas as models

S = "ideas"
I = f"{API}/ideas"
IDEA_REF = "The idea: its uuid or its `IDEA-<n>` id."

# MCP tools (docs/mcp.md), each beside the route it calls.
SEARCH_IDEAS = Tool(
    "search_ideas",
    "Search the workspace's ideas (deleted ones left out unless status is `deleted`). `query` "
    "matches every word in the title or summary, case-insensitive. Sort by `sort` in `order`; "
    "pass `nextCursor` back as `cursor` for the next page. `total` counts every match.",
    inputs=("query", "status", "sort", "order", "limit", "cursor"), rename={"query": "search"},
    limit=(10, 50), key="ideas", page=True,
    descriptions={"query": "Free text: every word must appear in the title or summary.",
                  "status": "Only ideas with this status.", "sort": "The sort key.",
                  "order": "Sort order.", "limit": "Ideas per page (1 to 50).",
                  "cursor": "`nextCursor` of the previous page, with the same other inputs."})
GET_IDEA = Tool(
    "get_idea",
    "Get one idea with its details (votes, RICE score, customers' ARR, roadmap stage, tags, "
    "decision) by its uuid or its `IDEA-<n>` id.",
    path_input="id", idea_inputs=("id",), descriptions={"id": IDEA_REF})
CREATE_IDEA = Tool(
    "create_idea",
    "Capture a new idea in the workspace. Returns the idea with its `IDEA-<n>` id. Fires "
    "`idea.created` webhooks.",
    inputs=("title", "summary", "category", "source"),
    descriptions={"title": "A short title (1 to 500 characters).",
                  "summary": "The idea in a few sentences.",
                  "category": "A free-form category, e.g. `feature` or `bug`.",
                  "source": "Where the idea came from; `api` when omitted."})
UPDATE_IDEA = Tool(
    "update_idea",
    "Change an idea: title, summary, category, status (with `decisionReason`) or RICE inputs "
    "(reach and impact >= 0, confidence 0 to 1, effort > 0). Give at least one field; `null` "
    "clears a nullable one. A status change is recorded as a decision.",
    path_input="id", idea_inputs=("id",),
    inputs=("title", "summary", "status", "category", "decisionReason", "riceReach",
            "riceImpact", "riceConfidence", "riceEffort"),
    descriptions={"id": IDEA_REF, "title": "New title.", "summary": "New summary.",
                  "status": "New status.", "category": "New category.",
                  "decisionReason": "Why the status changes; kept on the decision.",
                  "riceReach": "RICE reach (>= 0).", "riceImpact": "RICE impact (>= 0).",
                  "riceConfidence": "RICE confidence, a fraction from 0 to 1.",
                  "riceEffort": "RICE effort (> 0)."})
VOTE_IDEA = Tool(
    "vote_idea",
    "Vote for (1) or against (-1) an idea. One vote per voter per idea: a second vote replaces "
    "the first. `voter` defaults to the API key. Returns the idea's new vote count.",
    path_input="id", idea_inputs=("id",), inputs=("value", "voter"),
    descriptions={"id": IDEA_REF, "value": "1 (for) or -1 (against).",
                  "voter": "Who votes, e.g. an e-mail address; the API key when omitted."})
LIST_ROADMAP_STAGES = Tool(
    "list_roadmap_stages",
    "List the workspace's roadmap stages (e.g. Now, Next, Later) in their order.", key="stages")

# Ready for the duplicates routes of docs/ideas.md (merge, similar): give each as `tool=` to its
# route when the route is declared here, and it is served, listed and documented like the rest.
MERGE_IDEAS = Tool(
    "merge_ideas",
    "Merge a duplicate idea into its primary: the duplicate becomes `duplicate`, its votes, "
    "signals and customer links move to the primary. Both ideas are returned.",
    path_input="duplicateId", idea_inputs=("duplicateId", "intoId"), inputs=("intoId",),
    descriptions={"duplicateId": "The duplicate: its uuid or its `IDEA-<n>` id.",
                  "intoId": "The primary it merges into: its uuid or its `IDEA-<n>` id."})
FIND_SIMILAR_IDEAS = Tool(
    "find_similar_ideas",
    "Find the workspace's ideas closest in meaning to a text (e.g. a request you are about to "
    "capture), most similar first, with a similarity from 0 to 1.",
    inputs=("text", "limit"), rename={"text": "title"}, required=("text",), limit=(10, 50),
    key="results",
    descriptions={"text": "The text to compare, e.g. a title (1 to 500 characters).",
                  "limit": "How many ideas (1 to 50)."})

ROUTES = [
    Route("GET", I, S, "list_ideas", "ideas:read", "List ideas", query=b.ListIdeasQuery,
          responses={200: m.IdeaPage}, tags=("Ideas",), tool=SEARCH_IDEAS),
    Route("POST", I, S, "create_idea", "ideas:write", "Create an idea", body=b.CreateIdeaRequest,
          responses={200: m.IdeaResponse}, tags=("Ideas",), tool=CREATE_IDEA),
    Route("POST", f"{I}/batch", S, "batch_create_ideas", "ideas:write",
          "Create up to 100 ideas in one transaction", body=b.BatchCreateRequest,
          responses={200: m.BatchCreateResponse}, tags=("Ideas",)),
    Route("PATCH", f"{I}/batch/status", S, "batch_update_status", "ideas:write",
          "Change the status of up to 100 ideas in one transaction", body=b.BatchStatusRequest,
          responses={200: m.BatchStatusResponse}, tags=("Ideas",)),
    Route("GET", f"{I}/{{id}}", S, "get_idea", "ideas:read", "Get an idea",
          responses={200: m.IdeaDetailResponse}, tags=("Ideas",), tool=GET_IDEA),
    Route("PATCH", f"{I}/{{id}}", S, "update_idea", "ideas:write", "Update an idea",
          body=b.UpdateIdeaRequest, responses={200: m.IdeaDetailResponse}, tags=("Ideas",),
          tool=UPDATE_IDEA),
    Route("DELETE", f"{I}/{{id}}", S, "delete_idea", "ideas:write", "Soft-delete an idea",
          responses={200: m.IdeaDeletedResponse}, tags=("Ideas",)),
    Route("POST", f"{I}/{{id}}/vote", S, "vote_idea", "ideas:vote", "Vote on an idea",
          body=b.VoteRequest, body_required=False, responses={200: m.VoteResultResponse},
          tags=("Ideas",), tool=VOTE_IDEA),
    Route("GET", f"{I}/{{id}}/votes", S, "get_votes", "ideas:read", "Vote breakdown",
          responses={200: m.VoteBreakdownResponse}, tags=("Ideas",)),
    Route("GET", f"{I}/{{id}}/signals", S, "list_signals", "ideas:read", "Signals of an idea",
          query=b.PageQuery, responses={200: m.SignalPage}, tags=("Ideas",)),
    Route("GET", f"{I}/{{id}}/decisions", S, "list_decisions", "ideas:read",
          "Decision history of an idea (oldest first)", query=b.PageQuery,
          responses={200: m.DecisionPage}, tags=("Ideas",)),
    Route("GET", f"{I}/{{id}}/evidence", S, "list_evidence", "ideas:read", "Evidence of an idea",
          responses={200: m.EvidenceList}, tags=("Ideas",)),
    Route("GET", f"{I}/{{id}}/participants", S, "list_participants", "ideas:read",
          "Decision participants of an idea", responses={200: m.ParticipantList},
          tags=("Ideas",)),
    Route("GET", f"{I}/{{id}}/meetings", S, "list_meetings", "ideas:read",
          "Meeting transcripts mentioning an idea", responses={200: m.MeetingList},
          tags=("Ideas",)),
    Route("GET", f"{I}/{{id}}/support-tickets", S, "list_support_tickets", "ideas:read",
          "Support tickets linked to an idea", responses={200: m.SupportTicketList},
          tags=("Ideas",)),
    Route("PUT", f"{I}/{{id}}/roadmap", S, "assign_roadmap", "roadmap:write",
          "Assign an idea to a roadmap stage (or unassign it)", body=b.RoadmapAssignRequest,
          responses={200: m.RoadmapAssignmentResponse}, tags=("Roadmap",)),
    Route("GET", f"{API}/roadmap/stages", S, "list_stages", "roadmap:read", "Roadmap stages",
          responses={200: m.RoadmapStageList}, tags=("Roadmap",), tool=LIST_ROADMAP_STAGES),
    Route("GET", f"{API}/workspace", S, "get_workspace", "workspace:read", "Workspace info",
          responses={200: m.WorkspaceInfoResponse}, tags=("Workspace",)),
    Route("GET", f"{API}/tags", S, "list_tags", "workspace:read", "Tags with idea counts",
          responses={200: m.TagList}, tags=("Workspace",)),
    Route("GET", f"{API}/products", S, "list_products", "workspace:read",
          "Products with idea counts and parents", responses={200: m.ProductList},
          tags=("Workspace",)),
    Route("GET", f"{API}/members", S, "list_members", "workspace:read", "Team members",
          responses={200: m.MemberList}, tags=("Workspace",)),
    Route("GET", f"{API}/automation/ideas", S, "automation_list_ideas", "ideas:read",
          "Recent ideas (automation API)", query=b.AutomationListQuery,
          responses={200: list[models.AutomationIdea]}, automation=True, tags=("Automation",)),
    Route("POST", f"{API}/automation/ideas", S, "automation_create_idea", "ideas:write",
          "Create an idea with duplicate detection (automation API)",
          body=b.AutomationCreateIdea,
          responses={201: models.AutomationCreated, 200: models.AutomationSkipped}, automation=True,
          success_status=201, tags=("Automation",)),
]
