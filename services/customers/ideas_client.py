"""Calls to the ideas service's internal routes: does an idea exist, and the Idea bodies."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from libs.common.errors import NotFound, ServiceUnavailable
from libs.common.web import HTTP, SETTINGS, caller

TIMEOUT = aiohttp.ClientTimeout(total=10)
_turn = itertools.count()


def _base(request: web.Request) -> str:
    urls = request.app[SETTINGS].ideas_urls
    return urls[next(_turn) % len(urls)]


async def _call(request: web.Request, method: str, path: str, json: Any = None) -> tuple[int, bytes]:
    headers = caller(request).headers(request.app[SETTINGS].internal_token)
    try:
        async with request.app[HTTP].request(method, _base(request) + path, json=json,
                                             headers=headers, timeout=TIMEOUT) as resp:
            return resp.status, await resp.read()
    except (aiohttp.ClientError, TimeoutError) as err:
        raise ServiceUnavailable("The ideas service is not reachable") from err


async def get_idea(request: web.Request, idea_id: uuid.UUID) -> dict[str, Any]:
    """The idea (deleted ones too) if it is in the caller's workspace, else 404."""
    status, body = await _call(request, "GET", f"/internal/ideas/{idea_id}")
    if status == 404:
        raise NotFound("Idea not found")
    if status != 200:
        raise ServiceUnavailable(f"The ideas service answered {status}")
    return orjson.loads(body)["data"]  # type: ignore[no-any-return]


async def lookup(request: web.Request, ids: list[uuid.UUID]) -> list[dict[str, Any]]:
    """The ideas of the caller's workspace with these ids, in the given order."""
    if not ids:
        return []
    status, body = await _call(request, "POST", "/internal/ideas/lookup",
                               json={"ids": [str(i) for i in ids]})
    if status != 200:
        raise ServiceUnavailable(f"The ideas service answered {status}")
    return orjson.loads(body)["data"]  # type: ignore[no-any-return]
