"""Writing a streamed answer to a client that may not read it: bounded waits, and a clean cut.

A streamed answer (an export, and whatever the gateway relays as it comes) waits for the client
to take each piece. `write_within` writes in pieces of at most 64 KiB and gives each piece
`timeout` seconds: a client that does not make room for 64 KiB in that time (one that reads a
byte at a time, or nothing) gets `TimeoutError`, whatever the size of the data being written.

A write waits until the kernel's send buffer has room, and Linux grows that buffer to several
MiB on a fast link and wakes a writer only once a third of it is free: a client reading 300 KB/s
would then wait seconds between wake-ups and look stalled. `bound_send_buffer` fixes the buffer
at 256 KiB (the kernel doubles it) for a streamed answer, so the timeout measures the client's
pace, not the kernel's buffering; a client must read about 64 to 200 KiB per timeout.

Once a streamed answer has started, no error answer can follow it: `cut_off` ends the
connection at once with a reset, so that the client sees a broken transfer rather than a
complete-looking one, and the kernel drops what is still queued for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

from aiohttp import web

PIECE = 64 * 1024
SEND_BUFFER = 256 * 1024


def bound_send_buffer(request: web.BaseRequest, size: int = SEND_BUFFER) -> None:
    """Fix the send buffer of the client's connection at `size` (see the module docstring)."""
    _set_buffer(request.transport, socket.SO_SNDBUF, size)


def bound_receive_buffer(transport: asyncio.BaseTransport | None, size: int = SEND_BUFFER) -> None:
    """Fix the receive buffer of a connection a streamed answer is read from: what the kernel
    holds for a slow client stays small, and a reset from the other end is heard soon (data
    queued before a reset is still delivered first)."""
    _set_buffer(transport, socket.SO_RCVBUF, size)


def _set_buffer(transport: asyncio.BaseTransport | None, option: int, size: int) -> None:
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, option, size)


async def write_within(resp: web.StreamResponse, data: bytes, timeout: float) -> None:
    """Write `data`, each 64 KiB piece within `timeout` seconds, else `TimeoutError`."""
    view = memoryview(data)
    for start in range(0, len(view), PIECE):
        async with asyncio.timeout(timeout):
            await resp.write(view[start : start + PIECE])


def cut_off(request: web.BaseRequest) -> None:
    """Reset the client's connection now (SO_LINGER 0): nothing more is sent on it."""
    transport = request.transport
    if transport is None or transport.is_closing():
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
