"""The outbound port: what a front end can do in a chat, whatever the platform.

Telegram, Discord and the scheduler's deliveries all need the same few actions — send text or
a file, show "typing…", ask a person to approve a tool call, edit a message already sent — and
the kit's glue (``Delivery``, ``ChatTurns``) is written once against this ``Protocol``. A chat
gateway implements it over its SDK; tests use ``MemoryOutbound``. HTTP does not implement it:
an HTTP reply is the response to its request, not a message pushed into a chat.
``ChatRef`` is ``core.caller``'s, the chat reference every layer shares (re-exported here).

A text too long for one message is split by the port (``pieces``), the platform's way
(Telegram formats, then cuts at 4,096 characters; Discord cuts at 2,000). ``Delivery`` asks
for the pieces and sends each with a ``send_text`` call of its own, so each message of a
reply is recorded as delivered on its own (``reply_parts``): a crash between two messages of
a long text re-sends only the one in flight.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from duragent.core.attachments import AttachmentKind
from duragent.core.caller import ChatRef
from duragent.observability.metrics import Metrics

__all__ = ["ChatRef", "MeteredOutbound", "OutboundPort", "OutgoingFile", "SentMessage", "metered"]


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A message the front end sent, as the platform identifies it (for ``edit``)."""

    chat: ChatRef
    message_id: str


@dataclass(frozen=True, slots=True)
class OutgoingFile:
    """A file to send into a chat: its bytes, what it is, and the caption it goes out with."""

    data: bytes
    kind: AttachmentKind  # a photo, a voice note…: how the platform shows it
    name: str
    mime: str
    caption: str | None = None


class OutboundPort(Protocol):
    """What the kit asks a platform to do (see module docstring).

    Each call may raise the platform's own errors; the kit lets them through, except for
    ``send_typing``, which is a courtesy whose failure never ends a turn.
    """

    def pieces(self, text: str) -> tuple[str, ...]:
        """``text`` as the messages ``send_text`` sends it, in order (none for a blank text).

        Pure: the same text gives the same pieces in any process (a recovery after a restart
        counts them as the crashed process did). A piece is sent by ``send_text`` as the one
        message it is, exactly as in the whole text's send (a port whose pieces are no longer
        the text as written, Telegram's formatted HTML, knows its own pieces apart).
        """
        ...

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """Send ``text`` as its ``pieces``, the first as a reply to ``reply_to`` if given.

        Returns the last message sent.
        """
        ...

    async def send_file(
        self, chat: ChatRef, file: OutgoingFile, *, reply_to: str | None = None
    ) -> SentMessage:
        """Send a file as its ``kind`` (a photo, a voice note…), in the chat's line as a reply is.

        A platform that refuses the file as ``kind`` may send it as a document instead.
        """
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


class MeteredOutbound:
    """An ``OutboundPort`` that counts the messages sent through it (``observability.metrics``).

    Wrapped once around a gateway's port where the kit and the scheduler get it, so every
    platform is counted the same way; a send that raises counts as ``failed`` and is raised.
    """

    def __init__(self, inner: OutboundPort, gateway: str, metrics: Metrics) -> None:
        self.inner = inner
        self._ok = metrics.gateway_sends.labels(gateway, "ok")
        self._failed = metrics.gateway_sends.labels(gateway, "failed")

    def pieces(self, text: str) -> tuple[str, ...]:
        """The inner port's (see ``OutboundPort.pieces``)."""
        return self.inner.pieces(text)

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """Send and count (see ``OutboundPort.send_text``)."""
        try:
            sent = await self.inner.send_text(chat, text, reply_to=reply_to)
        except BaseException:
            self._failed.inc()
            raise
        self._ok.inc()
        return sent

    async def send_file(
        self, chat: ChatRef, file: OutgoingFile, *, reply_to: str | None = None
    ) -> SentMessage:
        """Send and count (see ``OutboundPort.send_file``)."""
        try:
            sent = await self.inner.send_file(chat, file, reply_to=reply_to)
        except BaseException:
            self._failed.inc()
            raise
        self._ok.inc()
        return sent

    async def send_typing(self, chat: ChatRef) -> None:
        """Not counted: a courtesy, not a message."""
        await self.inner.send_typing(chat)

    async def ask_approval(
        self, chat: ChatRef, *, session_id: str, call_id: str, command: str
    ) -> SentMessage:
        """Send the approval request and count it."""
        try:
            sent = await self.inner.ask_approval(
                chat, session_id=session_id, call_id=call_id, command=command
            )
        except BaseException:
            self._failed.inc()
            raise
        self._ok.inc()
        return sent

    async def edit(self, message: SentMessage, text: str) -> None:
        """Not counted: no new message."""
        await self.inner.edit(message, text)

    async def answer_button(self, callback_id: str, text: str | None = None) -> None:
        """Not counted: no new message."""
        await self.inner.answer_button(callback_id, text)


def metered(port: OutboundPort, gateway: str, metrics: Metrics | None) -> OutboundPort:
    """``port`` counted into ``metrics`` (as is when metrics are off or it is counted already)."""
    if metrics is None or isinstance(port, MeteredOutbound):
        return port
    return MeteredOutbound(port, gateway, metrics)
