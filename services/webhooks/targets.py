"""Where deliveries may go: URL rules and the SSRF guard on the address actually connected to.

Three layers, each on what the HTTP client really uses:

1. `target_host` checks a URL's host as written and as the client will connect to it (yarl
   normalizes hosts: full-width digits, ideographic dots and other compatibility forms become
   ASCII, so `１２７.０.０.１` would be 127.0.0.1). A host that is not already in the form the
   client uses, or is neither a valid DNS name (IDNA 2008 included) nor an IP address, is
   refused at creation (docs/api.md) and, for rows written before that rule, at delivery.
2. `GuardedResolver` resolves names and keeps only public addresses (DNS rebinding gains
   nothing: the connector connects only to what it returned).
3. `guarded_socket` is the connector's socket factory: every address it is asked to connect to,
   an IP literal (which never reaches a resolver) or a resolved one, passes `is_public` first.

Refusals say "target refused" and nothing more: never the address a name resolved to.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
from typing import Any
from urllib.parse import urlsplit

import idna
import yarl
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from libs.common.errors import ValidationFailed

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

REFUSED = "target refused"
# IDNA's label separators besides ".": UTS 46 maps them to "." (yarl does).
_OTHER_DOTS = ("\u3002", "\uff0e", "\uff61")
# A last label that reads as a number makes the whole host an IPv4 address to URL parsers
# and to getaddrinfo (`127.1`, `0x7f.1`, `2130706433`): only dotted quads are taken.
_NUMERIC_LABEL = re.compile(r"(0[xX][0-9a-fA-F]*|[0-9]+)")

# Ranges of the IANA special-purpose address registries (IPv4 and IPv6, as of 2025) that
# Python 3.11's `is_global` lets through, and other ranges no delivery should reach. Whole
# blocks are refused even where the registry marks a few addresses inside them globally
# reachable (the PCP/TURN anycast addresses in 192.0.0.0/24 and 2001::/23): a webhook
# receiver is never one of them.
_NOT_PUBLIC = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "100.64.0.0/10",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "2001::/23",  # IETF protocol assignments (Teredo, benchmarking, ORCHID, ...)
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation (RFC 9637)
    )
)
_GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # embeds an IPv4 address in its last 32 bits


class TargetRefused(OSError):
    """The address (or host) is one deliveries may not go to."""

    def __init__(self) -> None:
        super().__init__(REFUSED)


def is_public(ip: IpAddress) -> bool:
    """True only for a globally reachable unicast address: loopback, private, link-local,
    site-local, multicast, reserved, documentation, shared, benchmarking and the other
    special-purpose ranges are refused, and addresses that embed an IPv4 address (mapped,
    6to4, NAT64) are judged by it."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            return False
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return is_public(embedded)
        # Only 2000::/3 is allocated for global unicast: this refuses ::/8, 64:ff9b:1::/48,
        # 100::/64, 5f00::/16, fc00::/7, fe80::/10, fec0::/10, ff00::/8 and all that is unassigned.
        if ip not in _GLOBAL_UNICAST_V6:
            return False
    if any(ip in net for net in _NOT_PUBLIC if net.version == ip.version):
        return False
    return ip.is_global and not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


def ip_literal(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _ascii_host(host: str) -> str:
    """The host (as `urlsplit` gives it, lowercased, brackets removed) in the ASCII form the
    client connects to; ValueError when it is not a valid IP address or DNS name, or is
    written with characters the client would map to others."""
    if not host.isascii():
        if unicodedata.normalize("NFKC", host) != host or any(d in host for d in _OTHER_DOTS):
            raise ValueError("host uses compatibility characters")
    ip = ip_literal(host)
    if ip is not None:
        if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
            raise ValueError("zone ids are not allowed")
        return str(ip)
    if _NUMERIC_LABEL.fullmatch(host.rstrip(".").rpartition(".")[2]):
        raise ValueError("a host ending in a number must be a dotted-quad IPv4 address")
    if len(host.rstrip(".")) > 253:
        raise ValueError("host name too long")
    try:
        return idna.encode(host).decode("ascii")  # IDNA 2008: label lengths, LDH, A-labels
    except (idna.IDNAError, UnicodeError) as err:
        raise ValueError(f"not a valid DNS name: {err}") from None


def target_host(url: str) -> tuple[str, IpAddress | None]:
    """The host of `url` as the HTTP client will connect to it, and its address when it is an
    IP literal; ValueError when the host is unusable (see the module's docstring)."""
    host = urlsplit(url).hostname
    if not host:
        raise ValueError("no host")
    ascii_host = _ascii_host(host)
    # The client's own reading of the URL must name the very same host.
    try:
        client_host = yarl.URL(url).raw_host or ""
    except (TypeError, ValueError) as err:  # UnicodeError (IDNA) is a ValueError
        raise ValueError(f"the HTTP client refuses the URL: {err}") from None
    ip = ip_literal(ascii_host)
    if ip is not None:
        if ip_literal(client_host) != ip:
            raise ValueError("the HTTP client reads another host")
    elif client_host != ascii_host:
        raise ValueError("the HTTP client reads another host")
    return ascii_host, ip


def canonical_host(host: str) -> str:
    """One spelling per host, for the per-host share: lower case, no trailing dot, IDNs as
    A-labels (punycode), IP addresses in their compressed form (IPv6 in brackets). A name the
    IDNA codec refuses (only rows older than the host rules hold one) is kept lower-cased."""
    host = host.strip("[]")
    ip = ip_literal(host)
    if ip is not None:
        return f"[{ip}]" if isinstance(ip, ipaddress.IPv6Address) else str(ip)
    host = host.lower().rstrip(".")
    if host.isascii():  # A-labels included: lower case is their one spelling
        return host
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        return host


def host_key(url: str) -> str:
    """`host:port` of a target, the host canonical and the port always written (443 for
    https, 80 for http when the URL names none): the unit of the per-host concurrency share,
    for deliveries and test pings alike, so `https://Example.COM./` and
    `https://example.com:443/` share one."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # only rows older than the URL rules: their attempts are refused
        port = None
    port = port or (443 if parts.scheme == "https" else 80)
    return f"{canonical_host(parts.hostname or '')}:{port}"


def check_target_url(
    url: str, *, field: str, schemes: tuple[str, ...], allow_private: bool
) -> None:
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
    try:
        _, ip = target_host(url)
    except ValueError as err:
        raise ValidationFailed(
            f"{field}: the host is not a valid DNS name or IP address"
            " (written as the HTTP client reads it)",
            field=field,
        ) from err
    if not allow_private and ip is not None and not is_public(ip):
        raise ValidationFailed(f"{field} points to a private or reserved address", field=field)


def guarded_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    """The delivery connector's socket factory: a socket only for a public address."""
    family, type_, proto, _, address = addr_info
    if not is_public(ipaddress.ip_address(address[0])):
        raise TargetRefused()
    return socket.socket(family=family, type=type_, proto=proto)


class GuardedResolver(AbstractResolver):
    """The default resolver, keeping only public addresses."""

    def __init__(self) -> None:
        self._inner = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        infos = await self._inner.resolve(host, port, family)
        allowed = [i for i in infos if is_public(ipaddress.ip_address(i["host"]))]
        if not allowed:
            raise TargetRefused()
        return allowed

    async def close(self) -> None:
        await self._inner.close()
