"""What the kit needs to take a photo, voice note or file in, whatever the platform.

A chat gateway describes each file a message carries as a ``MediaRef`` (``inbound``) and
gives the kit one ``MediaSource``: how that platform's files are downloaded (Telegram's
``getFile``, Discord's CDN, a gateway plugin's URL). Everything else is decided once, in
``media_intake``: the size limits per kind (``MediaLimits``, ``media.max_bytes`` in
``duragent.yaml``), keeping the bytes before the message is recorded, transcription
(``MediaSettings.transcriber``), the files folder, and what the person is told.

A source raises one of two errors, so the intake can tell the person what happened:
``MediaTooLargeError`` (the file is over the limit: found while downloading, when the
platform did not say its size or said it wrong) and ``MediaUnavailableError`` (it could not be
downloaded; ``transient`` when trying again later may work: a 5xx, a dropped connection).
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from duragent.core.attachments import AttachmentKind
from duragent.errors import DuragentError
from duragent.frontkit.inbound import MediaRef

if TYPE_CHECKING:
    from duragent.llm.transcription import Transcriber

__all__ = [
    "MIB",
    "Fetched",
    "MediaError",
    "MediaLimits",
    "MediaSettings",
    "MediaSource",
    "MediaTooLargeError",
    "MediaUnavailableError",
    "byte_size",
    "media_mime",
    "noun",
]

MIB = 1024 * 1024

_NOUNS = {
    AttachmentKind.IMAGE: ("photo", "photos"),
    AttachmentKind.VOICE: ("voice note", "voice notes"),
    AttachmentKind.AUDIO: ("audio file", "audio files"),
    AttachmentKind.VIDEO: ("video", "videos"),
    AttachmentKind.DOCUMENT: ("file", "files"),
}
_DEFAULT_MIME = {
    AttachmentKind.IMAGE: "image/jpeg",
    AttachmentKind.VOICE: "audio/ogg",
    AttachmentKind.AUDIO: "audio/mpeg",
    AttachmentKind.VIDEO: "video/mp4",
    AttachmentKind.DOCUMENT: "application/octet-stream",
}


class MediaError(DuragentError):
    """A file a message carries could not be taken in."""


class MediaTooLargeError(MediaError):
    """The file is over a limit: its kind's, or the platform's own (``limit``, when it says).

    ``size``: the file's size when known.
    """

    def __init__(self, message: str, *, size: int | None = None, limit: int | None = None) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


class MediaUnavailableError(MediaError):
    """The file could not be downloaded (``transient``: another try may work)."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True, slots=True)
class Fetched:
    """A downloaded file: its bytes, and the type its host said (None: not said)."""

    data: bytes
    mime: str | None = None


class MediaSource(Protocol):
    """How one platform's files are downloaded (a gateway gives the kit one)."""

    async def fetch(self, ref: MediaRef, max_bytes: int) -> Fetched:
        """The file's bytes, at most ``max_bytes`` of them.

        Raises ``MediaTooLargeError`` beyond ``max_bytes`` and ``MediaUnavailableError``
        when the file cannot be had; never the SDK's own errors.
        """
        ...


@dataclass(frozen=True, slots=True)
class MediaLimits:
    """The largest file kept of each kind, in bytes (``media.max_bytes``).

    Telegram lets a bot download at most 20 MB, whatever these say.
    """

    image: int = 10 * MIB
    voice: int = 20 * MIB
    audio: int = 20 * MIB
    video: int = 20 * MIB
    document: int = 20 * MIB

    def of(self, kind: AttachmentKind) -> int:
        """The limit for ``kind``."""
        limit: int = getattr(self, kind.value)
        return limit


@dataclass(frozen=True, slots=True)
class MediaSettings:
    """How a gateway's kit takes files in (``media:`` of ``duragent.yaml``)."""

    limits: MediaLimits = field(default_factory=MediaLimits)
    transcriber: Transcriber | None = None
    """Voice notes and audio become text with it; None: they are kept untranscribed and the
    chat is told once how to turn transcription on."""
    retry_pauses: tuple[float, ...] = (1.0, 3.0)
    """Seconds between download attempts that failed for a while (a 5xx, the network)."""


def noun(kind: AttachmentKind, *, plural: bool = False) -> str:
    """How a person names a file of ``kind`` (``photo``, ``voice notes``…)."""
    one, many = _NOUNS[kind]
    return many if plural else one


def byte_size(size: int) -> str:
    """``size`` as a person reads it: ``512 bytes``, ``48 KB``, ``1.5 MB``, ``20 MB``.

    In the units Telegram states its limits in (1 MB = 1,048,576 bytes).
    """
    if size < 1024:
        return f"{size} bytes"
    for unit, scale in (("KB", 1024), ("MB", MIB), ("GB", 1024 * MIB)):
        value = size / scale
        if value < 1024 or unit == "GB":
            return (
                f"{value:.1f} {unit}".replace(".0 ", " ") if value < 10 else f"{value:.0f} {unit}"
            )
    raise AssertionError("unreachable")  # pragma: no cover


def media_mime(kind: AttachmentKind, *declared: str | None, name: str | None = None) -> str:
    """The file's type: the first one declared, else its name's, else its kind's usual one."""
    for mime in declared:
        if mime and "/" in mime:
            return mime.split(";", 1)[0].strip().lower()
    guessed = mimetypes.guess_type(name)[0] if name else None
    return guessed or _DEFAULT_MIME[kind]
