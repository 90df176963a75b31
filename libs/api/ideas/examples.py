"""Examples of the ideas service's resources and requests, as the document shows them.

They are data a real workspace could hold, consistent with each other (the idea of the vote is
the idea of the detail), and the OpenAPI lint checks each against its schema.
"""

from __future__ import annotations

from typing import Any

IDEA_ID = "3f1c2a9e-8b4d-4e61-9a57-0c2d5e7f8a91"
DUPLICATE_ID = "7a4e1b2c-5d6f-4a8b-9c0d-1e2f3a4b5c6d"
PRIMARY_ID = "5b8d2e4f-1a3c-4d6e-8f90-a1b2c3d4e5f6"
STAGE_ID = "8a6e0f4b-2c1d-4b7a-9e3f-5d2c1b0a9f87"
PRODUCT_ID = "c5d4e3f2-a1b0-4c9d-8e7f-6a5b4c3d2e1f"
TAG_ID = "5b7c9d1e-3f5a-4b7c-9d1e-3f5a7b9c1d3e"
MEMBER_ID = "4d5e6f7a-8b9c-4d0e-9f2a-3b4c5d6e7f8a"

IDEA: dict[str, Any] = {
    "id": IDEA_ID,
    "ideaServiceId": "IDEA-42",
    "title": "Dark mode for the dashboard",
    "summary": "Teams that work at night ask for a dark theme to reduce eye strain.",
    "status": "planned",
    "source": "slack",
    "category": "feature",
    "ideaType": "feature_request",
    "url": "https://acme.slack.com/archives/C024BE91L/p1741944413000100",
    "destination": None,
    "destinationIssueId": None,
    "destinationIssueUrl": None,
    "voteCount": 12,
    "publicVoteCount": 3,
    "requestCount": 5,
    "signalCount": 4,
    "rice": {
        "reach": 500,
        "impact": 2,
        "confidence": 0.8,
        "effort": 4,
        "score": 200,
        "priority": "high",
        "source": "manual",
    },
    "validation": {"score": 72, "evidenceCount": 3},
    "decisionReason": None,
    "decidedAt": None,
    "closureCategory": None,
    "decisionOwnerName": "Dana Lee",
    "decisionDeadline": "2025-04-30T00:00:00.000000Z",
    "totalCustomerARR": 120000,
    "lastActivityAt": "2025-03-14T09:26:53.589793Z",
    "lastSignalAt": "2025-03-12T16:02:11.104200Z",
    "uniqueSourceCount": 2,
    "averageSentiment": 0.4,
    "workItemStatus": None,
    "shippedAt": None,
    "productId": PRODUCT_ID,
    "actionable": True,
    "createdAt": "2025-03-01T10:15:00.000000Z",
    "roadmapStageId": STAGE_ID,
    "mergedIntoId": None,
    "commentCount": 2,
}

IDEA_DETAIL: dict[str, Any] = {
    **IDEA,
    "tags": [{"id": TAG_ID, "name": "ui", "color": "#6366f1"}],
    "externalWorkItem": None,
    "sourceUserId": "U024BE7LH",
    "sourceUserName": "Sam Ortiz",
    "rawInput": "Could we get a dark mode? The dashboard is blinding at night.",
}

SIGNAL: dict[str, Any] = {
    "id": "0e9d8c7b-6a59-4483-b2c1-d0e9f8a7b6c5",
    "platform": "zendesk",
    "userId": "48213",
    "userName": "Priya Shah",
    "userEmail": "priya@globex.example",
    "content": "Any plans for a dark theme? Our support team works night shifts.",
    "similarity": 0.91,
    "sentiment": "positive",
    "sentimentScore": 0.6,
    "autoLinkedCustomerId": None,
    "detectedAt": "2025-03-12T16:02:11.104200Z",
    "createdAt": "2025-03-12T16:02:11.104200Z",
}

COMMENT_ID = "2e4f6a8c-0b1d-4e3f-a5b7-c9d1e3f5a7b9"
USER_ID = "9c8b7a6f-5e4d-4c3b-a2f1-e0d9c8b7a6f5"
KEY_ID = "1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"

COMMENT: dict[str, Any] = {
    "id": COMMENT_ID,
    "ideaId": IDEA_ID,
    "body": "Our night shift would use this every day. Any news on timing?",
    "internal": False,
    "parentId": None,
    "author": {"type": "user", "id": USER_ID, "name": "Priya Shah"},
    "createdAt": "2025-03-13T11:20:05.312000Z",
    "updatedAt": None,
}

REPLY: dict[str, Any] = {
    "id": "3f5a7b9c-1d2e-4f3a-b5c7-d9e1f3a5b7c9",
    "ideaId": IDEA_ID,
    "body": "Planned for next quarter; we will post here when it ships.",
    "internal": False,
    "parentId": COMMENT_ID,
    "author": {"type": "key", "id": KEY_ID, "name": "Support desk"},
    "createdAt": "2025-03-13T14:02:44.020100Z",
    "updatedAt": "2025-03-13T14:05:10.000000Z",
}

DECISION: dict[str, Any] = {
    "id": "6c5b4a39-2817-4f6e-8d5c-4b3a29180f7e",
    "eventType": "status_changed",
    "closureCategory": None,
    "reason": "Top request from enterprise customers",
    "confidenceScore": None,
    "previousStatus": "under_review",
    "newStatus": "planned",
    "actorEmail": None,
    "actorName": "Zapier integration",
    "source": "api",
    "relatedIdeaId": None,
    "externalIssueId": None,
    "externalIssueUrl": None,
    "metadata": None,
    "createdAt": "2025-03-10T08:00:00.000000Z",
}

CREATE_IDEA: dict[str, Any] = {
    "title": "Dark mode for the dashboard",
    "summary": "Teams that work at night ask for a dark theme to reduce eye strain.",
    "source": "slack",
    "category": "feature",
    "url": "https://acme.slack.com/archives/C024BE91L/p1741944413000100",
}

UPDATE_IDEA: dict[str, Any] = {
    "status": "planned",
    "decisionReason": "Top request from enterprise customers",
    "riceReach": 500,
    "riceImpact": 2,
    "riceConfidence": 0.8,
    "riceEffort": 4,
    "decisionDeadline": "2025-04-30T17:00:00Z",
}
