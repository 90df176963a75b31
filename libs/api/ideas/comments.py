"""An idea's comments: requests, envelopes, the `add_comment` tool and the routes
(docs/ideas.md, "Comments")."""

from __future__ import annotations

from uuid import UUID

from pydantic import Field

from libs.api.base import data_of, example, page_of
from libs.api.route import API, Route, Tool
from libs.common.validation import Body

from . import examples as ex
from .requests import PageQuery
from .schemas import Comment, RecordDeleted

SERVICE = "ideas"
IDEAS_PATH = f"{API}/ideas"


class ListCommentsQuery(PageQuery):
    internal: bool | None = None
    """`true`: only internal comments; `false`: only the others; absent: all"""


class CreateCommentRequest(Body):
    """A new comment; `body` is required."""

    model_config = example(
        {
            "body": "Planned for next quarter; we will post here when it ships.",
            "internal": False,
            "parentId": ex.COMMENT_ID,
        }
    )

    body: str = Field(min_length=1, max_length=10000)
    """The text, 1 to 10,000 characters"""
    userId: UUID | None = None
    """The end user (`/users`) the comment is written for: its author; without it, the API
    key is the author"""
    internal: bool = False
    """An internal note for the team (default false): listed, delivered to webhooks, not
    counted in the idea's `commentCount`"""
    parentId: UUID | None = None
    """The top-level comment of the same idea this one replies to (replies go one level
    deep)"""


class UpdateCommentRequest(Body):
    """The comment's new text."""

    model_config = example({"body": "Planned for Q3; we will post here when it ships."})

    body: str = Field(min_length=1, max_length=10000)
    """The new text, 1 to 10,000 characters"""


CommentPage = page_of("CommentPage", Comment, "A page of an idea's comments, oldest first")
CommentResponse = data_of("CommentResponse", Comment, "A comment")
CommentDeletedResponse = data_of("CommentDeletedResponse", RecordDeleted, "The comment is deleted")

ADD_COMMENT = Tool(
    "add_comment",
    "Comment on an idea, e.g. to answer the people who asked for it or to leave a note for "
    "the team (`internal: true`, not counted in the idea's `commentCount`). With `userId` "
    "the comment is written for that end user, who becomes its author; otherwise the API key "
    "is. Fires `comment.created` webhooks.",
    path_input="ideaId",
    idea_inputs=("ideaId",),
    inputs=("body", "internal", "userId"),
    descriptions={
        "ideaId": "The idea: its uuid or its `IDEA-<n>` id.",
        "body": "The text (1 to 10,000 characters).",
        "internal": "An internal note for the team (default false).",
        "userId": "Id of the end user the comment is written for (a user of `/users`).",
    },
)

NOT_FOUND = "An unknown idea, or a comment that is not the idea's: 404 `not_found`."

ROUTES = [
    Route(
        "GET",
        f"{IDEAS_PATH}/{{id}}/comments",
        SERVICE,
        "list_comments",
        "ideas:read",
        "Comments of an idea (oldest first)",
        query=ListCommentsQuery,
        responses={200: CommentPage},
        tags=("Ideas",),
        description="Keyset pages of the idea's comments and replies together, oldest first "
        "(by `createdAt`, then `id`); a reply names its comment in `parentId`. `internal` "
        "keeps only internal comments (`true`) or only the others (`false`). A page costs the "
        "same however deep the cursor is, and comments written while a client pages never "
        "make it skip or repeat one.",
    ),
    Route(
        "POST",
        f"{IDEAS_PATH}/{{id}}/comments",
        SERVICE,
        "create_comment",
        "ideas:write",
        "Comment on an idea",
        body=CreateCommentRequest,
        responses={200: CommentResponse},
        tags=("Ideas",),
        tool=ADD_COMMENT,
        description='The author is the end user `userId` names (`{"type": "user"}`, an '
        'unknown user: 404 `not_found`), else the API key (`{"type": "key"}` with the '
        "key's id and name). `parentId` makes it a reply to a top-level comment of the same "
        "idea: a comment that is not the idea's is 404 `not_found`, a reply to a reply 400 "
        "`validation_error` on `parentId`. A comment that is not `internal` raises the idea's "
        "`commentCount` by one in the same transaction. A comment on a merged duplicate stays "
        "on the duplicate. Emits `comment.created`.",
    ),
    Route(
        "PATCH",
        f"{IDEAS_PATH}/{{id}}/comments/{{commentId}}",
        SERVICE,
        "update_comment",
        "ideas:write",
        "Edit a comment",
        body=UpdateCommentRequest,
        responses={200: CommentResponse},
        tags=("Ideas",),
        description="Replaces the comment's `body` and sets `updatedAt`. " + NOT_FOUND + " "
        "Emits `comment.updated`.",
    ),
    Route(
        "DELETE",
        f"{IDEAS_PATH}/{{id}}/comments/{{commentId}}",
        SERVICE,
        "delete_comment",
        "ideas:write",
        "Delete a comment",
        responses={200: CommentDeletedResponse},
        tags=("Ideas",),
        description="The comment goes; its replies stay, with their `parentId` kept. A comment "
        "that is not `internal` lowers the idea's `commentCount` by one in the same "
        "transaction. " + NOT_FOUND + " Emits `comment.deleted` with the comment as it was.",
    ),
]
