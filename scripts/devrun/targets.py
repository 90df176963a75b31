"""DATABASE_URL and AMQP_URL: defaults, the parts the tooling needs, and shell export lines."""

from __future__ import annotations

import getpass
import ipaddress
import os
import shlex
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import SplitResult, quote, unquote, urlsplit, urlunsplit

from .common import DevenvError

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/ideas"
DEFAULT_AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"


def resolve_urls(environ: Mapping[str, str]) -> dict[str, str]:
    """The URLs every process gets: the environment's, else the documented defaults."""
    return {
        "DATABASE_URL": environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL,
        "AMQP_URL": environ.get("AMQP_URL") or DEFAULT_AMQP_URL,
    }


def export_lines(values: Mapping[str, str]) -> str:
    """`export NAME='value'` lines, safe to `eval` or `.` in a POSIX shell."""
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in values.items())


def _split(url: str, name: str, schemes: tuple[str, ...]) -> tuple[SplitResult, int | None]:
    parts = urlsplit(url)
    if parts.scheme not in schemes:
        raise DevenvError(f"{name} must start with {schemes[0]}://, got {url!r}")
    if not parts.hostname:
        raise DevenvError(f"{name} needs a host, got {url!r}")
    try:
        port = parts.port
    except ValueError as err:
        raise DevenvError(f"{name} has a bad port: {url!r}") from err
    return parts, port


@dataclass(frozen=True)
class PgTarget:
    url: str
    host: str
    port: int
    user: str
    database: str

    @classmethod
    def parse(cls, url: str) -> PgTarget:
        parts, port = _split(url, "DATABASE_URL", ("postgresql", "postgres"))
        # The same fallbacks as libpq, so that psql and the application connect alike.
        user = unquote(parts.username or "") or os.environ.get("PGUSER") or getpass.getuser()
        database = unquote(parts.path.lstrip("/")) or user
        return cls(url, parts.hostname or "", port or 5432, user, database)

    def with_database(self, name: str) -> str:
        """The same server and credentials, another database (`postgres` to create ours)."""
        return urlunsplit(urlsplit(self.url)._replace(path="/" + quote(name, safe="")))


@dataclass(frozen=True)
class AmqpTarget:
    url: str
    host: str
    port: int
    user: str
    password: str
    vhost: str
    tls: bool

    @classmethod
    def parse(cls, url: str) -> AmqpTarget:
        parts, port = _split(url, "AMQP_URL", ("amqp", "amqps"))
        tls = parts.scheme == "amqps"
        # `amqp://host/` and `amqp://host/%2f` both mean the default vhost "/".
        vhost = unquote(parts.path[1:]) or "/"
        return cls(
            url=url,
            host=parts.hostname or "",
            port=port or (5671 if tls else 5672),
            user=unquote(parts.username or "") or "guest",
            password=unquote(parts.password or "") or "guest",
            vhost=vhost,
            tls=tls,
        )


def _addresses(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return []
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def is_local_host(host: str) -> bool:
    """Whether `host` is this machine's loopback: only there may a private server stand in."""
    addresses = _addresses(host)
    return bool(addresses) and all(address.is_loopback for address in addresses)


def loopback_address(host: str) -> str:
    """The IP literal to bind for `host` (IPv4 first: `localhost` usually resolves to both)."""
    addresses = sorted(_addresses(host), key=lambda address: address.version)
    if not addresses:
        raise DevenvError(f"cannot resolve {host!r}")
    return str(addresses[0])
