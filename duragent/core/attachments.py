"""``Attachment``: a photo, voice note, audio, video or document that came with a message.

An attachment is part of the durable conversation (issue 36): its bytes are stored
content-addressed beside the session (``store``: the session's ``AttachmentStorage``) before
the message that carries it is recorded, and the message's ``user_message`` event lists it
(``UserMessageData.attachments``), so a crash at any point loses nothing and a redelivered
update downloads nothing twice (the platform's id and the hash say it is there already).

This module is plain data: what an attachment is, and its event form. Downloading, size
limits, resizing for a model and transcription live with the front ends and providers.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Attachment", "AttachmentKind", "attachments_of", "content_hash", "is_content_hash"]

_HASH = re.compile(r"[0-9a-f]{64}")


class AttachmentKind(enum.StrEnum):
    """What a person sent, as the platforms tell them apart (a voice note is not a song)."""

    IMAGE = "image"
    VOICE = "voice"
    AUDIO = "audio"
    VIDEO = "video"
    DOCUMENT = "document"


def content_hash(data: bytes) -> str:
    """The attachment's address: the SHA-256 of its bytes, as 64 lowercase hex digits."""
    return hashlib.sha256(data).hexdigest()


def is_content_hash(text: str) -> bool:
    """Whether ``text`` is a content address (never a path: stores build file names of it)."""
    return _HASH.fullmatch(text) is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Attachment:
    """One stored attachment, as its message's event records it.

    ``sha256`` is where the bytes are (``content_hash``); ``size`` their length. ``name`` is
    the file name the sender's platform gave (None for a photo or voice note, which have
    none). ``platform_id`` is the platform's own id for the file (Telegram's ``file_id``, a
    Discord attachment id, a gateway's URL): a redelivered update is recognised by it.
    ``transcript`` is a voice note's or audio's text once transcribed (the message's text
    then is the transcript, marked as one); ``width``/``height`` an image's pixels.
    """

    kind: AttachmentKind
    mime: str
    size: int
    sha256: str
    name: str | None = None
    platform_id: str | None = None
    transcript: str | None = None
    width: int | None = None
    height: int | None = None

    def __post_init__(self) -> None:
        if not is_content_hash(self.sha256):
            raise ValueError(f"attachment sha256 must be 64 hex digits, got {self.sha256!r}")
        if self.size < 0:
            raise ValueError(f"attachment size must not be negative, got {self.size}")

    @property
    def label(self) -> str:
        """How a person would name it: its file name, or its kind."""
        return self.name or self.kind.value

    def to_data(self) -> dict[str, Any]:
        """The event form (keys with no value are left out, so the lines stay short)."""
        data: dict[str, Any] = {
            "kind": self.kind.value,
            "mime": self.mime,
            "size": self.size,
            "sha256": self.sha256,
        }
        for key in ("name", "platform_id", "transcript", "width", "height"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Attachment:
        """The attachment an event recorded (``ValueError`` when the record is not one)."""
        try:
            kind = AttachmentKind(str(data["kind"]))
            return cls(
                kind=kind,
                mime=str(data["mime"]),
                size=int(data["size"]),
                sha256=str(data["sha256"]),
                name=_text(data.get("name")),
                platform_id=_text(data.get("platform_id")),
                transcript=_text(data.get("transcript")),
                width=_count(data.get("width")),
                height=_count(data.get("height")),
            )
        except (KeyError, TypeError, OverflowError) as exc:  # 1e999 reads as inf: no int
            raise ValueError(f"not an attachment record: {exc}") from None


def attachments_of(value: object) -> tuple[Attachment, ...]:
    """The attachments a stored list records, skipping each record that is not one.

    Read from ``events.jsonl`` and ``state.yaml``, written by any version or edited by hand:
    a damaged record costs that attachment (the message keeps its text and the others),
    never the replay of the session. Anything but a list reads as none.
    """
    if not isinstance(value, list):
        return ()
    found: list[Attachment] = []
    for record in value:
        if not isinstance(record, Mapping):
            continue
        try:
            found.append(Attachment.of(record))
        except ValueError:
            continue
    return tuple(found)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _count(value: object) -> int | None:
    return None if value is None else int(str(value))
