"""Raw HTTP/1.1 exchanges for tests that send what no well-behaved client would: arbitrary header
bytes, partial requests, slow requests. Answers are parsed by llhttp (httptools)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import httptools
import orjson
from multidict import CIMultiDict


@dataclass
class RawAnswer:
    status: int = 0
    headers: CIMultiDict[str] = field(default_factory=CIMultiDict)
    body: bytes = b""

    @property
    def json(self) -> Any:
        return orjson.loads(self.body)


class _Collector:
    def __init__(self, answer: RawAnswer) -> None:
        self.answer = answer
        self.parts: list[bytes] = []
        self.done = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.answer.headers.add(name.decode("latin-1"), value.decode("latin-1"))

    def on_body(self, body: bytes) -> None:
        self.parts.append(body)

    def on_message_complete(self) -> None:
        self.done = True


def request_bytes(
    method: str,
    path: str,
    headers: list[tuple[bytes, bytes]],
    body: bytes = b"",
    host: str = "127.0.0.1",
) -> bytes:
    """A request with exactly these header bytes (plus Host, Content-Length, Connection: close)."""
    lines = [f"{method} {path} HTTP/1.1".encode(), b"Host: " + host.encode(), b"Connection: close"]
    lines += [name + b": " + value for name, value in headers]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


async def exchange(base_url: str, data: bytes, timeout: float = 15.0) -> RawAnswer:
    """Send `data` on a new connection and read one answer (the server closes after it)."""
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    answer = RawAnswer()
    collector = _Collector(answer)
    parser = httptools.HttpResponseParser(collector)
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(data)
            await writer.drain()
            while not collector.done:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                parser.feed_data(chunk)
        finally:
            writer.close()
    answer.status = parser.get_status_code()
    answer.body = b"".join(collector.parts)
    return answer
