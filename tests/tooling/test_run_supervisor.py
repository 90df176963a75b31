"""The supervisor's pure parts: restart policy, output, banner, readiness and port checks."""

import asyncio
import io
import socket
from collections.abc import Awaitable
from typing import TypeVar

import pytest
from devrun import supervisor
from devrun.layout import Process

T = TypeVar("T")


def run_on_own_loop(coroutine: Awaitable[T]) -> T:
    # Not asyncio.run: it would reset the current event loop of the test session.
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def test_restart_backs_off_then_gives_up() -> None:
    """1 s after a long run, then 2, 4, 8, 16 s for quick exits; the 5th in a row gives up."""
    delays = [supervisor.restart_delay(quick_exits) for quick_exits in range(6)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, None]


def test_exit_descriptions_name_the_signal() -> None:
    """A negative return code is reported as the signal that killed the process."""
    assert supervisor.describe_exit(3) == "exited with status 3"
    assert supervisor.describe_exit(-9) == "was killed by SIGKILL"


def test_output_lines_are_prefixed_and_aligned() -> None:
    """Every line carries its process name, padded to the longest name."""
    stream = io.BytesIO()
    output = supervisor.Output(stream, ["gateway-0", "customers-0"])
    output.line("gateway-0", b"listening\n")
    output.line("customers-0", b"no newline")
    output.note("ready")
    assert stream.getvalue().decode().splitlines() == [
        "gateway-0   | listening",
        "customers-0 | no newline",
        "supervise   | ready",
    ]


def test_banner_shows_the_demo_key_and_a_curl_example() -> None:
    """With a demo key the banner shows it and a request that uses it."""
    lines = supervisor.banner("http://127.0.0.1:8080", {"key": "ims_live_abc"})
    text = "\n".join(lines)
    assert "http://127.0.0.1:8080" in text
    assert "Demo API key: ims_live_abc" in text
    assert "curl -s -H 'Authorization: Bearer ims_live_abc' 'http://127.0.0.1:8080/api/v1/" in text


def test_banner_without_demo_has_no_key() -> None:
    """DEMO=0: only the base URL."""
    text = "\n".join(supervisor.banner("http://127.0.0.1:8080", None))
    assert "http://127.0.0.1:8080" in text
    assert "key" not in text.lower()


async def _status_from_tiny_server(answer: bytes) -> int | None:
    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(reply, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        return await supervisor.http_status(f"http://127.0.0.1:{port}/readyz")
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("status", [200, 503])
def test_http_status_reads_the_status_line(status: int) -> None:
    """The readiness check takes the status from the response's first line."""
    answer = f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n".encode()
    assert run_on_own_loop(_status_from_tiny_server(answer)) == status


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_http_status_is_none_when_nothing_listens() -> None:
    """A refused connection means not ready, not an error."""
    url = f"http://127.0.0.1:{_unused_port()}/readyz"
    assert run_on_own_loop(supervisor.http_status(url)) is None


def test_busy_ports_are_reported_before_starting() -> None:
    """A port someone already listens on is named; a free one is not."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy_port = taken.getsockname()[1]
        processes = [
            Process("gateway-0", ("x",), "127.0.0.1", busy_port, {}),
            Process("ideas-0", ("x",), "127.0.0.1", _unused_port(), {}),
        ]
        assert supervisor.busy_ports(processes) == [f"gateway-0 (127.0.0.1:{busy_port})"]
        metrics_taken = [
            Process("gateway-0", ("x",), "127.0.0.1", _unused_port(), {}, ("127.0.0.1", busy_port))
        ]
        assert supervisor.busy_ports(metrics_taken) == [f"gateway-0 (127.0.0.1:{busy_port})"]
