"""``ChatGateway``: a chat platform's front end as the runtime runs it.

Every chat gateway (Telegram now; Discord and external plugins next) is one service of
``duragent serve`` with a name, a state for ``/readyz`` and, in webhook mode, a path the HTTP
front end serves for it. The runtime keeps them by name and knows nothing else about them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from duragent.frontkit.outbound import OutboundPort
from duragent.lifecycle.services import Service

__all__ = ["ChatGateway", "WebhookReceiver"]

WebhookReceiver = Callable[[bytes, Mapping[str, str]], Awaitable[int]]
"""A webhook request's body and headers (lower-case names) to the status to answer."""


class ChatGateway(Service, Protocol):
    """A chat platform's front end as the runtime sees it (``gateways.<name>``)."""

    name: str
    state: str
    """For ``/readyz``: ``starting``, ``running``, ``reconnecting: …``, ``failed: …``…"""
    webhook: tuple[str, WebhookReceiver] | None
    """Webhook mode: the path HTTP serves for it, and what answers its requests."""

    @property
    def outbound(self) -> OutboundPort | None:
        """What sends into its chats once started (None before): the scheduler delivers with it."""
        ...
