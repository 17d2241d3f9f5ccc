"""A reply as the parts it reaches its chat in, and what a ``Delivery`` knows was delivered.

A reply is sent as several messages one after another: its texts (``Complete.earlier``, then
its last text; blank ones are never sent), each as the messages the platform's port splits
it into (``OutboundPort.pieces``: Telegram's 4,096 characters, Discord's 2,000), and then the
files ``send_file`` gave it, in their order. Each message is a *part*, numbered in that
order, which depends only on the reply as recorded and the port's split (pure): a recovery
after a crash builds the same parts from the same events, so "the first k parts" means the
same messages before and after a restart. ``Delivery`` records each part but the last as it
goes (``DeliveryData.parts``) and skips, when the reply is handed over again, the parts
recorded already (``DeliveredMark``): a crash between two messages of a long text re-sends
only the one in flight. A text's first message quotes what the reply answers, as the whole
text did (the ports quote only a text's first message); a file quotes it only as the reply's
first part.

A file is sent here (``send_reply_file``): its bytes read from the session's attachments, a
file the platform refuses outright (too large) or whose bytes are gone told in a line
instead, which then is the part that reached the chat.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from duragent.frontkit.outbound import ChatRef, OutboundPort, OutgoingFile, SentMessage
from duragent.frontkit.outbox import UndeliveredError
from duragent.tools.send_file import ReplyFile
from duragent.turns import AttachmentNotFoundError, SessionInfo, TurnRunner

__all__ = ["DeliveredMark", "ReplyPart", "TextPiece", "reply_parts", "send_part", "send_reply_file"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TextPiece:
    """One message of one of a reply's texts, as the port split it (``OutboundPort.pieces``)."""

    text: str
    first: bool
    """The text's first message: it quotes what the reply answers, as the whole text did."""


ReplyPart = TextPiece | ReplyFile
"""One message of a reply: a message of one of its texts, or a file."""


def reply_parts(
    texts: tuple[str, ...],
    files: tuple[ReplyFile, ...],
    pieces: Callable[[str], tuple[str, ...]],
) -> tuple[ReplyPart, ...]:
    """The parts of a reply, in the order they are sent: its texts' messages, then its files.

    ``pieces`` is the port's split. Blank texts are left out (platforms refuse empty
    messages), so they are never counted.
    """
    parts: list[ReplyPart] = []
    for text in texts:
        if text.strip():
            parts.extend(TextPiece(piece, not n) for n, piece in enumerate(pieces(text)))
    return (*parts, *files)


async def send_part(
    turns: TurnRunner,
    outbound: OutboundPort,
    chat: ChatRef,
    session_id: str,
    part: ReplyPart,
    number: int,
    reply_to: str | None,
) -> SentMessage:
    """Send part ``number`` (from 1) of a reply; the message sent.

    A text's first message quotes ``reply_to``; a file, only as the reply's first part.
    """
    if isinstance(part, TextPiece):
        quote = reply_to if part.first else None
        return await outbound.send_text(chat, part.text, reply_to=quote)
    quote = reply_to if number == 1 else None
    return await send_reply_file(turns, outbound, chat, session_id, part, quote)


class DeliveredMark(NamedTuple):
    """What a session's chat has of its replies, as one ``Delivery`` knows it.

    ``seq``: the newest reply delivered whole (a high-water mark: every reply up to it is
    delivered). ``delivering``: the reply after it whose first ``parts`` parts reached the
    chat (0: none is part-way).
    """

    seq: int = 0
    delivering: int = 0
    parts: int = 0

    @classmethod
    def of(cls, info: SessionInfo) -> DeliveredMark:
        """The mark the session's records state."""
        return cls(info.last_delivered_seq, info.delivering_seq, info.delivered_parts)

    def parts_of(self, reply_seq: int) -> int | None:
        """How many parts of reply ``reply_seq`` reached the chat (None: all of it)."""
        if reply_seq <= self.seq:
            return None
        return self.parts if reply_seq == self.delivering else 0

    def whole(self, reply_seq: int) -> DeliveredMark:
        """The mark once reply ``reply_seq`` reached the chat whole."""
        seq = max(self.seq, reply_seq)
        return DeliveredMark(seq) if self.delivering <= seq else self._replace(seq=seq)

    def part(self, reply_seq: int, parts: int) -> DeliveredMark:
        """The mark once the first ``parts`` parts of reply ``reply_seq`` reached the chat."""
        done = self.parts_of(reply_seq)
        if done is None or parts <= done or reply_seq < self.delivering:
            return self
        return self._replace(delivering=reply_seq, parts=parts)


async def send_reply_file(
    turns: TurnRunner,
    outbound: OutboundPort,
    chat: ChatRef,
    session_id: str,
    file: ReplyFile,
    reply_to: str | None,
) -> SentMessage:
    """Send one of a reply's files; the message sent (the file, or the line told instead).

    A file refused outright (too large for the platform) or whose bytes are gone is told in
    a line instead; a refusal for a while is the outbox's to wait out (``UndeliveredError``
    once it gives up, raised).
    """
    name = file.file_name
    try:
        data = await turns.attachments.read(session_id, file.attachment.sha256)
        attachment = file.attachment
        outgoing = OutgoingFile(data, attachment.kind, name, attachment.mime, file.caption)
        return await outbound.send_file(chat, outgoing, reply_to=reply_to)
    except UndeliveredError:
        raise
    except Exception as exc:
        log.warning("session %s: %s took no %s: %s", session_id, chat.target, name, exc)
        lost = isinstance(exc, AttachmentNotFoundError)
        why = "its stored copy is missing" if lost else "the chat platform refused it"
        return await outbound.send_text(chat, f"(I could not send {name}: {why}.)")
