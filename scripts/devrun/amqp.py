"""Just enough AMQP 0-9-1 to log in, open the vhost and close: a real RabbitMQ readiness check.

A bare TCP connect succeeds while RabbitMQ is still booting, and says nothing about the
credentials or the vhost of AMQP_URL; a login through to `Connection.OpenOk` does.
"""

from __future__ import annotations

import socket
import ssl
import struct
from typing import Protocol

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_METHOD = 1
FRAME_END = 0xCE

# (class id, method id) of the connection methods used here
START, START_OK = (10, 10), (10, 11)
TUNE, TUNE_OK = (10, 30), (10, 31)
OPEN, OPEN_OK = (10, 40), (10, 41)
CLOSE, CLOSE_OK = (10, 50), (10, 51)


class AmqpError(Exception):
    """The peer is not a usable AMQP 0-9-1 broker for these credentials and vhost."""


class Socket(Protocol):
    def sendall(self, data: bytes, /) -> None: ...
    def recv(self, size: int, /) -> bytes: ...


def shortstr(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">B", len(raw)) + raw


def longstr(raw: bytes) -> bytes:
    return struct.pack(">I", len(raw)) + raw


def table(items: dict[str, object]) -> bytes:
    """A field table with the value types used here: booleans, strings and tables."""
    body = b""
    for key, value in items.items():
        if isinstance(value, bool):
            body += shortstr(key) + b"t" + struct.pack(">B", value)
        elif isinstance(value, dict):
            body += shortstr(key) + b"F" + table(value)
        else:
            body += shortstr(key) + b"S" + longstr(str(value).encode())
    return longstr(body)


def method_frame(method: tuple[int, int], arguments: bytes = b"") -> bytes:
    payload = struct.pack(">HH", *method) + arguments
    return struct.pack(">BHI", FRAME_METHOD, 0, len(payload)) + payload + bytes([FRAME_END])


class FrameReader:
    def __init__(self, sock: Socket) -> None:
        self._sock = sock

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self._sock.recv(size - len(data))
            if not chunk:
                raise AmqpError("the server closed the connection")
            data += chunk
        return data

    def method(self) -> tuple[tuple[int, int], bytes]:
        """The next method frame as ((class, method), arguments); other frames are skipped."""
        while True:
            header = self._exactly(7)
            if header.startswith(b"AMQP"):
                raise AmqpError("the server does not speak AMQP 0-9-1")
            kind, _channel, size = struct.unpack(">BHI", header)
            payload = self._exactly(size)
            if self._exactly(1)[0] != FRAME_END:
                raise AmqpError("malformed frame")
            if kind == FRAME_METHOD:
                class_id, method_id = struct.unpack(">HH", payload[:4])
                return (class_id, method_id), payload[4:]


def close_reason(arguments: bytes) -> str:
    code, length = struct.unpack(">HB", arguments[:3])
    return f"{code} {arguments[3 : 3 + length].decode(errors='replace')}"


def _expect(reader: FrameReader, wanted: tuple[int, int], step: str) -> bytes:
    method, arguments = reader.method()
    if method == CLOSE:
        raise AmqpError(f"{step} refused: {close_reason(arguments)}")
    if method != wanted:
        raise AmqpError(f"{step}: unexpected method {method}")
    return arguments


def login(sock: Socket, user: str, password: str, vhost: str) -> None:
    """Connection.Start to Connection.OpenOk, then a polite Connection.Close."""
    reader = FrameReader(sock)
    sock.sendall(PROTOCOL_HEADER)
    _expect(reader, START, "connection")
    # authentication_failure_close: RabbitMQ then says why instead of just hanging up.
    properties = table(
        {"product": "devenv", "capabilities": {"authentication_failure_close": True}}
    )
    response = longstr(f"\0{user}\0{password}".encode())
    sock.sendall(
        method_frame(START_OK, properties + shortstr("PLAIN") + response + shortstr("en_US"))
    )
    channel_max, frame_max, _heartbeat = struct.unpack(
        ">HIH", _expect(reader, TUNE, f"login as {user!r}")[:8]
    )
    sock.sendall(method_frame(TUNE_OK, struct.pack(">HIH", channel_max, frame_max, 0)))
    sock.sendall(method_frame(OPEN, shortstr(vhost) + shortstr("") + b"\x00"))
    _expect(reader, OPEN_OK, f"vhost {vhost!r}")
    sock.sendall(
        method_frame(CLOSE, struct.pack(">H", 200) + shortstr("") + struct.pack(">HH", 0, 0))
    )
    try:
        reader.method()  # CloseOk; the check has already passed whatever comes back
    except AmqpError:
        pass


def check(
    host: str,
    port: int,
    user: str,
    password: str,
    vhost: str,
    *,
    tls: bool = False,
    timeout: float = 5.0,
) -> None:
    """Raise OSError (nothing usable listens) or AmqpError (a broker refuses us)."""
    with socket.create_connection((host, port), timeout=timeout) as raw:
        if not tls:
            login(raw, user, password, vhost)
            return
        with ssl.create_default_context().wrap_socket(raw, server_hostname=host) as sock:
            login(sock, user, password, vhost)
