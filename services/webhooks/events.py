"""What an event becomes on the wire: the automation `new_idea` payload and its author."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import aiohttp
import orjson
import structlog

from libs.common.caller import Caller
from libs.common.render import dumps
from libs.common.settings import Settings


log = structlog.get_logger("webhooks.events")


def new_idea_payload(event: dict[str, Any], author: str | None = None) -> bytes:
    """The automation API's `new_idea` body, taken from the Idea in an `idea.created` event;
    its fields in the spec's order, the optional ones only when the idea has them."""
    data = event.get("data") or {}
    idea = data.get("idea") or {}
    payload: dict[str, Any] = {
        "id": idea.get("id"),
        "title": idea.get("title") or "",
        "summary": idea.get("summary") or "",
        "source": idea.get("source") or "api",
        "authorName": _first(idea, data, "authorName") or author or "",
    }
    for name in ("authorAvatar", "url", "category"):
        value = _first(idea, data, name)
        if value:
            payload[name] = value
    # The Idea's createdAt is already in the one form; so is the event's.
    payload["createdAt"] = idea.get("createdAt") or event.get("createdAt")
    return dumps(payload)


def _first(idea: dict[str, Any], data: dict[str, Any], name: str) -> Any:
    return idea.get(name) if idea.get(name) is not None else data.get(name)


async def author_of(session: aiohttp.ClientSession, settings: Settings,
                    event: dict[str, Any]) -> str | None:
    """The idea's author as the ideas service keeps it (IdeaDetail's `sourceUserName`).

    The Idea in the event does not carry it. A failed look-up leaves the name empty rather
    than holding the event back from every other subscriber."""
    idea = (event.get("data") or {}).get("idea") or {}
    if idea.get("authorName") is not None or not idea.get("id"):
        return None
    who = Caller(uuid.UUID(str(event["workspaceId"])), "", "", "direct", None, "webhooks",
                 frozenset({"ideas:read"}), str(event.get("id")))
    url = f"{settings.ideas_urls[0]}/api/v1/ideas/{idea['id']}"
    try:
        async with session.get(url, headers=who.headers(settings.internal_token),
                               timeout=aiohttp.ClientTimeout(total=2)) as resp:
            if resp.status != 200:
                raise aiohttp.ClientError(f"ideas answered {resp.status}")
            name = orjson.loads(await resp.read())["data"].get("sourceUserName")
            return str(name) if name is not None else None
    except (aiohttp.ClientError, asyncio.TimeoutError, KeyError, ValueError) as err:
        log.warning("author_lookup_failed", idea_id=idea.get("id"), error=repr(err))
        return None
