"""Who really sent a request behind reverse proxies: SIFT_TRUSTED_PROXIES and X-Forwarded-*."""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from aiohttp import web
from aiohttp_remotes import XForwardedFiltered

from bot.settings_check import Network

__all__ = ["Client", "TrustedProxies", "base_url", "client_of"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Client:
    """The person's side of a request: their address, and how they reached the first proxy."""

    address: str  # an IP address, or "?" when the transport names none
    scheme: str  # "http" or "https"
    host: str  # the Host they asked for (a proxy's X-Forwarded-Host when trusted)

    @property
    def secure(self) -> bool:
        return self.scheme == "https"


def client_of(request: web.Request) -> Client:
    """The real client of `request`: the one function every log line, limit and cookie asks.

    The middleware of `TrustedProxies` has already replaced the proxy's address, scheme and
    host with what a trusted proxy said; from anyone else the headers were ignored."""
    return Client(request.remote or "?", request.scheme, request.host)


def base_url(request: web.Request, public_url: str) -> str:
    """Where browsers reach Sift: SIFT_PUBLIC_URL when set, else as this request came in."""
    if public_url:
        return public_url.rstrip("/")
    client = client_of(request)
    return f"{client.scheme}://{client.host}"


class TrustedProxies:
    """X-Forwarded-For, -Proto and -Host are believed only when the connection itself comes
    from one of `networks`. The client is then the right-most X-Forwarded-For address that is
    not a trusted proxy (aiohttp-remotes' XForwardedFiltered walks the chain); from any other
    peer the headers change nothing, so a forged X-Forwarded-For cannot pose as someone else.
    """

    def __init__(self, networks: Iterable[Network]) -> None:
        self.networks = tuple(networks)
        self._filtered = XForwardedFiltered(list(self.networks)) if self.networks else None

    def trusts(self, address: str | None) -> bool:
        if not address or not self.networks:
            return False
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped  # a dual-stack socket shows IPv4 peers as ::ffff:a.b.c.d
        return any(ip in network for network in self.networks)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self._filtered is None or not self.trusts(_peer(request)):
            return await handler(request)
        return await self._filtered.middleware(request, handler)


def _peer(request: web.Request) -> str | None:
    """The address of the connection's other end (never a header)."""
    peername = request.transport.get_extra_info("peername") if request.transport else None
    if isinstance(peername, tuple | list) and peername:
        return str(peername[0])
    return None
