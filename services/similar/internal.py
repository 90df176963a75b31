"""Internal routes for peer services (never in the public route table; the internal-token
middleware protects them): the automation rule's duplicates by meaning, which the ideas service
asks for before its creating transaction (docs/similar.md, "One number")."""

from __future__ import annotations

from aiohttp import web
from pydantic import Field

from libs.common.validation import Body, parse_body
from libs.common.web import caller, data_response

from .index import SIMILAR


class DuplicatesBody(Body):
    title: str = Field(min_length=1, max_length=500)
    summary: str | None = Field(default=None, max_length=5000)
    minSimilarity: float = Field(ge=0, le=1)
    limit: int = Field(default=10, ge=1, le=50)


async def internal_duplicates(request: web.Request) -> web.Response:
    """`{"data": [{"id", "similarity"}]}`: the ideas `POST /ideas/similar` answers for the title
    and summary, best first, at or above `minSimilarity`, with the similarity it answers; not
    rendered (the ideas service checks each against its own rows)."""
    who, body = caller(request), await parse_body(request, DuplicatesBody)
    found = await request.app[SIMILAR].candidates(
        who.workspace_id,
        request.app[SIMILAR].text(body.title, body.summary),
        body.limit,
        body.minSimilarity,
    )
    return data_response([{"id": str(i), "similarity": s} for i, s in found])


def setup_internal_routes(app: web.Application) -> None:
    app.router.add_post("/internal/similar/duplicates", internal_duplicates)
