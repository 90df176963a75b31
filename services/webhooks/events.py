"""The `webhooks` consumer: each (event, matching active subscription) becomes a delivery row.

It runs inside the consumer's transaction, which also records the event id, so a redelivered
event adds nothing (and the unique (subscription_id, event_id) pair guards the same). The rows
commit before the message is acked: from then on the database owns the schedule.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import aiopg
import orjson

from . import store
from . import subscriptions as subs
from .targets import host_key

JSON_OPTS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS
Handler = Callable[[aiopg.Cursor, dict[str, Any]], Awaitable[None]]


def new_idea_payload(event: dict[str, Any]) -> bytes:
    """The automation API's `new_idea` body, taken from the Idea in an `idea.created` event."""
    data = event.get("data") or {}
    idea = data.get("idea") or {}
    payload: dict[str, Any] = {
        "id": idea.get("id"),
        "title": idea.get("title") or "",
        "summary": idea.get("summary") or "",
        "source": idea.get("source") or "api",
        "authorName": _first(idea, data, "authorName") or "",
        "createdAt": idea.get("createdAt") or event.get("createdAt"),
    }
    # The optional fields appear only when the idea has them.
    for name in ("authorAvatar", "url", "category"):
        value = _first(idea, data, name)
        if value:
            payload[name] = value
    return orjson.dumps(payload, option=JSON_OPTS)


def _first(idea: dict[str, Any], data: dict[str, Any], name: str) -> Any:
    return idea.get(name) if idea.get(name) is not None else data.get(name)


def make_handler(first_delay_s: float) -> Handler:
    async def on_event(cur: aiopg.Cursor, event: dict[str, Any]) -> None:
        event_type = str(event.get("type"))
        targets = await subs.matching(cur, str(event.get("workspaceId")), event_type)
        if not targets:
            return
        # The queue's message body is the delivery body (CONTRACT section 6); it is
        # serialized once here and those exact bytes are signed and sent on every attempt.
        main_body = orjson.dumps(event, option=JSON_OPTS)
        hook_body = new_idea_payload(event) if event_type == "idea.created" else b""
        rows = []
        for t in targets:
            is_hook = t["kind"] == subs.AUTOMATION
            rows.append(store.NewDelivery(
                id=uuid.uuid4(), subscription_id=t["id"],
                event_type=subs.NEW_IDEA if is_hook else event_type,
                target_host=host_key(t["target_url"]),
                body=hook_body if is_hook else main_body))
        await store.insert_deliveries(cur, event["workspaceId"], event["id"], rows,
                                      first_delay_s)

    return on_event
