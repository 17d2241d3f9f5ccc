"""The outbound port: what a front end can do in a chat, whatever the platform.

Telegram, Discord and the scheduler's deliveries all need the same few actions — send text,
show "typing…", ask a person to approve a tool call, edit a message already sent — and the
kit's glue (``Delivery``, ``ChatTurns``) is written once against this ``Protocol``. A chat
gateway implements it over its SDK; tests use ``MemoryOutbound``. HTTP does not implement it:
an HTTP reply is the response to its request, not a message pushed into a chat.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["ChatRef", "OutboundPort", "SentMessage"]


@dataclass(frozen=True, slots=True)
class ChatRef:
    """A chat on a platform: the gateway's name and the platform's id for the chat."""

    gateway: str
    chat_id: str

    @property
    def target(self) -> str:
        """The chat as a delivery event names it (``telegram:12345``)."""
        return f"{self.gateway}:{self.chat_id}"


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A message the front end sent, as the platform identifies it (for ``edit``)."""

    chat: ChatRef
    message_id: str


class OutboundPort(Protocol):
    """What the kit asks a platform to do (see module docstring).

    Each call may raise the platform's own errors; the kit lets them through, except for
    ``send_typing``, which is a courtesy whose failure never ends a turn.
    """

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """Send ``text`` (split as the platform needs), as a reply to ``reply_to`` if given."""
        ...

    async def send_typing(self, chat: ChatRef) -> None:
        """Show that an answer is being prepared (platforms expire it after a few seconds)."""
        ...

    async def ask_approval(
        self, chat: ChatRef, *, session_id: str, call_id: str, command: str
    ) -> SentMessage:
        """Ask a person to decide on ``command`` (buttons for the ``DECISIONS``, say)."""
        ...

    async def edit(self, message: SentMessage, text: str) -> None:
        """Replace the text of a message sent earlier (an approval once it is decided)."""
        ...

    async def answer_button(self, callback_id: str, text: str | None = None) -> None:
        """Acknowledge a button press, with a short toast ``text`` if given."""
        ...
