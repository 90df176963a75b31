"""The streaming keep-alive proxy from the gateway to the services."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from libs.common.caller import H_REQUEST_ID
from libs.common.errors import ServiceUnavailable

# Hop-by-hop headers, and what only the gateway may set; an X-Ims-* header from a client
# would otherwise impersonate the gateway's word about the caller.
_DROP_REQUEST = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "upgrade",
                           "proxy-authorization", "proxy-connection", "host", "content-length",
                           "authorization", "expect"})
_DROP_RESPONSE = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length",
                            "server", "date"})
BUFFER_LIMIT = 256 * 1024


class Upstreams:
    """Round-robin over each service's base URLs."""

    def __init__(self, urls: dict[str, tuple[str, ...]]) -> None:
        self._cycles: dict[str, Iterator[str]] = {k: itertools.cycle(v) for k, v in urls.items()}

    def next(self, service: str) -> str:
        return next(self._cycles[service])


def forward_headers(request: web.Request, internal: dict[str, str],
                    request_id: str) -> CIMultiDict[str]:
    """The client's end-to-end headers, then the caller (`internal`) and the request id."""
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in request.headers.items():
        low = name.lower()
        if low in _DROP_REQUEST or low.startswith("x-ims-"):
            continue
        out.add(name, value)
    out.update(internal)
    out[H_REQUEST_ID] = request_id
    return out


async def forward(session: aiohttp.ClientSession, request: web.Request, base: str,
                  headers: CIMultiDict[str], body: bytes | None,
                  extra: dict[str, str], buffer: bool = False) -> web.StreamResponse:
    """Send the request upstream; small answers come back whole, large ones stream through."""
    url = base + request.raw_path
    try:
        up = await session.request(request.method, url, headers=headers, data=body,
                                   allow_redirects=False)
    except (aiohttp.ClientConnectionError, TimeoutError) as err:
        raise ServiceUnavailable("The service is unavailable; retry shortly") from err
    try:
        resp_headers = CIMultiDict((k, v) for k, v in up.headers.items()
                                   if k.lower() not in _DROP_RESPONSE)
        resp_headers.update(extra)
        length = up.content_length
        if buffer or (length is not None and length <= BUFFER_LIMIT):
            return web.Response(status=up.status, headers=resp_headers, body=await up.read())
        resp = web.StreamResponse(status=up.status, headers=resp_headers)
        if length is not None:
            resp.content_length = length
        await resp.prepare(request)
        async for chunk in up.content.iter_any():
            await resp.write(chunk)
        await resp.write_eof()
        return resp
    finally:
        up.release()
