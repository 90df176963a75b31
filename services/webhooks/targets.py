"""Where deliveries may go: URL rules and the SSRF guard on the address actually connected to.

Names are resolved by `GuardedResolver`, which drops every non-public address, so the check
applies to the very address the connector then connects to (a name that re-resolves to a
private address between two look-ups, "DNS rebinding", gains nothing). IP literals never reach
a resolver, so `literal_refused` checks them before the request is made.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

from aiohttp.abc import AbstractResolver
from aiohttp.resolver import DefaultResolver

from libs.common.errors import ValidationFailed

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(OSError):
    """The target resolves only to addresses deliveries may not go to."""


def is_public(ip: IpAddress) -> bool:
    """False for loopback, private, link-local, multicast, reserved and unspecified addresses."""
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped or ip.sixtofour
        if mapped is not None:
            return is_public(mapped)
    if (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
            or ip.is_reserved or ip.is_unspecified):
        return False
    return ip.is_global  # also refuses shared (100.64/10) and other special-purpose ranges


def ip_literal(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def literal_refused(host: str) -> bool:
    ip = ip_literal(host)
    return ip is not None and not is_public(ip)


def host_key(url: str) -> str:
    """`host:port` of a target: the unit of the per-host concurrency share."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{(parts.hostname or '').lower()}:{port}"


def check_target_url(url: str, *, field: str, schemes: tuple[str, ...],
                     allow_private: bool) -> None:
    """Refuse a subscription URL that could never be delivered to (400 naming `field`)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as err:
        raise ValidationFailed(f"{field} is not a valid URL", field=field) from err
    if parts.scheme not in schemes:
        allowed = " or ".join(f"{s}://" for s in schemes)
        raise ValidationFailed(f"{field} must start with {allowed}", field=field)
    if not parts.hostname or any(c.isspace() for c in url):
        raise ValidationFailed(f"{field} is not a valid URL", field=field)
    if not allow_private and literal_refused(parts.hostname):
        raise ValidationFailed(f"{field} points to a private or reserved address", field=field)


class GuardedResolver(AbstractResolver):
    """The default resolver, keeping only public addresses."""

    def __init__(self) -> None:
        self._inner = DefaultResolver()

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[dict[str, Any]]:
        infos = await self._inner.resolve(host, port, family)
        allowed = [i for i in infos if is_public(ipaddress.ip_address(i["host"]))]
        if not allowed:
            raise TargetRefused(f"{host} resolves to a private or reserved address")
        return allowed

    async def close(self) -> None:
        await self._inner.close()
