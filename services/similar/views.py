"""HTTP handlers of the similar service, named by the route table's operation ids."""

from __future__ import annotations

from aiohttp import web

from libs.api.ideas.requests import SimilarQuery, SimilarRequest
from libs.common.validation import parse_body, parse_query, path_uuid
from libs.common.web import PEERS, caller, data_response

from .index import SIMILAR, render


async def similar_to_idea(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    q = parse_query(request, SimilarQuery)
    similar, peers = request.app[SIMILAR], request.app[PEERS]
    vector, text = await similar.idea_vector(peers, who, idea_id)
    hits = await similar.nearest(
        who.workspace_id, vector, q.limit, q.min_similarity, exclude=idea_id, text=text
    )
    return data_response(await render(peers, who, hits, q.limit))


async def similar_ideas(request: web.Request) -> web.Response:
    who, body = caller(request), await parse_body(request, SimilarRequest)
    similar, peers = request.app[SIMILAR], request.app[PEERS]
    text = similar.text(body.title, body.summary)
    vector = await similar.embed(who.workspace_id, text)
    hits = await similar.nearest(
        who.workspace_id, vector, body.limit, body.minSimilarity, text=text
    )
    return data_response(await render(peers, who, hits, body.limit))
