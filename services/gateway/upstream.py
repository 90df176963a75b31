"""A lean HTTP/1.1 keep-alive client for the gateway's calls whose answer is relayed whole.

aiohttp's client spends about 95 µs of CPU per request on this kind of machine (request and
response objects, timers, tracing hooks, cookie handling): a third of the gateway's whole cost
per call. This pool writes the request itself and leaves parsing the answer to llhttp through
httptools (the parser uvicorn uses), so no HTTP parsing is written here. It serves only the
services' answers: plain HTTP/1.1, framed by Content-Length or chunked. Exports keep using
aiohttp.

An answer is kept whole up to the caller's `buffer_limit`; past it the caller gets what came so
far with a `BodyStream` for the rest, read at the client's pace (reading from the service pauses
while more than `BodyStream.HIGH` bytes wait), so no answer is ever held whole in memory.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import httptools

_MAX_IDLE = 256  # idle connections kept per service address
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


class UpstreamError(ConnectionError):
    """No answer from the service (refused, reset, closed early or timed out)."""


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes  # the whole body, or its first part when `stream` is set
    stream: BodyStream | None = None  # the rest of a body over the buffer limit


class BodyStream:
    """The rest of an answer over the buffer limit, fed by its connection, read by the relay.

    The connection (and its slot) stays taken until the reader reached the end, or called
    `abort`, which closes it: a relay must do one or the other.
    """

    HIGH = 1 << 20  # buffered bytes past which the connection stops reading
    LOW = 256 << 10  # and below which it reads again

    def __init__(self, conn: _Conn, read_timeout: float) -> None:
        self._conn, self._read_timeout = conn, read_timeout
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._eof = False
        self._error: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self._done: Callable[[], None] | None = None

    # fed by the connection
    def feed(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)
        if self._size > self.HIGH and not self._paused and self._conn.transport is not None:
            self._conn.transport.pause_reading()
            self._paused = True
        self._wake()

    def feed_eof(self) -> None:
        self._eof = True
        self._wake()

    def fail(self, err: Exception) -> None:
        self._error = err
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # read by the relay
    async def read(self) -> bytes:
        """The next part of the body; b"" at its end. UpstreamError if the service failed."""
        while not self._chunks:
            if self._error is not None:
                self.abort()
                raise self._error
            if self._eof:
                self._finish()
                return b""
            loop = asyncio.get_running_loop()
            self._waiter = loop.create_future()
            timer = loop.call_later(self._read_timeout, self._expire)
            try:
                await self._waiter
            finally:
                timer.cancel()
                self._waiter = None
        data = self._chunks.popleft()
        self._size -= len(data)
        if self._paused and self._size < self.LOW and self._conn.transport is not None:
            self._conn.transport.resume_reading()
            self._paused = False
        return data

    def _expire(self) -> None:
        if self._error is None:
            self.fail(UpstreamError("no more of the answer in time"))

    def abort(self) -> None:
        """Give up on the rest: the connection is closed, not reused."""
        self._conn.reusable = False
        if self._conn.transport is not None:
            self._conn.transport.close()
        self._finish()

    def _finish(self) -> None:
        if self._paused and self._conn.transport is not None and not self._conn.closed:
            self._conn.transport.resume_reading()
            self._paused = False
        done, self._done = self._done, None
        if done is not None:
            done()


class _Conn(asyncio.Protocol):
    """One connection; one answer at a time, parsed by llhttp (httptools)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[Answer] | None = None
        self.closed = False
        self.reusable = True
        self.got_bytes = False
        self.pending = False  # bytes of an answer arrived that is not complete yet
        self.idle_since = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._headers: list[tuple[str, str]] = []
        self._body: list[bytes] = []
        self._size = 0
        self._until_close = False  # neither Content-Length nor chunked: the body ends at close
        self.limit: int | None = None  # bytes kept whole before the answer turns into a stream
        self.read_timeout = 120.0
        self.stream: BodyStream | None = None

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._until_close and exc is None:
            self.on_message_complete()  # an answer framed by close ends with the close
        self._fail(UpstreamError(f"connection closed: {exc!r}"))
        if self.stream is not None:
            self.stream.fail(UpstreamError(f"connection closed mid-answer: {exc!r}"))

    def data_received(self, data: bytes) -> None:
        self.got_bytes = self.pending = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as err:
            self.reusable = False
            self._fail(UpstreamError(f"bad answer: {err!r}"))
            if self.stream is not None:
                self.stream.fail(UpstreamError(f"bad answer: {err!r}"))
            if self.transport is not None:
                self.transport.close()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        names = {name.lower() for name, _ in self._headers}
        status = self._parser.get_status_code()
        self._until_close = (
            not ({"content-length", "transfer-encoding"} & names)
            and status >= 200
            and status not in (204, 304)
        )

    def on_body(self, body: bytes) -> None:
        if self.stream is not None:
            self.stream.feed(body)
            return
        self._body.append(body)
        self._size += len(body)
        if self.limit is not None and self._size > self.limit:
            # Too large to keep whole: hand over what came, the rest follows as a stream.
            self.stream = BodyStream(self, self.read_timeout)
            self._deliver()

    def on_message_complete(self) -> None:
        self.pending = self._until_close = False
        if not self._parser.should_keep_alive():
            self.reusable = False
        if self.stream is not None:
            self.stream.feed_eof()
            self.stream = None
            return
        self._deliver()

    def _deliver(self) -> None:
        answer = Answer(
            self._parser.get_status_code(), self._headers, b"".join(self._body), self.stream
        )
        self._headers, self._body, self._size = [], [], 0
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(answer)

    def start(self, data: bytes, limit: int | None, read_timeout: float) -> asyncio.Future[Answer]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.limit, self.read_timeout, self.stream = limit, read_timeout, None
        self.got_bytes = False
        self.transport.write(data)
        return self.waiter

    def _fail(self, err: UpstreamError) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(err)


Addr = tuple[str, int]


class UpstreamPool:
    """Keep-alive connections per service address; one request per connection at a time.

    At most `max_per_host` requests per address are in flight; further ones wait for a
    connection to come free. (The gateway admits at most as many per address, shared out per
    workspace with bounded waits: `shares.FairShares`, so none waits here.) A service whose database pool holds 10 connections gains nothing
    from hundreds of concurrent requests, and opening a connection per waiting request when a
    service slows down would spend the CPU it needs to catch up.
    """

    def __init__(
        self,
        connect_timeout: float = 5.0,
        read_timeout: float = 120.0,
        max_per_host: int = 100,
        idle_s: float = 30.0,
    ) -> None:
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        # An idle connection is reused for this long at most: the service closes idle ones
        # after its keep-alive timeout, and one must never be reused just as it is closed.
        self.idle_s = idle_s
        self.max_per_host = max_per_host
        self._idle: dict[Addr, deque[_Conn]] = {}
        self._busy: dict[Addr, int] = {}
        self._waiters: dict[Addr, deque[asyncio.Future[_Conn | None]]] = {}

    async def request(
        self,
        host: str,
        port: int,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes | None,
        buffer_limit: int | None = None,
    ) -> Answer:
        """Send one request; the answer whole, or past `buffer_limit` bytes its first part and
        a `BodyStream` that holds the connection until it is read to the end or aborted."""
        head = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}"]
        for name, value in headers:
            if "\r" in value or "\n" in value:  # a name with a line break must not split
                value = value.replace("\r", " ").replace("\n", " ")
            head.append(f"{name}: {value}")
        if body or method not in ("GET", "HEAD", "DELETE", "OPTIONS"):
            head.append(f"Content-Length: {len(body or b'')}")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("utf-8") + (body or b"")
        addr = (host, port)
        conn, reused = await self._acquire(addr)
        answer: Answer | None = None
        try:
            try:
                answer = await self._exchange(conn, data, buffer_limit)
            except UpstreamError:
                # A kept-alive connection the service closed just as we wrote: nothing was
                # read, so nothing was done; retry once on a new connection when that is safe.
                if not (reused and not conn.got_bytes and method in _IDEMPOTENT):
                    raise
                conn = await self._connect(addr)
                answer = await self._exchange(conn, data, buffer_limit)
            return answer
        finally:
            if answer is not None and answer.stream is not None:
                taken = conn
                answer.stream._done = lambda: self._release(addr, taken)
            else:
                self._release(addr, conn)

    async def _exchange(self, conn: _Conn, data: bytes, limit: int | None) -> Answer:
        fut = conn.start(data, limit, self.read_timeout)
        timer = asyncio.get_running_loop().call_later(self.read_timeout, self._expire, conn)
        try:
            return await fut
        except BaseException:
            conn.reusable = False
            if conn.transport is not None:
                conn.transport.close()
            raise
        finally:
            timer.cancel()

    @staticmethod
    def _expire(conn: _Conn) -> None:
        if conn.waiter is not None and not conn.waiter.done():
            conn.waiter.set_exception(UpstreamError("no answer in time"))

    async def _acquire(self, addr: Addr) -> tuple[_Conn, bool]:
        """A connection and a slot (released by `_release`); True when it was kept alive."""
        idle = self._idle.get(addr)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if not conn.closed and now - conn.idle_since < self.idle_s:
                self._busy[addr] = self._busy.get(addr, 0) + 1
                return conn, True
            if conn.transport is not None:
                conn.transport.close()
        if self._busy.get(addr, 0) >= self.max_per_host:
            fut: asyncio.Future[_Conn | None] = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(addr, deque()).append(fut)
            try:
                handed = await fut  # the slot comes with it, and maybe a connection
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._release(addr, fut.result())  # pass the slot on
                raise
            if handed is not None:
                return handed, True
        else:
            self._busy[addr] = self._busy.get(addr, 0) + 1
        try:
            return await self._connect(addr), False
        except BaseException:
            self._release(addr, None)
            raise

    async def _connect(self, addr: Addr) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(_Conn, *addr), self.connect_timeout
            )
        except (TimeoutError, OSError) as err:
            raise UpstreamError(f"cannot connect to {addr[0]}:{addr[1]}: {err!r}") from err
        return conn

    def _release(self, addr: Addr, conn: _Conn | None) -> None:
        """Give the slot (and the connection, if it can serve again) to a waiter, or free it."""
        usable = conn is not None and not conn.closed and conn.reusable and not conn.pending
        if conn is not None and not usable and conn.transport is not None:
            conn.transport.close()
        if usable:
            assert conn is not None
            conn.waiter = None
        waiters = self._waiters.get(addr)
        while waiters:
            w = waiters.popleft()
            if not w.done():
                w.set_result(conn if usable else None)
                return
        self._busy[addr] -= 1
        if not usable:
            return
        assert conn is not None and conn.transport is not None
        idle = self._idle.setdefault(addr, deque())
        if len(idle) >= _MAX_IDLE:
            conn.transport.close()
            return
        conn.idle_since = time.monotonic()
        idle.append(conn)

    def close(self) -> None:
        for idle in self._idle.values():
            while idle:
                conn = idle.pop()
                if conn.transport is not None:
                    conn.transport.close()
