"""Handlers of an idea's signal writes (signals.py); mounted through `views.py`, named by the
route table's operation ids."""

from __future__ import annotations

import uuid

import aiopg
from aiohttp import web

from libs.api.ideas.requests import CreateSignalRequest
from libs.common import db
from libs.common.caller import Caller
from libs.common.messaging import add_event
from libs.common.validation import parse_body, path_uuid
from libs.common.web import PG_POOL, caller, data_response

from . import ops, sentiment, signals, store
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
        signal = await record(cur, who, idea_id, body, label, score)
    return data_response(fragment(signal))


async def delete_signal(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    signal_id = path_uuid(request, "signalId")
    async with db.transaction(request.app[PG_POOL]) as cur:
        return data_response(await signals.delete(cur, who, idea_id, signal_id))


async def record(
    cur: aiopg.Cursor,
    who: Caller,
    idea_id: uuid.UUID,
    body: CreateSignalRequest,
    label: str | None,
    score: float | None,
) -> str:
    """The new signal's JSON; the idea's figures follow and `idea.signal_detected` is emitted.
    A customer matched by the e-mail is asked to be linked (`signal.matched`)."""
    await store.lock_ideas(cur, who.workspace_id, [idea_id])
    item = signals.NewSignal(
        idea_id,
        body.platform,
        body.content,
        body.userId,
        body.userName,
        body.userEmail,
        body.similarity,
        label,
        score,
        body.detectedAt,
    )
    [signal], ideas = await signals.add(cur, who.workspace_id, [item], answer=True)
    await ops.emit(cur, who, "idea.signal_detected", ideas[idea_id], signal=fragment(signal))
    if item.customer_id is not None:
        # Internal: the customers service links the pair as POST /ideas/{id}/customers would
        # (no conflict when linked already); its link.created feeds totalCustomerARR.
        await add_event(
            cur,
            "ideas",
            "signal.matched",
            who.workspace_id,
            {"ideaId": str(idea_id), "customerId": str(item.customer_id)},
            who.request_id,
        )
    return signal
