"""Handlers of an idea's evidence, support tickets, meetings and participants writes; mounted
through `views.py`, named by the route table's operation ids. Each write locks the idea, writes
the idea's columns it changes (evidence count, decision owner) and emits `idea.updated`, all in
one transaction."""

from __future__ import annotations

import uuid
from typing import Any

import aiopg
from aiohttp import web

from libs.api.ideas.evidence import (
    CreateEvidenceRequest,
    CreateMeetingRequest,
    CreateParticipantRequest,
    CreateSupportTicketRequest,
    UpdateParticipantRequest,
)
from libs.common import db
from libs.common.caller import Caller
from libs.common.validation import parse_body, path_uuid
from libs.common.web import PG_POOL, caller, data_response

from . import evidence, ops, store
from .render import fragment


async def _updated(
    cur: aiopg.Cursor, who: Caller, idea_id: uuid.UUID, sets: dict[str, Any]
) -> None:
    """The idea's columns the write changes, its activity time, and `idea.updated`."""
    idea, _ = await store.write_idea(cur, who.workspace_id, idea_id, sets)
    await ops.emit(cur, who, "idea.updated", idea)


def _deleted(row_id: uuid.UUID) -> web.Response:
    return data_response({"id": row_id, "deleted": True})


async def create_evidence(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    body = await parse_body(request, CreateEvidenceRequest)
    async with db.transaction(request.app[PG_POOL]) as cur:
        await store.lock_ideas(cur, who.workspace_id, [idea_id])
        item, sets = await evidence.add_evidence(
            cur, who.workspace_id, idea_id, body.type, body.title, body.url, body.content
        )
        await _updated(cur, who, idea_id, sets)
    return data_response(fragment(item))


async def delete_evidence(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    row_id = path_uuid(request, "evidenceId")
    async with db.transaction(request.app[PG_POOL]) as cur:
        await store.lock_ideas(cur, who.workspace_id, [idea_id])
        sets = await evidence.delete_evidence(cur, who.workspace_id, idea_id, row_id)
        await _updated(cur, who, idea_id, sets)
    return _deleted(row_id)


async def create_support_ticket(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    body = await parse_body(request, CreateSupportTicketRequest)
    fields = body.model_dump(include=body.model_fields_set - {"platform", "externalId"})
    async with db.transaction(request.app[PG_POOL]) as cur:
        await store.lock_ideas(cur, who.workspace_id, [idea_id])
        item = await evidence.upsert_ticket(
            cur, who.workspace_id, idea_id, body.platform, body.externalId, fields
        )
        await _updated(cur, who, idea_id, {})
    return data_response(fragment(item))


async def delete_support_ticket(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    row_id = path_uuid(request, "ticketId")
    async with db.transaction(request.app[PG_POOL]) as cur:
        await store.lock_ideas(cur, who.workspace_id, [idea_id])
        await evidence.delete_ticket(cur, who.workspace_id, idea_id, row_id)
        await _updated(cur, who, idea_id, {})
    return _deleted(row_id)


async def create_meeting(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    body = await parse_body(request, CreateMeetingRequest)
    async with db.transaction(request.app[PG_POOL]) as cur:
        await store.lock_ideas(cur, who.workspace_id, [idea_id])
        item = await evidence.add_meeting(
            cur,
            who.workspace_id,
            idea_id,
            body.title,
            body.meetingDate,
            body.participants,
            body.excerpt,
            body.relation,
            body.transcriptUrl,
        )
        await _updated(cur, who, idea_id, {})
    return data_response(fragment(item))


async def delete_meeting(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    row_id = path_uuid(request, "meetingId")
    async with db.transaction(request.app[PG_POOL]) as cur:
        await store.lock_ideas(cur, who.workspace_id, [idea_id])
        await evidence.delete_meeting(cur, who.workspace_id, idea_id, row_id)
        await _updated(cur, who, idea_id, {})
    return _deleted(row_id)


async def create_participant(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    body = await parse_body(request, CreateParticipantRequest)
    async with db.transaction(request.app[PG_POOL]) as cur:
        await store.lock_ideas(cur, who.workspace_id, [idea_id])
        item, sets = await evidence.add_participant(
            cur, who.workspace_id, idea_id, body.memberId, body.role
        )
        await _updated(cur, who, idea_id, sets)
    return data_response(fragment(item))


async def update_participant(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    row_id = path_uuid(request, "participantId")
    body = await parse_body(request, UpdateParticipantRequest)
    fields = body.model_dump(include=body.model_fields_set)
    async with db.transaction(request.app[PG_POOL]) as cur:
        await store.lock_ideas(cur, who.workspace_id, [idea_id])
        item, sets = await evidence.update_participant(
            cur, who.workspace_id, idea_id, row_id, fields
        )
        await _updated(cur, who, idea_id, sets)
    return data_response(fragment(item))


async def delete_participant(request: web.Request) -> web.Response:
    who, idea_id = caller(request), path_uuid(request)
    row_id = path_uuid(request, "participantId")
    async with db.transaction(request.app[PG_POOL]) as cur:
        await store.lock_ideas(cur, who.workspace_id, [idea_id])
        sets = await evidence.delete_participant(cur, who.workspace_id, idea_id, row_id)
        await _updated(cur, who, idea_id, sets)
    return _deleted(row_id)
