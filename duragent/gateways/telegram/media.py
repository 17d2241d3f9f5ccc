"""Telegram's files: what a message carries (``media_of``) and their download (``TelegramMedia``).

A message's photo, voice note, audio, document or video becomes a ``MediaRef``;
``TelegramMedia`` is the kit's ``MediaSource`` for them.

A file is fetched as Telegram's bots fetch it: ``getFile(file_id)`` gives a ``file_path``,
and the bytes are at the Bot API's file URL (python-telegram-bot builds it from the bot's
``base_file_url``, so a self-hosted Bot API server or the fake serves them too). A bot may
download at most 20 MB: ``getFile`` answers "file is too big" beyond, which is
``MediaTooLargeError`` like any file over duragent's own limits.

A photo comes in several sizes; the largest within the image limit is taken (Telegram's
thumbnails are small enough for any limit). ``file_unique_id`` is the key a redelivered
update is recognised by (a ``file_id`` may differ between deliveries and bots); ``file_id``
is recorded, the id Telegram takes back to send the same file again.
"""

from __future__ import annotations

import mimetypes

from telegram import Bot, Message, PhotoSize
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError

from duragent.core.attachments import AttachmentKind
from duragent.frontkit import Fetched, MediaRef, MediaTooLargeError, MediaUnavailableError

__all__ = ["BOT_DOWNLOAD_LIMIT", "DOWNLOAD_TIMEOUT", "MAX_DOWNLOADS", "TelegramMedia", "media_of"]

DOWNLOAD_TIMEOUT = 120.0
"""Seconds a file's download may take (20 MB over a slow link)."""
MAX_DOWNLOADS = 8
"""Downloads at once (the files bot's connections; more wait for one)."""
BOT_DOWNLOAD_LIMIT = 20 * 1024 * 1024
"""The largest file the Bot API lets a bot download (``getFile``: "file is too big")."""


def media_of(message: Message, *, max_photo_bytes: int | None = None) -> tuple[MediaRef, ...]:
    """The files ``message`` carries (a photo: its largest size within ``max_photo_bytes``)."""
    found: list[MediaRef] = []
    if message.photo:
        size = _photo_size(message.photo, max_photo_bytes)
        found.append(
            MediaRef(
                AttachmentKind.IMAGE,
                size.file_id,
                unique_id=size.file_unique_id,
                size=size.file_size,
            )
        )
    if message.voice is not None:
        voice = message.voice
        found.append(
            MediaRef(
                AttachmentKind.VOICE,
                voice.file_id,
                unique_id=voice.file_unique_id,
                mime=voice.mime_type,
                size=voice.file_size,
            )
        )
    named = (
        (AttachmentKind.AUDIO, message.audio),
        (AttachmentKind.VIDEO, message.video),
        (AttachmentKind.DOCUMENT, message.document),
    )
    for kind, medium in named:
        if medium is None:
            continue
        found.append(
            MediaRef(
                kind,
                medium.file_id,
                unique_id=medium.file_unique_id,
                name=medium.file_name,
                mime=medium.mime_type,
                size=medium.file_size,
            )
        )
    if message.video_note is not None:
        note = message.video_note
        found.append(
            MediaRef(
                AttachmentKind.VIDEO,
                note.file_id,
                unique_id=note.file_unique_id,
                mime="video/mp4",
                size=note.file_size,
            )
        )
    return tuple(found)


def _photo_size(sizes: tuple[PhotoSize, ...], limit: int | None) -> PhotoSize:
    """The largest size within ``limit`` (unknown sizes count as within); else the largest."""
    ordered = sorted(sizes, key=lambda s: (s.width * s.height, s.file_size or 0))
    fitting = [s for s in ordered if limit is None or s.file_size is None or s.file_size <= limit]
    return (fitting or ordered)[-1]


class TelegramMedia:
    """Telegram files downloaded through the bot (the kit's ``MediaSource``).

    The gateway gives it a bot of its own, without the rate limiter: ``getFile`` is not a
    message, and Telegram's message limits are not spent on it.
    """

    def __init__(self, bot: Bot) -> None:
        self._bot = bot

    async def fetch(self, ref: MediaRef, max_bytes: int) -> Fetched:
        """``getFile`` and the download (errors as the kit's: module docstring)."""
        try:
            file = await self._bot.get_file(ref.platform_id)
            if file.file_size is not None and file.file_size > max_bytes:
                raise MediaTooLargeError("over the limit", size=file.file_size)
            data = bytes(await file.download_as_bytearray(read_timeout=DOWNLOAD_TIMEOUT))
        except BadRequest as exc:  # "file is too big", "invalid file_id": never better
            if "too big" in exc.message.lower():
                raise MediaTooLargeError(
                    exc.message, size=ref.size, limit=BOT_DOWNLOAD_LIMIT
                ) from exc
            raise MediaUnavailableError(f"Telegram said: {exc.message}") from exc
        except (NetworkError, RetryAfter) as exc:  # the network, a 5xx, flood control
            raise MediaUnavailableError(f"Telegram said: {exc.message}", transient=True) from exc
        except TelegramError as exc:
            raise MediaUnavailableError(f"Telegram said: {exc.message}") from exc
        if len(data) > max_bytes:
            raise MediaTooLargeError("over the limit", size=len(data))
        path = file.file_path or ""
        return Fetched(data, mimetypes.guess_type(path)[0] if path else None)
