"""The keep-alive proxy from the gateway to the services.

Answers relayed whole (everything but exports) go through the lean client of `upstream.py`;
exports, and services reached over https, go through aiohttp and stream chunk by chunk (gzip
as they go when the client accepts it: `compression.py`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from libs.common.caller import H_REQUEST_ID
from libs.common.errors import ServiceUnavailable

from .compression import MIN_SIZE, GzipStream, accepts_gzip, add_vary
from .upstream import UpstreamError, UpstreamPool

# Hop-by-hop headers, and what only the gateway may set; an X-Ims-* header from a client
# would otherwise impersonate the gateway's word about the caller. Accept-Encoding too: the
# services answer plain and the gateway compresses.
_DROP_REQUEST = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "upgrade",
                           "proxy-authorization", "proxy-connection", "host", "content-length",
                           "authorization", "expect", "accept-encoding"})
_DROP_RESPONSE = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length",
                            "server", "date"})
BUFFER_LIMIT = 256 * 1024


@dataclass(frozen=True)
class Target:
    base: str       # scheme://host:port
    host: str
    port: int
    lean: bool      # plain http: the lean client can reach it


def _target(url: str) -> Target:
    u = urlsplit(url)
    port = u.port or (443 if u.scheme == "https" else 80)
    return Target(url.rstrip("/"), u.hostname or "127.0.0.1", port, u.scheme == "http")


class Upstreams:
    """Round-robin over each service's base URLs."""

    def __init__(self, urls: dict[str, tuple[str, ...]]) -> None:
        self._cycles: dict[str, Iterator[Target]] = {
            k: itertools.cycle([_target(u) for u in v]) for k, v in urls.items()}

    def next(self, service: str) -> Target:
        return next(self._cycles[service])


def forward_headers(request: web.Request, internal: dict[str, str],
                    request_id: str) -> list[tuple[str, str]]:
    """The client's end-to-end headers, then the caller (`internal`) and the request id."""
    out = [(name, value) for name, value in request.headers.items()
           if not ((low := name.lower()) in _DROP_REQUEST or low.startswith("x-ims-")
                   or low == "x-request-id")]
    out.extend(internal.items())
    out.append((H_REQUEST_ID, request_id))
    return out


async def relay_whole(pool: UpstreamPool, request: web.Request, target: Target,
                      headers: list[tuple[str, str]], body: bytes | None,
                      extra: dict[str, str]) -> web.Response:
    """Send the request with the lean client; the answer comes back whole."""
    try:
        answer = await pool.request(target.host, target.port, request.method,
                                    request.raw_path, headers, body)
    except UpstreamError as err:
        raise ServiceUnavailable("The service is unavailable; retry shortly") from err
    resp_headers = CIMultiDict((k, v) for k, v in answer.headers
                               if k.lower() not in _DROP_RESPONSE)
    resp_headers.update(extra)
    return web.Response(status=answer.status, headers=resp_headers, body=answer.body)


async def forward(session: aiohttp.ClientSession, request: web.Request, base: str,
                  headers: list[tuple[str, str]], body: bytes | None,
                  extra: dict[str, str], buffer: bool = False) -> web.StreamResponse:
    """Send the request with aiohttp; small answers come back whole, large ones stream."""
    url = base + request.raw_path
    try:
        up = await session.request(request.method, url, headers=CIMultiDict(headers),
                                   data=body, allow_redirects=False)
    except (aiohttp.ClientConnectionError, TimeoutError) as err:
        raise ServiceUnavailable("The service is unavailable; retry shortly") from err
    try:
        resp_headers = CIMultiDict((k, v) for k, v in up.headers.items()
                                   if k.lower() not in _DROP_RESPONSE)
        resp_headers.update(extra)
        length = up.content_length
        if buffer or (length is not None and length <= BUFFER_LIMIT):
            return web.Response(status=up.status, headers=resp_headers, body=await up.read())
        head = await _read_ahead(up.content, MIN_SIZE + 1)
        if len(head) <= MIN_SIZE:  # the whole answer: plain (compression.py)
            return web.Response(status=up.status, headers=resp_headers, body=head)
        return await _stream(request, up, resp_headers, head, length)
    finally:
        up.release()


async def _read_ahead(content: aiohttp.StreamReader, size: int) -> bytes:
    """At least `size` bytes of the body, or all of it when it is shorter."""
    parts, got = [], 0
    while got < size:
        chunk = await content.readany()
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


async def _stream(request: web.Request, up: aiohttp.ClientResponse,
                  headers: CIMultiDict[str], head: bytes,
                  length: int | None) -> web.StreamResponse:
    """Relay an answer over 1 KiB chunk by chunk, gzip-compressed when the client accepts it."""
    add_vary(headers, "Accept-Encoding")
    gz = GzipStream() if accepts_gzip(request) and "Content-Encoding" not in headers else None
    if gz is not None:
        headers["Content-Encoding"] = "gzip"
    resp = web.StreamResponse(status=up.status, headers=headers)
    if length is not None and gz is None:
        resp.content_length = length
    await resp.prepare(request)
    chunk = head
    while chunk:
        out = await gz.chunk(chunk) if gz is not None else chunk
        if out:
            await resp.write(out)
        chunk = await up.content.readany()
    if gz is not None:
        await resp.write(gz.end())
    await resp.write_eof()
    return resp
