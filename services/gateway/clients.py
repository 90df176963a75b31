"""The client address that the per-address window counts.

Reached directly, the client is the connection's peer. Behind a reverse proxy (an ingress
controller, a load balancer) every peer is the proxy, so all clients would share one window:
with `TRUSTED_PROXIES` (addresses or CIDR ranges), a peer in those ranges is a proxy and the
client is the right-most `X-Forwarded-For` entry that is not itself a trusted proxy. Entries to
its left are whatever the client wrote and are never believed; a malformed entry where the
client should be leaves the peer as the client.
"""

from __future__ import annotations

import ipaddress

from aiohttp import web


class ClientAddress:
    def __init__(self, trusted: tuple[str, ...]) -> None:
        self._networks = tuple(ipaddress.ip_network(n, strict=False) for n in trusted)

    def __call__(self, request: web.Request) -> str:
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
