"""What a chat platform hands the kit: a message or a button press, already translated.

A chat gateway (Telegram, Discord, an external plugin) turns its SDK's update into one of
these and nothing else: routing, access, mention gating, queueing, slash commands and
approvals are decided on these values by the kit, once for every platform. The fields are the
reference's gateway protocol (``message_received`` / ``callback_query``), flattened to what
the decisions read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from duragent.core.attachments import AttachmentKind
from duragent.frontkit.outbound import ChatRef

__all__ = ["ButtonPress", "ChatType", "InboundMessage", "MediaRef", "Sender"]

ChatType = Literal["dm", "group", "channel"]
"""Telegram's ``private`` is ``dm`` and its ``supergroup`` is ``group``, as in the reference."""


@dataclass(frozen=True, slots=True)
class Sender:
    """Who wrote a message or pressed a button."""

    id: str
    username: str | None = None
    display_name: str | None = None

    @property
    def label(self) -> str:
        """How a group message names its sender to the model: display name, username, id."""
        return self.display_name or self.username or self.id


@dataclass(frozen=True, slots=True)
class MediaRef:
    """A file a message carries, as its platform describes it: not downloaded yet.

    Plain data (a message handed to another node over the relay carries it as JSON): the
    gateway's ``MediaSource`` (``frontkit.media``) downloads it by ``platform_id`` or ``url``
    where the message is recorded, after the kit decided the message is kept at all.
    """

    kind: AttachmentKind
    platform_id: str
    """The platform's id for the file, recorded with the attachment (Telegram's ``file_id``,
    a Discord attachment id, a gateway's URL)."""
    unique_id: str | None = None
    """An id the same file keeps across deliveries (Telegram's ``file_unique_id``): a
    redelivered update is recognised by it, and nothing is downloaded twice."""
    url: str | None = None
    """Where its bytes are, for a platform that links them (Discord's CDN, a gateway's)."""
    name: str | None = None
    """The sender's file name (a photo or a voice note has none)."""
    mime: str | None = None
    size: int | None = None
    """The size the platform declares (checked against the limit before downloading)."""

    @property
    def key(self) -> str:
        """What identifies the file across deliveries of its message."""
        return self.unique_id or self.platform_id

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> MediaRef:
        """A reference read back from its JSON form (``KeyError``/``ValueError`` if none)."""
        size = data.get("size")
        return cls(
            kind=AttachmentKind(str(data["kind"])),
            platform_id=str(data["platform_id"]),
            unique_id=_text(data.get("unique_id")),
            url=_text(data.get("url")),
            name=_text(data.get("name")),
            mime=_text(data.get("mime")),
            size=None if size is None else int(size),
        )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One message from a chat."""

    gateway: str
    """The gateway's configured name (``telegram``, ``discord``, an external plugin's name)."""
    chat_id: str
    chat_type: ChatType
    message_id: str
    """The platform's id: a redelivered update is recognised by it, and replies answer it."""
    sender: Sender
    text: str | None
    """The text, or a media message's caption; ``None`` when there is neither."""
    content_kind: str = "text"
    """``text`` or what else arrived (``photo``, ``sticker``, ``voice``…), for a polite reply."""
    thread_id: str | None = None
    mentions_bot: bool = False
    reply_to_bot: bool = False
    reply_to_message_id: str | None = None
    edited: bool = False
    """An edit of a message sent earlier (``message_id`` is the edited message's)."""
    media: tuple[MediaRef, ...] = ()
    """The photo, voice note, audio, video or files it carries (``text`` is their caption)."""
    sent_at: float | None = None
    """When the platform says it was sent (epoch seconds; None: not said). The sender's
    message rate counts it (``rates``): a backlog delivered at once after an outage was
    written at a person's pace, and a flood is one whenever it is read."""

    @property
    def chat(self) -> ChatRef:
        """The chat the message came from.

        Its ``kind`` is the chat's type: a group's turn waits for a member's pending approval
        (``turns.approval_wait``).
        """
        return ChatRef(self.gateway, self.chat_id, self.chat_type)


@dataclass(frozen=True, slots=True)
class ButtonPress:
    """A press on an inline button the kit sent (an approval's Allow once / always / Deny)."""

    gateway: str
    chat_id: str
    callback_id: str
    """The platform's id for the press: the toast answers it."""
    sender: Sender
    message_id: str
    """The message carrying the buttons (edited once the decision is taken)."""
    data: str
    """The button's payload, as the kit wrote it (``approve:allow_once``…)."""

    @property
    def chat(self) -> ChatRef:
        """The chat the press came from."""
        return ChatRef(self.gateway, self.chat_id)
