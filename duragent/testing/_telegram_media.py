"""Users of the fake Telegram send photos, voice notes, audio, documents and videos with bytes.

``FakeTelegram.push_message(photo=True)`` makes a photo message whose file cannot be
downloaded; these pushes carry the bytes a test supplies, kept in the fake's ``FileStore`` so
the bot can ``getFile`` and download them. The message is shaped as the Bot API sends it:

- a photo is several ``PhotoSize`` entries, smallest first, each its own file (``file_id``,
  ``file_unique_id``, ``width``, ``height``, ``file_size``); the last is the picture as given
  (its size read from the bytes when not given), the smaller ones are thumbnails in Telegram's
  90, 320 and 800 pixel boxes, carrying the ``thumbnails`` given or else the same bytes. Telegram
  recompresses photos to JPEG; the fake serves the bytes as given, with the ``file_path``
  extension of their real format.
- ``voice`` (``audio/ogg``, an ``.oga`` path), ``audio`` (``audio/mpeg``), ``document`` and
  ``video`` (``video/mp4``) each one object with ``file_id``, ``file_unique_id``,
  ``mime_type``, ``file_size`` and the fields of their kind (``duration``, ``file_name``,
  ``width``/``height``, ``title``/``performer``).

A caption gets its ``caption_entities`` (``@mentions``, ``/commands``) as a text does.
"""

from __future__ import annotations

import mimetypes
import threading
from collections.abc import Sequence
from typing import Any, Literal, get_args

from duragent.testing._image_sniff import sniff_image
from duragent.testing._telegram_files import FileStore, TelegramFile
from duragent.testing.telegram_objects import ChatType
from duragent.testing.telegram_store import ChatStore, UpdateQueue
from duragent.testing.telegram_updates import message_update, sender_for

__all__ = [
    "DEFAULT_TYPES",
    "FOLDERS",
    "MEDIA_KINDS",
    "MediaKind",
    "TelegramMediaPushes",
    "file_extension",
]

MediaKind = Literal["photo", "voice", "audio", "document", "video"]
MEDIA_KINDS: tuple[str, ...] = get_args(MediaKind)
_THUMBNAIL_BOXES = (90, 320, 800)
"""Longest sides of the smaller ``PhotoSize`` entries Telegram adds (its ``s``, ``m``, ``x``)."""
FOLDERS = {
    "photo": "photos",
    "voice": "voice",
    "audio": "music",
    "document": "documents",
    "video": "videos",
}
DEFAULT_TYPES = {
    "photo": "image/jpeg",
    "voice": "audio/ogg",
    "audio": "audio/mpeg",
    "document": "application/octet-stream",
    "video": "video/mp4",
}
_EXTENSIONS = {"audio/ogg": "oga", "audio/mpeg": "mp3", "image/jpeg": "jpg", "video/mp4": "mp4"}


def file_extension(file_name: str | None, mime_type: str) -> str:
    """The extension of a file's path on the file server: its name's, else its type's."""
    if file_name and "." in file_name:
        return file_name.rsplit(".", 1)[1]
    return _EXTENSIONS.get(mime_type) or (mimetypes.guess_extension(mime_type) or ".bin")[1:]


class TelegramMediaPushes:
    """``FakeTelegram``'s media pushes (a mixin: the state is the fake's)."""

    _lock: threading.Lock
    _store: ChatStore
    _updates: UpdateQueue
    _files: FileStore

    def _notify(self) -> None:
        raise NotImplementedError

    def push_media(
        self,
        chat_id: int,
        kind: MediaKind,
        data: bytes,
        *,
        caption: str | None = None,
        file_name: str | None = None,
        mime_type: str | None = None,
        duration: int | None = None,
        width: int | None = None,
        height: int | None = None,
        title: str | None = None,
        performer: str | None = None,
        thumbnails: Sequence[bytes] = (),
        chat_type: ChatType | None = None,
        chat_title: str | None = None,
        user_id: int | None = None,
        username: str | None = None,
        first_name: str | None = None,
        entities: list[dict[str, Any]] | None = None,
        reply_to_message_id: int | None = None,
        message_thread_id: int | None = None,
    ) -> dict[str, Any]:
        """A user sends a file of ``kind`` with these bytes; returns the queued update.

        ``entities`` are the caption's (default: its mentions and commands). ``thumbnails``
        (photos only) are the bytes of the smaller sizes, smallest first.
        """
        if kind not in MEDIA_KINDS:
            raise ValueError(f"kind must be one of {', '.join(MEDIA_KINDS)}, not {kind!r}")
        if not data:
            raise ValueError("a pushed file needs bytes (Telegram has no empty files)")
        if thumbnails and kind != "photo":
            raise ValueError("only a photo has thumbnails among its sizes")
        if len(thumbnails) > len(_THUMBNAIL_BOXES):
            raise ValueError(f"a photo has at most {len(_THUMBNAIL_BOXES)} thumbnails")
        sender = sender_for(chat_id, user_id, username, first_name)
        with self._lock:
            # ``message_update`` builds the message around a placeholder document (chat,
            # sender, reply, thread and caption entities follow one set of rules there); the
            # placeholder is swapped for the real medium before the lock lets anyone see it.
            update = message_update(
                self._store,
                self._updates,
                chat_id,
                sender=sender,
                chat_type=chat_type,
                chat_title=chat_title,
                entities=entities,
                reply_to_message_id=reply_to_message_id,
                message_thread_id=message_thread_id,
                caption=caption,
                document=file_name or "file",
            )
            message = next(v for k, v in update.items() if k != "update_id")
            del message["document"]
            if kind == "photo":
                message["photo"] = self._photo(chat_id, data, width, height, thumbnails)
            else:
                media_type = mime_type or DEFAULT_TYPES[kind]
                if kind == "document" and mime_type is None and file_name:
                    media_type = mimetypes.guess_type(file_name)[0] or media_type
                stored = self._files.add(
                    data,
                    kind=kind,
                    folder=FOLDERS[kind],
                    extension=file_extension(file_name, media_type),
                    mime_type=media_type,
                    chat_id=chat_id,
                )
                medium = _file_object(stored)
                medium["mime_type"] = media_type
                if kind in ("voice", "audio", "video"):
                    medium["duration"] = 1 if duration is None else duration
                if kind == "video":
                    medium.update(width=width or 640, height=height or 360)
                if kind == "audio":
                    medium.update(_present(title=title, performer=performer))
                if file_name is not None and kind != "voice":
                    medium["file_name"] = file_name
                message[kind] = medium
        self._notify()
        return update

    def push_photo(self, chat_id: int, data: bytes, **options: Any) -> dict[str, Any]:
        """A user sends a photo (``push_media``'s options: ``caption``, ``width``…)."""
        return self.push_media(chat_id, "photo", data, **options)

    def push_voice(self, chat_id: int, data: bytes, **options: Any) -> dict[str, Any]:
        """A user sends a voice note (OGG/Opus: ``audio/ogg``; ``duration`` in seconds)."""
        return self.push_media(chat_id, "voice", data, **options)

    def push_audio(self, chat_id: int, data: bytes, **options: Any) -> dict[str, Any]:
        """A user sends a song or recording as audio (``file_name``, ``title``…)."""
        return self.push_media(chat_id, "audio", data, **options)

    def push_document(
        self, chat_id: int, data: bytes, file_name: str = "document.bin", **options: Any
    ) -> dict[str, Any]:
        """A user sends a file as a document (its type guessed from ``file_name`` if not given)."""
        return self.push_media(chat_id, "document", data, file_name=file_name, **options)

    def push_video(self, chat_id: int, data: bytes, **options: Any) -> dict[str, Any]:
        """A user sends a video (``video/mp4``; ``width``, ``height``, ``duration``)."""
        return self.push_media(chat_id, "video", data, **options)

    def _photo(
        self,
        chat_id: int | str,
        data: bytes,
        width: int | None,
        height: int | None,
        thumbnails: Sequence[bytes],
    ) -> list[dict[str, Any]]:
        sniffed = sniff_image(data)
        width = width or (sniffed.width if sniffed else None) or 1280
        height = height or (sniffed.height if sniffed else None) or 853
        longest = max(width, height)
        boxes = [box for box in _THUMBNAIL_BOXES if box < longest]
        if thumbnails:
            boxes = list(_THUMBNAIL_BOXES[: len(thumbnails)])
        sizes: list[dict[str, Any]] = []
        for i, box in enumerate(boxes):
            small = thumbnails[i] if thumbnails else data
            found = sniff_image(small) if thumbnails else None
            if found is not None and found.width and found.height:
                size = (found.width, found.height)
            else:
                size = (max(1, width * box // longest), max(1, height * box // longest))
            sizes.append(self._photo_size(chat_id, small, size))
        sizes.append(self._photo_size(chat_id, data, (width, height)))
        return sizes

    def _photo_size(self, chat_id: int | str, data: bytes, size: tuple[int, int]) -> dict[str, Any]:
        real = sniff_image(data)
        mime_type = real.mime if real is not None else "image/jpeg"
        stored = self._files.add(
            data,
            kind="photo",
            folder=FOLDERS["photo"],
            extension=file_extension(None, mime_type),
            mime_type=mime_type,
            chat_id=chat_id,
        )
        return {**_file_object(stored), "width": size[0], "height": size[1]}


def _file_object(stored: TelegramFile) -> dict[str, Any]:
    return {
        "file_id": stored.file_id,
        "file_unique_id": stored.file_unique_id,
        "file_size": len(stored.data),
    }


def _present(**fields: str | None) -> dict[str, str]:
    return {k: v for k, v in fields.items() if v is not None}
