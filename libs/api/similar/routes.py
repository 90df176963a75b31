"""The similar service's public routes (docs/similar.md): ideas similar in meaning, to an idea or
to a text. Served by `ims-similar`, which runs in Linux's idle scheduling class; their request
and answer models are the ideas' (libs/api/ideas)."""

from libs.api.ideas import envelopes, requests
from libs.api.ideas.routes import IDEAS_PATH
from libs.api.route import Route, Tool

SERVICE = "similar"

FIND_SIMILAR_IDEAS = Tool(
    "find_similar_ideas",
    "Find the workspace's ideas closest in meaning to a text (e.g. a request you are about to "
    "capture), most similar first, with a similarity from 0 to 1.",
    inputs=("text", "limit"),
    rename={"text": "title"},
    required=("text",),
    limit=(10, 50),
    key="results",
    descriptions={
        "text": "The text to compare, e.g. a title (1 to 500 characters).",
        "limit": "How many ideas (1 to 50).",
    },
)


ROUTES = [
    Route(
        "GET",
        f"{IDEAS_PATH}/{{id}}/similar",
        SERVICE,
        "similar_to_idea",
        "ideas:read",
        "Ideas similar in meaning to an idea",
        query=requests.SimilarQuery,
        responses={200: envelopes.SimilarIdeaList},
        low_priority=True,
        tags=("Ideas",),
        description="The workspace's ideas closest in meaning to this one's title and summary,"
        " as a language model running inside the service sees them, most similar "
        "first. `similarity` is the cosine similarity (a negative one reported as "
        "0). Left out: the idea itself, deleted ideas and merged duplicates. A "
        "created or changed idea is found within 2 seconds. Runs below the other routes' "
        "priority: while the gateway is busy with other requests, it waits for them, at "
        "most 100 ms by default.",
    ),
    Route(
        "POST",
        f"{IDEAS_PATH}/similar",
        SERVICE,
        "similar_ideas",
        "ideas:read",
        "Ideas similar in meaning to a text",
        body=requests.SimilarRequest,
        responses={200: envelopes.SimilarIdeaList},
        low_priority=True,
        read_only=True,
        tags=("Ideas",),
        tool=FIND_SIMILAR_IDEAS,
        description="As `GET /ideas/{id}/similar` for a text that is not an idea yet, e.g. "
        "to find a duplicate before capturing a request.",
    ),
]
