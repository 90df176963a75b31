"""Handlers of an idea's signal writes (signals.py); mounted through `views.py`, named by the
route table's operation ids."""

from __future__ import annotations

from aiohttp import web

from libs.api.ideas.requests import CreateSignalRequest
from libs.common import db
from libs.common.validation import parse_body, path_uuid
from libs.common.web import PG_POOL, caller, data_response

from . import sentiment, signals
from .render import fragment


async def create_signal(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    body = await parse_body(request, CreateSignalRequest)
    label: str | None = body.sentiment
    score = body.sentimentScore
    if label is None and score is None and body.content:
        # Scored before the transaction opens: no row lock waits on the analyzer.
        label, score = await sentiment.analyze(body.content)
    async with db.transaction(request.app[PG_POOL]) as cur:
        signal = await signals.create(cur, who, idea_id, body, label, score)
    return data_response(fragment(signal))


async def delete_signal(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    signal_id = path_uuid(request, "signalId")
    async with db.transaction(request.app[PG_POOL]) as cur:
        return data_response(await signals.delete(cur, who, idea_id, signal_id))
