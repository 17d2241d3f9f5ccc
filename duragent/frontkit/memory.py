"""``MemoryOutbound``: an ``OutboundPort`` that keeps what it was asked to do, for tests.

Shipped with the kit (not in ``duragent.testing``) because it is a plain implementation of
the port, with no servers or files: tests of a gateway, of the scheduler's deliveries and of
the kit itself drive the real glue through it and read ``actions`` back. With ``text_limit``
it splits a long text into messages as a platform does (plain cuts every ``text_limit``
characters), so a reply of several messages can be tested without a platform's fake.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from duragent.core.attachments import AttachmentKind
from duragent.frontkit.outbound import ChatRef, OutgoingFile, SentMessage

__all__ = ["MemoryOutbound", "Sent"]


@dataclass(frozen=True, slots=True)
class Sent:
    """One action the port was asked to perform.

    ``kind`` is ``text``, ``file``, ``typing``, ``approval``, ``edit`` or ``toast`` (a button
    press answered: its ``message_id`` is the press's id and its chat is ``_NO_CHAT``);
    ``text`` is the text sent (the command, for an approval; the caption, for a file);
    ``call_id`` is the approval's call. A file's bytes, name, type and kind (``photo``…, as
    ``AttachmentKind`` names it) are in ``data``, ``name``, ``mime`` and ``media``.
    """

    kind: str
    chat: ChatRef
    text: str = ""
    message_id: str | None = None
    reply_to: str | None = None
    call_id: str | None = None
    data: bytes | None = None
    name: str | None = None
    mime: str | None = None
    media: AttachmentKind | None = None


_NO_CHAT = ChatRef("", "")
"""A toast answers a press, not a chat."""


@dataclass(slots=True)
class MemoryOutbound:
    """Records every action in order; message ids are ``m1``, ``m2``… per port."""

    actions: list[Sent] = field(default_factory=list)
    fail_typing: bool = False
    """Raise from ``send_typing`` (a platform that refuses the courtesy)."""
    refuse_files: int = 0
    """Refuse that many ``send_file`` calls outright (a platform that will not take a file)."""
    text_limit: int | None = None
    """Characters a text message holds (None: any text is one message)."""
    _next: int = 0

    def texts(self, chat: ChatRef | None = None) -> list[str]:
        """The texts sent (to ``chat``, when given), in order."""
        return [
            a.text for a in self.actions if a.kind == "text" and (chat is None or a.chat == chat)
        ]

    def files(self, chat: ChatRef | None = None) -> list[Sent]:
        """The files sent (to ``chat``, when given), in order."""
        return [a for a in self.actions if a.kind == "file" and (chat is None or a.chat == chat)]

    def of_kind(self, kind: str) -> list[Sent]:
        """The actions of one kind, in order."""
        return [a for a in self.actions if a.kind == kind]

    def _message(self, chat: ChatRef) -> SentMessage:
        self._next += 1
        return SentMessage(chat, f"m{self._next}")

    def pieces(self, text: str) -> tuple[str, ...]:
        """``text`` cut every ``text_limit`` characters; blank pieces are not messages."""
        size = self.text_limit or max(len(text), 1)
        cut = (text[start : start + size] for start in range(0, len(text), size))
        return tuple(piece for piece in cut if piece.strip())

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """Record a text message for each of its ``pieces`` (the first one quoting)."""
        if self.text_limit is None:  # as written, even blank: what a test hands over is seen
            return self._text(chat, text, reply_to)
        pieces = self.pieces(text)
        if not pieces:
            raise ValueError("send_text was given a text with nothing to show")
        sent = self._text(chat, pieces[0], reply_to)
        for piece in pieces[1:]:
            sent = self._text(chat, piece, None)
        return sent

    def _text(self, chat: ChatRef, text: str, reply_to: str | None) -> SentMessage:
        sent = self._message(chat)
        self.actions.append(Sent("text", chat, text, sent.message_id, reply_to))
        return sent

    async def send_file(
        self, chat: ChatRef, file: OutgoingFile, *, reply_to: str | None = None
    ) -> SentMessage:
        """Record a file (or refuse it, while ``refuse_files`` lasts)."""
        if self.refuse_files > 0:
            self.refuse_files -= 1
            raise ValueError(f"{file.name} refused")
        sent = self._message(chat)
        self.actions.append(
            Sent(
                "file",
                chat,
                file.caption or "",
                sent.message_id,
                reply_to,
                None,
                file.data,
                file.name,
                file.mime,
                file.kind,
            )
        )
        return sent

    async def send_typing(self, chat: ChatRef) -> None:
        """Record a typing indicator (or refuse it, with ``fail_typing``)."""
        if self.fail_typing:
            raise ConnectionError("typing refused")
        self.actions.append(Sent("typing", chat))

    async def ask_approval(
        self, chat: ChatRef, *, session_id: str, call_id: str, command: str
    ) -> SentMessage:
        """Record an approval request."""
        sent = self._message(chat)
        self.actions.append(Sent("approval", chat, command, sent.message_id, call_id=call_id))
        return sent

    async def edit(self, message: SentMessage, text: str) -> None:
        """Record an edit of an earlier message."""
        self.actions.append(Sent("edit", message.chat, text, message.message_id))

    async def answer_button(self, callback_id: str, text: str | None = None) -> None:
        """Record a button press's acknowledgement (``message_id`` holds the press's id)."""
        self.actions.append(Sent("toast", _NO_CHAT, text or "", callback_id))
