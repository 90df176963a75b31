"""What an event becomes on the wire: the automation `new_idea` payload and its author."""

from __future__ import annotations

from typing import Any

from libs.api.webhooks.events import AUTHOR_HEADER
from libs.common.messaging import Event
from libs.common.render import dumps


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


def author_of(event: dict[str, Any]) -> str | None:
    """The idea's author as the ideas service keeps it (IdeaDetail's `sourceUserName`): the
    Idea in the event does not carry it, the message's `AUTHOR_HEADER` does (set where the
    ideas service writes the event), so no call is made for it."""
    name = (event.headers if isinstance(event, Event) else {}).get(AUTHOR_HEADER)
    if isinstance(name, bytes):
        name = name.decode("utf-8", errors="replace")
    return str(name) if name is not None else None
