"""Calls from one service to another's HTTP API, the one way every service makes them.

`Peers.call` picks the next replica of the service (round-robin over its `<SERVICE>_URLS`),
sends the caller as the gateway would (workspace, key, scopes, plan and request id in the
`X-Ims-*` and `X-Request-Id` headers) with the internal token, and turns a connection failure
or a timeout into 503 `service_unavailable`. `Peers.data` also maps the answer: the `data` of
a 200, `NotFound` for a 404 when the caller names what was missing, 503 for anything else.
Never call a peer inside an open database transaction: the transaction would wait on the
network (docs/architecture.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import aiohttp
import orjson

from .caller import Caller
from .errors import NotFound, ServiceUnavailable
from .render import dumps
from .settings import Settings

TIMEOUT = aiohttp.ClientTimeout(total=10)


class Peers:
    """The services' HTTP APIs as their peers call them, over one client session."""

    def __init__(self, session: aiohttp.ClientSession, settings: Settings) -> None:
        self.session, self.token = session, settings.internal_token
        self._turns: dict[str, Iterator[str]] = {
            name: itertools.cycle(urls) for name, urls in settings.service_urls.items()
        }

    async def call(
        self,
        who: Caller,
        service: str,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        json: Any = None,
        timeout: aiohttp.ClientTimeout = TIMEOUT,
    ) -> tuple[int, bytes]:
        """The status and body of one call to `service`, made as `who`."""
        headers = who.headers(self.token)
        data = None
        if json is not None:
            data = dumps(json)
            headers["Content-Type"] = "application/json"
        url = next(self._turns[service]) + path
        try:
            async with self.session.request(
                method, url, params=query, data=data, headers=headers, timeout=timeout
            ) as resp:
                return resp.status, await resp.read()
        except (aiohttp.ClientError, TimeoutError) as err:
            raise ServiceUnavailable(
                f"The {service} service is not reachable; retry shortly"
            ) from err

    async def data(
        self,
        who: Caller,
        service: str,
        method: str,
        path: str,
        *,
        json: Any = None,
        missing: str | None = None,
        timeout: aiohttp.ClientTimeout = TIMEOUT,
    ) -> Any:
        """The `data` of a 200 answer; a 404 is `NotFound(missing)` when `missing` is given;
        any other answer is 503."""
        status, body = await self.call(who, service, method, path, json=json, timeout=timeout)
        if status == 404 and missing is not None:
            raise NotFound(missing)
        if status != 200:
            raise ServiceUnavailable(f"The {service} service answered {status}")
        return orjson.loads(body)["data"]
