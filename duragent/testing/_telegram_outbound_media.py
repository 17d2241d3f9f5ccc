"""Files the bot sends through the fake Telegram: ``sendPhoto``, ``sendDocument`` and the rest.

The methods are ``sendPhoto``, ``sendDocument``, ``sendVoice``, ``sendAudio`` and ``sendVideo``.

A bot gives the file in one of three ways, as on Telegram: uploaded in a multipart body
(python-telegram-bot's ``InputFile``: the part is the parameter itself, or a part the
parameter names as ``attach://<name>``), as the ``file_id`` of a file Telegram already has
(sent earlier by the bot or by a user), or as an HTTP URL Telegram downloads. The fake
downloads that URL itself (``resolve_url``, before the method runs), so a test serving the
file locally sees the download. Each accepted send answers a real ``Message`` with the
medium of its kind (a photo's ``PhotoSize`` list, a ``Document``, ``Voice``, ``Audio`` or
``Video`` with ``file_id``, ``file_unique_id``, ``file_size``…), keeps the file in the fake's
``FileStore`` (so its ``file_id`` can be sent again and ``getFile`` serves it) and records a
``SentFile``: the bytes, name, type, visible caption, chat and kind, for a test to check.

Telegram's rules a gateway can break are kept: no file ("there is no photo in the request"),
an empty file, an unknown ``file_id`` or one of another kind ("can't use file of type Voice
as Photo"), a photo that is not an image (IMAGE_PROCESS_FAILED) or too thin
(PHOTO_INVALID_DIMENSIONS), a caption over 1024 visible characters or with bad HTML, a URL
that cannot be fetched, a photo URL that is not an image, and a document URL that is not a
PDF, ZIP or GIF (the only documents Telegram fetches by URL).
"""

from __future__ import annotations

import base64
import mimetypes
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

import aiohttp

from duragent.testing._fake_nodes import DEFAULT_NODE
from duragent.testing._image_sniff import sniff_image
from duragent.testing._telegram_files import FileStore, TelegramFile
from duragent.testing._telegram_http import TelegramUpload
from duragent.testing._telegram_media import DEFAULT_TYPES, FOLDERS, MediaKind, file_extension
from duragent.testing.telegram_html import EntityParseError, ParsedText, parse_html
from duragent.testing.telegram_methods import Answer, BotMethods, chat_id_of, error, int_param, ok

__all__ = ["MAX_CAPTION_LENGTH", "MEDIA_METHODS", "OutboundMedia", "SentFile"]

MEDIA_METHODS: dict[str, MediaKind] = {
    "sendPhoto": "photo",
    "sendDocument": "document",
    "sendVoice": "voice",
    "sendAudio": "audio",
    "sendVideo": "video",
}
MAX_CAPTION_LENGTH = 1024
"""Visible characters a caption may hold."""
_URL_LIMITS = {"photo": 5 * 1024 * 1024}
_URL_LIMIT = 20 * 1024 * 1024
"""The largest file Telegram fetches from a URL (5 MB for photos)."""
_URL_DOCUMENTS = frozenset({"application/pdf", "application/zip", "image/gif"})
_FETCH_FAILED = "Bad Request: failed to get HTTP URL content"
_WRONG_CONTENT = "Bad Request: wrong type of the web page content"

Source = Literal["upload", "file_id", "url"]
PhotoSizes = Callable[
    [int | str, bytes, int | None, int | None, Sequence[bytes]], list[dict[str, Any]]
]
"""``TelegramMediaPushes._photo``: a photo's ``PhotoSize`` list, each size kept as a file."""


@dataclass(frozen=True)
class SentFile:
    """One file the bot sent, as the chat received it."""

    chat_id: int | str
    message_id: int
    kind: MediaKind
    data: bytes
    file_name: str | None
    mime_type: str
    caption: str | None
    """The visible caption (HTML parsed away), ``None`` without one."""
    source: Source
    """How the bot gave it: uploaded, by ``file_id``, or by URL."""
    file_id: str
    """The file's id in the answer (a photo's largest size)."""
    caption_entities: list[dict[str, Any]] = field(default_factory=list)
    parse_mode: str | None = None
    url: str | None = None
    time: float = 0.0
    """``time.monotonic()`` when the fake accepted it."""
    node: str = DEFAULT_NODE
    """The serve process whose call sent it (``RecordedCall.node``)."""

    def to_json(self, *, data: bool = True) -> dict[str, Any]:
        """Plain JSON (``GET /_fake/sent_files``), the bytes as ``data_base64`` if asked."""
        found: dict[str, Any] = {
            "chat_id": self.chat_id,
            "message_id": self.message_id,
            "kind": self.kind,
            "file_name": self.file_name,
            "mime_type": self.mime_type,
            "size": len(self.data),
            "caption": self.caption,
            "caption_entities": self.caption_entities,
            "parse_mode": self.parse_mode,
            "source": self.source,
            "url": self.url,
            "file_id": self.file_id,
            "time": self.time,
            "node": self.node,
        }
        if data:
            found["data_base64"] = base64.b64encode(self.data).decode()
        return found


@dataclass(frozen=True)
class _Given:
    data: bytes
    file_name: str | None
    mime_type: str
    source: Source
    url: str | None = None
    known: TelegramFile | None = None
    """The file already in the store (a send by ``file_id``)."""


class OutboundMedia:
    """The five send methods and the ``SentFile`` records (not thread-safe: the fake locks)."""

    def __init__(
        self,
        methods: BotMethods,
        files: FileStore,
        photo_sizes: PhotoSizes,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._methods = methods
        self._files = files
        self._photo_sizes = photo_sizes
        self._clock = clock
        self.sent: list[SentFile] = []
        self.node = DEFAULT_NODE
        """The node of the call being answered (the fake sets it, under its lock, before each
        call: the method table passes only the parameters, which are the bot's own)."""

    def table(self) -> dict[str, Callable[[dict[str, Any]], Answer]]:
        """The methods, for ``BotMethods.table``."""

        def method(kind: MediaKind) -> Callable[[dict[str, Any]], Answer]:
            return lambda params: self.send(kind, params)

        return {name: method(kind) for name, kind in MEDIA_METHODS.items()}

    # -- a URL, fetched before the method runs ------------------------------------------------

    async def resolve_url(self, method: str, params: dict[str, Any]) -> dict[str, Any] | Answer:
        """The parameters with a file given by HTTP URL replaced by its bytes, fetched."""
        kind = MEDIA_METHODS.get(method)
        url = params.get(kind) if kind is not None else None
        if kind is None or not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return params
        limit = _URL_LIMITS.get(kind, _URL_LIMIT)
        try:
            timeout = aiohttp.ClientTimeout(total=30)
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(url) as answer,
            ):
                if answer.status != 200:
                    return error(400, _FETCH_FAILED)
                mime_type = answer.content_type
                data = b""
                async for chunk in answer.content.iter_chunked(64 * 1024):
                    data += chunk
                    if len(data) > limit:
                        break
        except (aiohttp.ClientError, TimeoutError, ValueError):
            return error(400, _FETCH_FAILED)
        if len(data) > limit:
            return error(400, _FETCH_FAILED)
        image = sniff_image(data)
        if kind == "photo" and image is None:
            return error(400, _WRONG_CONTENT)
        if image is not None:
            mime_type = image.mime
        if kind == "document" and mime_type not in _URL_DOCUMENTS:
            return error(400, _WRONG_CONTENT)
        name = unquote(urlsplit(url).path.rsplit("/", 1)[-1]) or "file"
        return {**params, kind: TelegramUpload(data, name, mime_type, url=url)}

    # -- the send -----------------------------------------------------------------------------

    def send(self, kind: MediaKind, params: dict[str, Any]) -> Answer:
        """Validate, number and keep a message carrying a file of ``kind``; answer it."""
        chat_id = chat_id_of(params)
        if chat_id is None:
            return error(400, "Bad Request: chat_id is empty")
        given = self._given(kind, params)
        if isinstance(given, tuple):
            return given
        caption = _caption(params)
        if isinstance(caption, tuple):
            return caption
        message = self._methods.new_message(chat_id, params)
        if isinstance(message, tuple):
            return message
        medium, file_id = self._medium(kind, chat_id, given, params)
        message[kind] = medium
        if caption.text:
            message["caption"] = caption.text
            if caption.entities:
                message["caption_entities"] = caption.entities
        self._methods.store.remember(dict(message))
        self.sent.append(
            SentFile(
                chat_id,
                message["message_id"],
                kind,
                given.data,
                given.file_name,
                given.mime_type,
                caption.text or None,
                given.source,
                file_id,
                list(caption.entities),
                _mode(params),
                given.url,
                self._clock(),
                self.node,
            )
        )
        return ok(message)

    def _given(self, kind: MediaKind, params: dict[str, Any]) -> _Given | Answer:
        value = params.get(kind)
        if isinstance(value, str) and value.startswith("attach://"):
            value = params.get(value.removeprefix("attach://"))
        if isinstance(value, TelegramUpload):
            if not value.data:
                return error(400, "Bad Request: file must be non-empty")
            mime_type = value.mime_type
            if mime_type in ("", "application/octet-stream"):
                guessed = mimetypes.guess_type(value.file_name)[0] if kind == "document" else None
                mime_type = guessed or DEFAULT_TYPES[kind]
            source: Source = "url" if value.url is not None else "upload"
            given = _Given(value.data, value.file_name, mime_type, source, value.url)
        elif isinstance(value, str) and value:
            known = self._files.get(value)
            if known is None:
                return error(400, "Bad Request: wrong file identifier/HTTP URL specified")
            have = known.file_id.split("-", 1)[0]
            if have != kind:
                return error(
                    400, f"Bad Request: can't use file of type {have.title()} as {kind.title()}"
                )
            name = known.file_path.rsplit("/", 1)[-1]
            given = _Given(known.data, name, known.mime_type, "file_id", known=known)
        else:
            return error(400, f"Bad Request: there is no {kind} in the request")
        if kind == "photo":
            image = sniff_image(given.data)
            if image is None:
                return error(400, "Bad Request: IMAGE_PROCESS_FAILED")
            width, height = image.width or 1, image.height or 1
            if width + height > 10_000 or max(width, height) > 20 * min(width, height):
                return error(400, "Bad Request: PHOTO_INVALID_DIMENSIONS")
        return given

    def _medium(
        self, kind: MediaKind, chat_id: int | str, given: _Given, params: dict[str, Any]
    ) -> tuple[Any, str]:
        """The message's medium of ``kind``, and the ``file_id`` a test finds the file by."""
        if kind == "photo":
            if given.known is not None:
                image = sniff_image(given.data)
                size = {
                    **_file_object(given.known),
                    "width": image.width if image and image.width else 1,
                    "height": image.height if image and image.height else 1,
                }
                return [size], given.known.file_id
            sizes = self._photo_sizes(chat_id, given.data, None, None, ())
            return sizes, str(sizes[-1]["file_id"])
        stored = given.known or self._files.add(
            given.data,
            kind=kind,
            folder=FOLDERS[kind],
            extension=file_extension(given.file_name, given.mime_type),
            mime_type=given.mime_type,
            chat_id=chat_id,
        )
        medium = {**_file_object(stored), "mime_type": given.mime_type}
        if kind in ("voice", "audio", "video"):
            medium["duration"] = int_param(params, "duration", 0)
        if kind == "video":
            medium.update(
                width=int_param(params, "width", 640), height=int_param(params, "height", 360)
            )
        if kind == "audio":
            for name in ("title", "performer"):
                if isinstance(params.get(name), str):
                    medium[name] = params[name]
        if kind != "voice" and given.file_name:
            medium["file_name"] = given.file_name
        return medium, stored.file_id


def _file_object(stored: TelegramFile) -> dict[str, Any]:
    return {
        "file_id": stored.file_id,
        "file_unique_id": stored.file_unique_id,
        "file_size": len(stored.data),
    }


def _caption(params: dict[str, Any]) -> ParsedText | Answer:
    """The visible caption and its entities (empty without one), or the error answer."""
    caption = params.get("caption")
    if not isinstance(caption, str) or not caption:
        return ParsedText("")
    mode = _mode(params)
    if mode is not None and mode.lower() == "html":
        try:
            parsed = parse_html(caption)
        except EntityParseError as exc:
            return error(400, f"Bad Request: can't parse entities: {exc}")
    else:
        entities = params.get("caption_entities")
        parsed = ParsedText(caption, entities if isinstance(entities, list) else [])
    if len(parsed.text) > MAX_CAPTION_LENGTH:
        return error(400, "Bad Request: message caption is too long")
    return parsed


def _mode(params: dict[str, Any]) -> str | None:
    mode = params.get("parse_mode")
    return mode if isinstance(mode, str) and mode else None
