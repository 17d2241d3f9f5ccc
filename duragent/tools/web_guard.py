"""Where the ``web`` tool may connect: public addresses only, unless ``allow_private`` says so.

The check sits at the one place every connection passes through, httpcore's network backend:
httpx hands it the host and port of each origin, for the first request and for every redirect.
The backend resolves the name itself, refuses the whole host if any of its addresses is not
public (and not opened by a rule), then connects to an address it checked. The connection can
therefore never go to an address other than the one checked (no DNS-rebinding window between
check and connect), while httpx keeps the URL's host for the ``Host`` header and TLS SNI,
which it sets independently of the address connected to.

After connecting, a socket whose local and peer addresses are equal reaches this machine
itself (the kernel routes a connection to one of its own addresses that way); that catches
the server's own public or LAN address, which no list of ranges knows.

httpx builds its connection pool inside ``AsyncHTTPTransport.__init__`` without a parameter
for the network backend, so :class:`GuardedTransport` replaces that pool with one built the
same way plus the guard. With a transport of our own, httpx does not apply ``HTTP_PROXY``
settings, so fetches go direct and the check applies to the real destination.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from collections.abc import Iterable, Sequence
from typing import Any

import httpcore
import httpx

from duragent.core.net_rules import AllowRule, IPAddress, non_public_reason

__all__ = ["ForbiddenAddress", "GuardedBackend", "GuardedTransport"]


class ForbiddenAddress(Exception):
    """The URL's host resolves to an address the web tool may not reach."""


def _as_address(text: str) -> IPAddress:
    return ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone id


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's default backend, connecting only to addresses the rules permit."""

    def __init__(self, rules: Sequence[AllowRule]) -> None:
        self._rules = tuple(rules)
        self._inner = httpcore.AnyIOBackend()

    def _host_allowed(self, host: str, port: int) -> bool:
        return any(rule.allows_host(host, port) for rule in self._rules)

    def _address_allowed(self, address: IPAddress, port: int) -> bool:
        return any(rule.allows_address(address, port) for rule in self._rules)

    async def _resolve(self, host: str, port: int) -> list[IPAddress]:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        addresses: list[IPAddress] = []
        for info in infos:
            address = _as_address(str(info[4][0]))
            if address not in addresses:
                addresses.append(address)
        return addresses

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Resolve ``host``, check every address, connect to a checked one."""
        by_name = self._host_allowed(host, port)
        try:
            addresses = await self._resolve(host, port)
        except httpcore.ConnectError:
            name = host.lower().rstrip(".")
            if by_name or not (name == "localhost" or name.endswith(".localhost")):
                raise
            raise ForbiddenAddress(  # RFC 6761: these names are loopback wherever they resolve
                f"{host} names this machine (loopback); the web tool reaches only public "
                "addresses unless allow_private in agent.yaml lists it"
            ) from None
        if not by_name:
            for address in addresses:
                reason = non_public_reason(address)
                if reason is not None and not self._address_allowed(address, port):
                    raise ForbiddenAddress(
                        f"{host} resolves to {address}, {reason}; the web tool reaches only "
                        "public addresses unless allow_private in agent.yaml lists it"
                    )
        last_error: Exception | None = None
        for address in addresses:
            try:
                stream = await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
                continue
            if not by_name and not self._address_allowed(address, port):
                await self._refuse_own_address(stream, host, address)
            return stream
        if last_error is not None:
            raise last_error
        raise httpcore.ConnectError(f"{host} has no address")

    async def _refuse_own_address(
        self, stream: httpcore.AsyncNetworkStream, host: str, address: IPAddress
    ) -> None:
        local_addr = stream.get_extra_info("client_addr")
        peer_addr = stream.get_extra_info("server_addr")
        if not (isinstance(local_addr, tuple) and isinstance(peer_addr, tuple)):
            return
        try:
            local = _as_address(str(local_addr[0]))
            peer = _as_address(str(peer_addr[0]))
        except ValueError:
            return
        if local == peer:
            await stream.aclose()
            raise ForbiddenAddress(
                f"{host} resolves to {address}, an address of this machine; the web tool "
                "reaches only other hosts unless allow_private in agent.yaml lists it"
            )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Never used: the transport has no ``uds``; refused so it cannot become a bypass."""
        raise ForbiddenAddress("the web tool does not connect to Unix sockets")

    async def sleep(self, seconds: float) -> None:
        """The retry back-off sleep httpcore asks for."""
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's default transport whose connections go through a :class:`GuardedBackend`."""

    def __init__(self, rules: Sequence[AllowRule]) -> None:
        context = _ssl_context()
        super().__init__(verify=context, trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context,
            max_connections=10,
            max_keepalive_connections=0,
            network_backend=GuardedBackend(rules),
        )


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """The verifying TLS context, built once: loading the CA bundle takes ~80 ms of loop time."""
    return httpx.create_ssl_context(trust_env=False)
