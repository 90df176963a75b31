"""gzip for answers over 1 KiB when the request's Accept-Encoding allows it (docs/api.md).

The gateway compresses, once: it forwards no Accept-Encoding, so the services always answer
plain. A whole answer (everything but exports) is compressed by `compression_middleware`, the
outermost one, so that errors, local answers and idempotent replays are covered alike (replays
are stored plain). A streamed answer (an export) is compressed chunk by chunk as it is relayed
(`GzipStream`): still streamed, never buffered whole. An answer of 1 KiB or less goes out plain.

Every answer over 1 KiB carries `Vary: Accept-Encoding`, compressed or not, so that a cache
keeps the two forms apart; a compressed one has `Content-Encoding: gzip` and, when it is whole,
the `Content-Length` of the compressed body. Level 1 (nginx's default): on a 2-core machine it
takes a 25-idea page (26 KB) to 5 KB in about a third of a millisecond, against 4 KB for about
a fifth more CPU at the zlib default, and the gateway's CPU is the budget (docs/gateway.md).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Awaitable, Callable

from aiohttp import web
from multidict import CIMultiDict
from werkzeug.http import parse_accept_header

MIN_SIZE = 1024
LEVEL = 1
OFFLOAD = 64 * 1024  # chunks above this are compressed in a thread: the loop keeps serving

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def accepts_gzip(request: web.Request) -> bool:
    """Whether Accept-Encoding allows gzip (`gzip`, `*`, not `gzip;q=0`)."""
    header = request.headers.get("Accept-Encoding")
    return bool(header) and parse_accept_header(header).quality("gzip") > 0


def add_vary(headers: CIMultiDict[str], name: str) -> None:
    present = [v.strip().lower() for v in headers.get("Vary", "").split(",") if v.strip()]
    if name.lower() not in present and "*" not in present:
        headers["Vary"] = ", ".join([*filter(None, [headers.get("Vary", "").strip()]), name])


class GzipStream:
    """A gzip member written in pieces: `chunk` for each piece of the body, then `end`."""

    def __init__(self) -> None:
        self._z = zlib.compressobj(LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)

    async def chunk(self, data: bytes, flush: bool = False) -> bytes:
        """The compressed piece; `flush` also sends whatever zlib holds back (a sync flush), so
        that a relayed stream reaches the client as it arrives rather than at its end."""
        if len(data) > OFFLOAD:
            return await asyncio.to_thread(self._piece, data, flush)
        return self._piece(data, flush)

    def _piece(self, data: bytes, flush: bool) -> bytes:
        out = self._z.compress(data)
        return out + self._z.flush(zlib.Z_SYNC_FLUSH) if flush else out

    def end(self) -> bytes:
        return self._z.flush()


async def gzip(data: bytes) -> bytes:
    stream = GzipStream()
    return await stream.chunk(data) + stream.end()


@web.middleware
async def compression_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    if not isinstance(response, web.Response) or response.prepared:
        return response  # a stream compresses itself as it is relayed
    body = response.body
    if not isinstance(body, bytes) or len(body) <= MIN_SIZE:
        return response
    add_vary(response.headers, "Accept-Encoding")
    if accepts_gzip(request) and "Content-Encoding" not in response.headers:
        response.body = await gzip(body)
        response.headers["Content-Encoding"] = "gzip"
        response.headers.pop("Content-Length", None)  # set again from the compressed body
    return response


def setup_compression(app: web.Application) -> None:
    """Compress every whole answer of `app` (outermost middleware: it sees the final answer)."""
    app.middlewares.insert(0, compression_middleware)
