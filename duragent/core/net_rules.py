"""Which network addresses count as public, and the rules that let a tool reach others.

The ``web`` tool fetches URLs a model chose, and a model can be steered by anything it read,
so by default it reaches only public addresses: never loopback, private, link-local, shared
(CGNAT), unspecified, multicast, reserved or documentation ranges, nor an IPv6 address that
embeds such an IPv4 address (mapped ``::ffff:127.0.0.1``, compatible ``::127.0.0.1``, 6to4,
NAT64, Teredo). ``allow_private`` rules in ``agent.yaml`` open exactly the hosts, addresses or
networks (optionally one port) a user needs. This module is plain data and pure functions so
both the agent loader (to validate the rules) and the tool (to apply them) can use it.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

__all__ = ["AllowRule", "IPAddress", "non_public_reason", "parse_allow_rule"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$"
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def _v4_reason(address: ipaddress.IPv4Address) -> str | None:
    if address.is_unspecified or address in ipaddress.IPv4Network("0.0.0.0/8"):
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private or not address.is_global:
        return "a private or reserved address"
    return None


def non_public_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public unicast address, or ``None`` when it is one."""
    if isinstance(address, ipaddress.IPv4Address):
        return _v4_reason(address)
    embedded = address.ipv4_mapped or address.sixtofour
    if embedded is None and address.teredo is not None:
        embedded = address.teredo[1]
    if embedded is None and (address in _NAT64 or address in _V4_COMPATIBLE):
        embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if embedded is not None:
        reason = _v4_reason(embedded)
        if reason is not None:
            return f"{reason} ({embedded}) inside an IPv6 address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local or address.is_site_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private or not address.is_global:
        return "a private or reserved address"
    return None


@dataclass(frozen=True, slots=True)
class AllowRule:
    """One ``allow_private`` entry: a network or a host name, on one port or on all."""

    text: str
    network: IPNetwork | None = None
    host: str | None = None
    port: int | None = None

    def allows_address(self, address: IPAddress, port: int) -> bool:
        """Whether this rule opens ``address`` on ``port``."""
        if self.network is None or (self.port is not None and self.port != port):
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.version == self.network.version and address in self.network

    def allows_host(self, host: str, port: int) -> bool:
        """Whether this rule opens the host name ``host`` (as written in the URL) on ``port``."""
        if self.host is None or (self.port is not None and self.port != port):
            return False
        return host.lower().rstrip(".") == self.host


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{entry!r}: the port must be a number from 1 to 65535")
    return int(text)


def parse_allow_rule(entry: str) -> AllowRule:
    """Parse ``127.0.0.1:3000``, ``10.0.0.0/8``, ``[::1]:8080``, ``wiki.internal`` or ``host:port``.

    Raises:
        ValueError: naming the entry and the expected forms.
    """
    text = entry.strip()
    port: int | None = None
    if text.startswith("["):
        inside, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"{entry!r}: write an IPv6 address with a port as [::1]:8080")
        text, port = inside, (_port(rest[1:], entry) if rest else None)
    elif text.count(":") == 1:
        text, raw_port = text.split(":")
        port = _port(raw_port, entry)
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        host = text.lower().rstrip(".")
        if not _HOSTNAME.match(host):
            raise ValueError(
                f"{entry!r} is not an address, network or host name; use forms like "
                "127.0.0.1:3000, 10.0.0.0/8, [::1]:8080 or wiki.internal"
            ) from None
        return AllowRule(text=entry, host=host, port=port)
    return AllowRule(text=entry, network=network, port=port)
