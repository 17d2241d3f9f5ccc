"""Signed requests from one node to another: the cluster's single hop scheme.

With a shared store a request or a chat message sometimes belongs on the node that owns a
session (``store.ownership``). Two things carry it there: the HTTP front end proxies a
request (``gateways/http/cluster/forwarding.py``), and the relay hands over a chat message
that reached a node by polling or a load-balanced plugin (``cluster/relay.py``). Both go
through this module, so there is one way to sign, one way to decide that a node is gone, and
one client:

- **Signature**: ``HMAC-SHA256`` with the deployment's key (``NodeDirectory.secret``) over the
  method, the path and query, the time, the sender, a request key and the body's hash. The
  receiver checks it in constant time and refuses a hop older than a lease (its sender gave
  up on it meanwhile and served it itself).
- **Live or gone**: a node whose heartbeat is younger than two renewal periods
  (``stale_after``) is live; one not registered, stale, refusing connections, or going stale
  while a hop waits on it (a paused process) is gone, and its sessions are taken over once
  their leases run out.
- **Addresses** come from the ``nodes`` table, never from a request: a hop is not an open
  proxy.

In ``cluster`` (not the HTTP front end) because front ends never import each other, and the
sender of a chat message is a chat gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import time

import httpx

from duragent.store import NodeDirectory, NodeRecord

__all__ = [
    "FORWARDED_AT",
    "FORWARDED_BY",
    "MOVED",
    "REQUEST_KEY",
    "SIGNATURE",
    "Hops",
    "sign",
]

log = logging.getLogger(__name__)

FORWARDED_BY = "x-duragent-forwarded-by"
FORWARDED_AT = "x-duragent-forwarded-at"
SIGNATURE = "x-duragent-signature"
MOVED = "x-duragent-moved"
"""On a 503: the receiver does not own the session either (it names who does); look again."""
REQUEST_KEY = "x-duragent-request-key"


def sign(
    key: bytes, method: str, target: str, at: str, node: str, body: bytes, request_key: str = ""
) -> str:
    """The signature of one hop (hex HMAC-SHA256)."""
    digest = hashlib.sha256(body).hexdigest()
    text = f"{method}\n{target}\n{at}\n{node}\n{request_key}\n{digest}".encode()
    return hmac.new(key, text, hashlib.sha256).hexdigest()


class Hops:
    """This node's signed requests to other nodes (see module docstring)."""

    def __init__(self, nodes: NodeDirectory, lease_seconds: float) -> None:
        self.nodes = nodes
        self.lease_seconds = lease_seconds
        self.stale_after = 2 * lease_seconds / 3
        """A heartbeat older than this (two renewal periods) means the node is gone."""
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=2.0))
        self._key: bytes | None = None

    @property
    def node_id(self) -> str:
        """This node's id (the ``FORWARDED_BY`` of its hops)."""
        return self.nodes.node_id

    async def aclose(self) -> None:
        """Close the connections to other nodes."""
        await self.client.aclose()

    async def secret(self) -> bytes:
        """The deployment's signing key (read once from the store)."""
        if self._key is None:
            self._key = await asyncio.to_thread(self.nodes.secret)
        return self._key

    async def live_node(self, node_id: str) -> NodeRecord | None:
        """``node_id``'s record if it is another node and live; None when it is gone."""
        if node_id == self.nodes.node_id:
            return None
        node = await asyncio.to_thread(self.nodes.lookup, node_id)
        if node is None or node.heartbeat_age > self.stale_after:
            return None
        return node

    async def signed(
        self, method: str, target: str, body: bytes, request_key: str = ""
    ) -> dict[str, str]:
        """The headers that make a request to ``target`` a hop from this node."""
        at = f"{time.time():.3f}"
        node = self.nodes.node_id
        signature = sign(await self.secret(), method, target, at, node, body, request_key)
        headers = {FORWARDED_BY: node, FORWARDED_AT: at, SIGNATURE: signature}
        if request_key:
            headers[REQUEST_KEY] = request_key
        return headers

    async def check(
        self, method: str, target: str, by: str, at: str, given: str, body: bytes, request_key: str
    ) -> float | None:
        """The hop's age in seconds if its signature is right, else None."""
        expected = sign(await self.secret(), method, target, at, by, body, request_key)
        if not hmac.compare_digest(given, expected):
            return None
        try:
            return time.time() - float(at)
        except ValueError:
            return None

    async def send_watching(
        self, outgoing: httpx.Request, node: NodeRecord
    ) -> httpx.Response | None:
        """Send to ``node`` (streamed); None when it cannot be reached or stops heartbeating."""
        sending = asyncio.ensure_future(self.client.send(outgoing, stream=True))
        try:
            while True:
                done, _ = await asyncio.wait({sending}, timeout=self.lease_seconds / 3)
                if done:
                    return sending.result()
                now = await asyncio.to_thread(self.nodes.lookup, node.node_id)
                if now is None or now.heartbeat_age > self.stale_after:
                    log.warning(
                        "node %s stopped answering; its sessions are taken over", node.node_id
                    )
                    return None
        except httpx.TransportError as exc:
            log.warning("node %s unreachable (%s); its sessions are taken over", node.node_id, exc)
            return None
        finally:
            if not sending.done():
                sending.cancel()
                with contextlib.suppress(BaseException):
                    await sending
