"""The gateway's lean upstream client against a raw server that answers in every framing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from services.gateway.upstream import BodyStream, UpstreamError, UpstreamPool
from tests.support.processes import free_port

# Path -> raw answer, written in pieces so the parser sees partial data.
ANSWERS = {
    "/length": [
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Len",
        b'gth: 10\r\nX-Two: a\r\nX-Two: b\r\n\r\n{"a":',
        b" 123}",
    ],
    "/chunked": [
        b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        b"lo\r\n6;ext=1\r\n world\r\n0\r",
        b"\n\r\n",
    ],
    "/trailers": [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n",
        b"X-Trailer: t\r\n\r\n",
    ],
    "/empty": [b"HTTP/1.1 204 No Content\r\n\r\n"],
}


BIG = 3 << 20


class RawServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.requests: list[bytes] = []
        self.connections = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self.server: asyncio.base_events.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                path = head.split(b" ")[1].decode()
                if path == "/close-delimited":
                    writer.write(b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
                    await writer.drain()
                    break
                if path == "/hang":
                    await asyncio.sleep(5)
                    break
                if path == "/bye":
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    await writer.drain()
                    await asyncio.sleep(0.05)
                    break
                if path == "/slow":
                    self.in_flight += 1
                    self.most_in_flight = max(self.most_in_flight, self.in_flight)
                    await asyncio.sleep(0.1)
                    self.in_flight -= 1
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow")
                    await writer.drain()
                    continue
                if path == "/drop":
                    break
                if path == "/big":  # 3 MiB, written as fast as the reader takes it
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % BIG)
                    for _ in range(BIG // 65536):
                        writer.write(b"b" * 65536)
                        await writer.drain()
                    continue
                if path == "/echo":
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: "
                        + str(len(body)).encode()
                        + b"\r\n\r\n"
                        + body
                    )
                    await writer.drain()
                    break
                for piece in ANSWERS[path]:
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.01)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", self.port)

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


@pytest.fixture
async def raw() -> AsyncIterator[RawServer]:
    s = RawServer()
    await s.start()
    yield s
    await s.stop()


async def get(
    pool: UpstreamPool, raw: RawServer, path: str, method: str = "GET", body: bytes | None = None
):  # type: ignore[no-untyped-def]
    return await pool.request("127.0.0.1", raw.port, method, path, [("X-A", "1")], body)


async def test_framings_and_keep_alive(raw: RawServer) -> None:
    pool = UpstreamPool()
    a = await get(pool, raw, "/length")
    assert a.status == 200 and a.body == b'{"a": 123}'
    assert [v for k, v in a.headers if k == "X-Two"] == ["a", "b"]
    c = await get(pool, raw, "/chunked")
    assert c.status == 201 and c.body == b"hello world"
    t = await get(pool, raw, "/trailers")
    assert t.body == b"abc"
    e = await get(pool, raw, "/empty")
    assert e.status == 204 and e.body == b""
    assert raw.connections == 1, "one kept-alive connection served them all"
    assert raw.requests[0].startswith(b"GET /length HTTP/1.1\r\nHost: 127.0.0.1:")
    pool.close()


async def test_body_and_close_delimited(raw: RawServer) -> None:
    pool = UpstreamPool()
    r = await get(pool, raw, "/echo", method="POST", body=b'{"x": 1}')
    assert r.body == b'{"x": 1}'
    assert b"Content-Length: 8\r\n" in raw.requests[-1]
    r = await get(pool, raw, "/close-delimited")
    assert r.body == b"until the end"
    assert raw.connections == 2
    pool.close()


async def test_header_values_cannot_split_lines(raw: RawServer) -> None:
    pool = UpstreamPool()
    await pool.request(
        "127.0.0.1",
        raw.port,
        "GET",
        "/length",
        [("X-Name", "evil\r\nX-Ims-Workspace-Id: other")],
        None,
    )
    assert b"\r\nX-Ims-Workspace-Id" not in raw.requests[-1]
    pool.close()


async def test_no_answer_is_an_upstream_error(raw: RawServer) -> None:
    pool = UpstreamPool(read_timeout=0.3)
    with pytest.raises(UpstreamError):
        await get(pool, raw, "/hang")
    with pytest.raises(UpstreamError):
        await get(pool, raw, "/drop", method="POST", body=b"{}")
    with pytest.raises(UpstreamError):
        await pool.request("127.0.0.1", free_port(), "GET", "/", [], None)
    pool.close()


async def test_a_stale_connection_is_retried_for_safe_methods_only(raw: RawServer) -> None:
    """The service closed a kept-alive connection just before we reused it: a GET is sent
    again on a new connection; a POST is not (the caller decides), and fails cleanly."""
    pool = UpstreamPool(read_timeout=5)
    for method in ("GET", "POST"):
        await get(pool, raw, "/bye")  # the server closes it 50 ms after answering
        time.sleep(0.2)  # the close arrives, unseen by the loop
        if method == "GET":
            r = await get(pool, raw, "/length")
            assert r.status == 200
        else:
            with pytest.raises(UpstreamError):
                await get(pool, raw, "/length", method="POST", body=b"{}")
    pool.close()


async def test_in_flight_requests_per_service_are_bounded(raw: RawServer) -> None:
    """Past `max_per_host`, requests wait for a free connection instead of opening more."""
    pool = UpstreamPool(max_per_host=2)
    answers = await asyncio.gather(*(get(pool, raw, "/slow") for _ in range(6)))
    assert [a.body for a in answers] == [b"slow"] * 6
    assert raw.most_in_flight == 2 and raw.connections == 2
    # A waiter that gives up does not take its slot with it.
    waiting = [asyncio.create_task(get(pool, raw, "/slow")) for _ in range(4)]
    await asyncio.sleep(0.02)
    waiting[3].cancel()
    done = await asyncio.gather(*waiting, return_exceptions=True)
    assert isinstance(done[3], asyncio.CancelledError)
    assert (await get(pool, raw, "/slow")).body == b"slow"
    assert pool._busy[("127.0.0.1", raw.port)] == 0
    pool.close()


async def test_an_answer_over_the_buffer_limit_streams(raw: RawServer) -> None:
    """Past `buffer_limit` the answer comes as its first part and a stream: read to the end,
    the connection serves again; aborted, it is closed and its slot freed."""
    pool = UpstreamPool()
    a = await pool.request("127.0.0.1", raw.port, "GET", "/big", [], None, buffer_limit=65536)
    assert a.status == 200 and a.stream is not None and 65536 < len(a.body) < BIG
    parts = [a.body]
    while chunk := await a.stream.read():
        parts.append(chunk)
    assert b"".join(parts) == b"b" * BIG
    assert (await get(pool, raw, "/length")).body == b'{"a": 123}'
    assert raw.connections == 1, "the streamed answer's connection was reused"
    b = await pool.request("127.0.0.1", raw.port, "GET", "/big", [], None, buffer_limit=65536)
    assert b.stream is not None
    await b.stream.read()
    b.stream.abort()
    assert pool._busy[("127.0.0.1", raw.port)] == 0
    assert (await get(pool, raw, "/length")).status == 200
    assert raw.connections == 2, "an aborted answer's connection is not reused"
    small = await pool.request(
        "127.0.0.1", raw.port, "GET", "/length", [], None, buffer_limit=65536
    )
    assert small.stream is None and small.body == b'{"a": 123}'
    pool.close()


async def test_a_slow_reader_pauses_the_service(raw: RawServer) -> None:
    """While more than BodyStream.HIGH bytes wait unread, nothing more is read from the
    service: the gateway's memory per answer stays bounded whatever its size."""
    pool = UpstreamPool()
    a = await pool.request("127.0.0.1", raw.port, "GET", "/big", [], None, buffer_limit=65536)
    assert a.stream is not None
    await asyncio.sleep(0.3)  # the service writes as fast as it can; the reader reads nothing
    waiting = a.stream._size
    assert waiting <= BodyStream.HIGH + (256 << 10), waiting
    total = len(a.body)
    while chunk := await a.stream.read():
        total += len(chunk)
    assert total == BIG
    pool.close()
