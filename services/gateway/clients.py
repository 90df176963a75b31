"""The client address that the per-address window counts.

Reached directly, the client is the connection's peer. Behind a reverse proxy (an ingress
controller, a load balancer) every peer is the proxy, so all clients would share one window:
with `TRUSTED_PROXIES` (addresses or CIDR ranges), a peer in those ranges is a proxy and the
client is the right-most `X-Forwarded-For` entry that is not itself a trusted proxy. Entries to
its left are whatever the client wrote and are never believed; a malformed entry where the
client should be leaves the peer as the client.

An IPv6 client is counted by its /64: one host (one home, one cloud instance) is routinely given
a whole /64 and may send every request from another of its 2^64 addresses, so a window per full
address would be no window. An IPv4 address written as IPv6 (`::ffff:192.0.2.1`) is that IPv4
address.
"""

from __future__ import annotations

import ipaddress

from aiohttp import web


class ClientAddress:
    def __init__(self, trusted: tuple[str, ...]) -> None:
        self._networks = tuple(ipaddress.ip_network(n, strict=False) for n in trusted)

    def __call__(self, request: web.Request) -> str:
        """The client, as its window counts it: an IPv4 address, or an IPv6 /64."""
        return counted(self._client(request))

    def _client(self, request: web.Request) -> str:
        peer = request.remote or "unknown"
        if not self._networks or not self._trusted(peer):
            return peer
        hops = [
            hop.strip()
            for value in request.headers.getall("X-Forwarded-For", ())
            for hop in value.split(",")
        ]
        for hop in reversed(hops):
            if not self._trusted(hop):
                return hop if _is_address(hop) else peer
        return peer

    def _trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in net for net in self._networks)


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def counted(address: str) -> str:
    """What the per-address window counts for `address`: itself (IPv4, or anything that is not
    an address), or its /64 (IPv6), e.g. `2001:db8:1:2::/64`."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv4Address):
        return address
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.IPv6Network((ip, 64), strict=False))
