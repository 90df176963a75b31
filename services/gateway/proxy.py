"""The keep-alive proxy from the gateway to the services.

Answers go through the lean client of `upstream.py`; exports, and services reached over https,
go through aiohttp. Either way an answer up to `BUFFER_LIMIT` is relayed whole and a larger one
streams chunk by chunk, so the gateway never holds a whole large answer. A relay may also keep
a copy of the body up to a limit of its own (an Idempotency-Key's stored answer).

Request bodies arrive as the client sent them (the public listener does not decompress):
`read_body` decodes `Content-Encoding: gzip` or `deflate` (docs/api.md) and the service
gets the plain body without that header.
A streamed answer is gzip-compressed as it goes when the client accepts it; whole answers
are compressed by the gateway's outermost middleware (`compression.py`).
"""

from __future__ import annotations

import asyncio
import itertools
import zlib
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
import structlog
from aiohttp import web
from multidict import CIMultiDict

from libs.common.caller import H_REQUEST_ID
from libs.common.errors import PayloadTooLarge, ServiceUnavailable, ValidationFailed
from libs.common.listener import close_after_answer
from libs.common.streaming import bound_receive_buffer, bound_send_buffer, cut_off, write_within
from libs.common.validation import MAX_BODY

from .compression import GzipStream, accepts_gzip, add_vary
from .upstream import UpstreamError, UpstreamPool

# Hop-by-hop headers, and what only the gateway may set; an X-Ims-* header from a client
# would otherwise impersonate the gateway's word about the caller. The body is forwarded
# decoded, so its Content-Encoding goes too; Accept-Encoding too: the services answer plain
# and the gateway compresses.
_DROP_REQUEST = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
        "host",
        "content-length",
        "authorization",
        "expect",
        "content-encoding",
        "accept-encoding",
    }
)
_DROP_RESPONSE = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "server", "date"}
)
BUFFER_LIMIT = 256 * 1024
# zlib window bits: gzip framing; zlib framing (what HTTP calls deflate); raw deflate, which
# some clients send as deflate all the same.
_GZIP, _ZLIB, _RAW = 16 + zlib.MAX_WBITS, zlib.MAX_WBITS, -zlib.MAX_WBITS
_ENCODINGS = {"gzip": _GZIP, "x-gzip": _GZIP, "deflate": _ZLIB}
log = structlog.get_logger("proxy")


@dataclass(frozen=True)
class Target:
    base: str  # scheme://host:port
    host: str
    port: int
    lean: bool  # plain http: the lean client can reach it


@dataclass
class Relayed:
    """What the client got, and the body as relayed when it was kept (None: over the limit)."""

    response: web.StreamResponse
    body: bytes | None
    settled: bool = False  # `Keep.settle` ran before the answer's end was sent


# Called with the answer and its body (None: longer than the limit) once the whole answer has
# come, before its last bytes go to the client.
Settle = Callable[[web.StreamResponse, bytes | None], Awaitable[None]]


@dataclass(frozen=True)
class Keep:
    """Keep a copy of the answer's body up to `limit` bytes. A streamed answer that ends well
    is `settle`d before its last bytes leave, so a client that has the whole answer can count
    on what `settle` did (an Idempotency-Key's answer stored, and replayed to a repeat sent the
    moment the first answer ended)."""

    limit: int
    settle: Settle | None = None


def _target(url: str) -> Target:
    u = urlsplit(url)
    port = u.port or (443 if u.scheme == "https" else 80)
    return Target(url.rstrip("/"), u.hostname or "127.0.0.1", port, u.scheme == "http")


class Upstreams:
    """Round-robin over each service's base URLs."""

    def __init__(self, urls: dict[str, tuple[str, ...]]) -> None:
        self._cycles: dict[str, Iterator[Target]] = {
            k: itertools.cycle([_target(u) for u in v]) for k, v in urls.items()
        }

    def next(self, service: str) -> Target:
        return next(self._cycles[service])


def _safe(value: str) -> str:
    # aiohttp hands header bytes that are not UTF-8 over as lone surrogates, which no encoder
    # writes out again: such bytes become U+FFFD, the rest of the value is kept.
    if value.isascii():
        return value
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def forward_headers(
    request: web.Request, internal: dict[str, str], request_id: str
) -> list[tuple[str, str]]:
    """The client's end-to-end headers, then the caller (`internal`) and the request id."""
    out = [
        (name, _safe(value))
        for name, value in request.headers.items()
        if not (
            (low := name.lower()) in _DROP_REQUEST
            or low.startswith("x-ims-")
            or low == "x-request-id"
        )
    ]
    out.extend(internal.items())
    out.append((H_REQUEST_ID, request_id))
    return out


async def read_body(request: web.Request, timeout_s: float) -> bytes | None:
    """The request body, decoded as its Content-Encoding says; 400 for another encoding or a
    body that does not decode, 413 past 1 MiB (sent or decoded).

    The whole body must arrive within `timeout_s` (REQUEST_BODY_TIMEOUT_S): a client that
    trickles it gets 400 `validation_error` on `body` and its connection is closed after the
    answer (docs/gateway.md#request-bodies). It is read before the request takes a turn or a
    slot (`app.route_handler`), so a trickling body holds neither."""
    if not request.can_read_body:
        return None
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding != "identity" and encoding not in _ENCODINGS:
        raise ValidationFailed(
            "Content-Encoding must be gzip, deflate or identity", field="Content-Encoding"
        )
    try:
        async with asyncio.timeout(timeout_s):  # not wait_for: it can swallow a cancellation
            raw = await request.read()
    except web.RequestPayloadError as err:
        raise ValidationFailed("The request body was cut short", field="body") from err
    except TimeoutError as err:
        log.info("request_body_timed_out", path=request.path, timeout_s=timeout_s)
        close_after_answer(request)
        raise ValidationFailed(
            f"The request body did not arrive within {timeout_s:g} s",
            field="body",
            headers={"Connection": "close"},
        ) from err
    if encoding == "identity":
        return raw
    wbits = _ENCODINGS[encoding]
    if wbits == _ZLIB and raw and raw[0] & 0x0F != 8:  # no zlib header: raw deflate
        wbits = _RAW
    return _decode(raw, wbits, encoding)


def _decode(raw: bytes, wbits: int, encoding: str) -> bytes:
    out: list[bytes] = []
    size = 0
    try:
        while raw:  # a gzip body may hold several members, one after the other
            d = zlib.decompressobj(wbits)
            part = d.decompress(raw, MAX_BODY + 1 - size)
            size += len(part)
            if size > MAX_BODY or d.unconsumed_tail:
                raise PayloadTooLarge()
            part += d.flush()
            if not d.eof:
                raise zlib.error("truncated")
            out.append(part)
            raw = d.unused_data if wbits == _GZIP else b""
    except zlib.error as err:
        raise ValidationFailed(
            f"The body is not valid {encoding} data", field="Content-Encoding"
        ) from err
    return b"".join(out)


async def relay_lean(
    pool: UpstreamPool,
    request: web.Request,
    target: Target,
    headers: list[tuple[str, str]],
    body: bytes | None,
    extra: dict[str, str],
    keep: Keep | None = None,
    write_timeout_s: float = 20.0,
    path: str | None = None,
) -> Relayed:
    """Send the request with the lean client; relay the answer whole or as a stream. `path`:
    the service's path when it is not the client's (an idea named by its `IDEA-<n>`)."""
    try:
        answer = await pool.request(
            target.host,
            target.port,
            _upstream_method(request),
            path or request.raw_path,
            headers,
            body,
            BUFFER_LIMIT,
        )
    except UpstreamError as err:
        raise ServiceUnavailable("The service is unavailable; retry shortly") from err
    resp_headers, length = _answer_headers(answer.headers, extra)
    if answer.stream is None:
        return Relayed(
            web.Response(status=answer.status, headers=resp_headers, body=answer.body), answer.body
        )
    stream = answer.stream
    return await _stream(
        request,
        answer.status,
        resp_headers,
        length,
        answer.body,
        stream.read,
        stream.abort,
        keep,
        write_timeout_s,
    )


async def relay_aiohttp(
    session: aiohttp.ClientSession,
    request: web.Request,
    base: str,
    headers: list[tuple[str, str]],
    body: bytes | None,
    extra: dict[str, str],
    keep: Keep | None = None,
    write_timeout_s: float = 20.0,
    buffer_limit: int = BUFFER_LIMIT,
    path: str | None = None,
) -> Relayed:
    """Send the request with aiohttp; relay the answer whole or as a stream (`path`: as for
    `relay_lean`)."""
    try:
        up = await session.request(
            _upstream_method(request),
            base + (path or request.raw_path),
            headers=CIMultiDict(headers),
            data=body,
            allow_redirects=False,
        )
    except (aiohttp.ClientConnectionError, TimeoutError) as err:
        raise ServiceUnavailable("The service is unavailable; retry shortly") from err
    try:
        resp_headers, length = _answer_headers(up.headers.items(), extra)
        first: list[bytes] = []
        size = 0
        while size <= buffer_limit:
            chunk = await up.content.readany()
            if not chunk:
                whole = b"".join(first)
                return Relayed(
                    web.Response(status=up.status, headers=resp_headers, body=whole), whole
                )
            first.append(chunk)
            size += len(chunk)
        bound_receive_buffer(up.connection.transport if up.connection else None)
        return await _stream(
            request,
            up.status,
            resp_headers,
            length,
            b"".join(first),
            up.content.readany,
            up.close,
            keep,
            write_timeout_s,
        )
    except aiohttp.ClientError as err:
        raise ServiceUnavailable("The service is unavailable; retry shortly") from err
    finally:
        up.release()


def _upstream_method(request: web.Request) -> str:
    # A HEAD is relayed as the GET it stands for: the services answer GET, and the gateway
    # sends the client the same status and headers without the body.
    return "GET" if request.method == "HEAD" else request.method


def _answer_headers(
    pairs: Iterable[tuple[str, str]], extra: dict[str, str]
) -> tuple[CIMultiDict[str], int | None]:
    headers: CIMultiDict[str] = CIMultiDict()
    length = None
    for name, value in pairs:
        low = name.lower()
        if low == "content-length":
            length = int(value) if value.isdigit() else None
        elif low not in _DROP_RESPONSE:
            headers.add(name, value)
    headers.update(extra)
    return headers, length


async def _stream(
    request: web.Request,
    status: int,
    headers: CIMultiDict[str],
    length: int | None,
    first: bytes,
    read: Callable[[], Awaitable[bytes]],
    abort: Callable[[], object],
    keep: Keep | None,
    write_timeout_s: float,
) -> Relayed:
    """Relay an answer too large to hold: what came, then the rest as it arrives. The first
    `keep.limit` bytes are also kept (the body is None when it was longer, or did not end well),
    and `keep.settle` runs before the last chunk leaves: each chunk is sent once the next one
    has come, so the client cannot see the answer end before it is settled.

    The client gets `write_timeout_s` for each 64 KiB (`libs/common/streaming.py`); a client
    that reads slower, or a service that breaks off mid-answer, gets its connection reset: once
    the status line is out, no error answer can follow it."""
    add_vary(headers, "Accept-Encoding")
    gz = GzipStream() if accepts_gzip(request) and "Content-Encoding" not in headers else None
    if gz is not None:
        headers["Content-Encoding"] = "gzip"
    resp = web.StreamResponse(status=status, headers=headers)
    if length is not None and gz is None:
        resp.content_length = length
    limit = keep.limit if keep is not None else 0
    kept: list[bytes] | None = [first] if limit >= len(first) else None
    size, finished, settled = len(first), False, False

    async def send(chunk: bytes) -> bool:
        """Write `chunk` (compressed as it goes); False: the client was too slow, and is cut off."""
        try:
            out = await gz.chunk(chunk, flush=True) if gz is not None else chunk
            if out:
                await write_within(resp, out, write_timeout_s)
        except TimeoutError:
            log.warning("stream_cut_off", path=request.path, reason="client too slow", sent=size)
            cut_off(request)
            return False
        return True

    try:
        await resp.prepare(request)
        if request.method == "HEAD":  # the headers are the answer; the body is not wanted
            await resp.write_eof()
            return Relayed(resp, None)
        bound_send_buffer(request)
        pending = first
        while True:
            try:
                chunk = await read()
            except (UpstreamError, aiohttp.ClientError, OSError, TimeoutError) as err:
                # The headers are out: breaking the connection is the only way left to tell
                # the client that the answer is incomplete.
                log.warning("answer_broke_off", error=repr(err), sent=size)
                cut_off(request)
                return Relayed(resp, None)
            if not chunk:
                break
            if not await send(pending):
                return Relayed(resp, None)
            pending = chunk
            size += len(chunk)
            if kept is not None:
                if size <= limit:
                    kept.append(chunk)
                else:
                    kept = None
        body = b"".join(kept) if kept is not None else None
        if keep is not None and keep.settle is not None:
            await keep.settle(resp, body)
            settled = True
        if not await send(pending):
            return Relayed(resp, None, settled)
        if gz is not None:
            await write_within(resp, gz.end(), write_timeout_s)
        await resp.write_eof()
        finished = True
    except ConnectionError:  # the client left; aiohttp deals with the rest
        return Relayed(resp, None, settled)
    finally:
        if not finished:
            abort()
    return Relayed(resp, body, settled)
