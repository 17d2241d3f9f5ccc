"""Which ``duragent serve`` process ("node") made a call to a shared fake chat platform.

A cluster test runs several serve processes against ONE fake Telegram and ONE fake Discord,
and must tell which process made which call (who polled, who sent, who held the websocket).
The platforms' wire formats carry nothing that says so, so the node says it in the address
it is given: node ``b``'s base URL is the fake's URL plus ``/n/b``, and the fakes serve every
platform route under ``/n/{node}`` exactly as without the prefix, recording the node with the
call. The default node, ``a``, needs no prefix, so a single-process test and every existing
caller stay as they were.

    Telegram ``gateways.telegram.base_url``: ``http://127.0.0.1:PORT/n/b``
    (PTB requests ``/n/b/bot<token>/<method>`` and ``/n/b/file/bot<token>/<path>``)
    Discord ``gateways.discord.base_url``: ``http://127.0.0.1:PORT/n/b``
    (discord.py requests ``/n/b/api/v10/...`` and connects to ``ws://.../n/b/gateway``)
"""

from __future__ import annotations

from aiohttp import web

__all__ = ["DEFAULT_NODE", "NODE_PREFIX", "node_of", "node_prefix"]

DEFAULT_NODE = "a"
"""The node of a call made without a ``/n/{node}`` prefix."""
NODE_PREFIX = "/n/{node}"
"""The route prefix naming a node (aiohttp's pattern: one path segment)."""


def node_of(request: web.Request) -> str:
    """The node a request came from: its ``/n/{node}`` prefix, else ``DEFAULT_NODE``."""
    return request.match_info.get("node", DEFAULT_NODE)


def node_prefix(node: str) -> str:
    """The path prefix of a node's URLs (``/n/b``; none for the default node).

    For the URLs a fake hands back (a gateway's websocket address), so the node's next
    connection is attributed to it too.
    """
    return "" if node == DEFAULT_NODE else f"/n/{node}"
