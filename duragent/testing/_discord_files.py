"""The fake Discord's CDN: the bytes of the attachments users send, served and counted.

On Discord a message's attachment is a ``url`` on cdn.discordapp.com (and a ``proxy_url`` on
media.discordapp.net) that discord.py's ``Attachment.read()`` fetches with a plain GET. The
fake serves both from its own HTTP server: ``/attachments/<id>/<filename>`` and
``/media/attachments/<id>/<filename>``. Since 2024 Discord signs those links (``ex``, ``is``,
``hm`` in the query) and answers 404 to one without a valid signature, so a gateway that
drops the query string (or rebuilds the link) fails here as it would there. Each attachment
counts the times it was served, so a test can say "downloaded once"; ``fail_next`` makes the
next downloads fail with a status (a CDN hiccup), each counted as ``failed``.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import mimetypes
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from aiohttp import web

from duragent.testing._image_sniff import sniff_image
from duragent.testing.discord_objects import attachment_object

__all__ = ["CdnFile", "DiscordCdn"]

_GONE = "This content is no longer available."
_DAY = 86_400


@dataclass
class CdnFile:
    """One attachment's bytes and what happened to them."""

    attachment_id: int
    filename: str
    data: bytes
    content_type: str | None
    downloads: int = 0
    """Times the bytes were served whole."""
    failed: int = 0
    """Downloads answered with a scripted failure (``fail_next``)."""


class DiscordCdn:
    """Attachment bytes by id, their signed links, and the route serving them."""

    def __init__(self) -> None:
        self._files: dict[int, CdnFile] = {}
        self._secret = secrets.token_bytes(16)
        self._failures: list[int] = []
        self._issued = itertools.count(int(time.time()))

    def add(
        self, base_url: str, attachment_id: int, filename: str, data: bytes, ctype: str | None
    ) -> tuple[str, str]:
        """Keep the bytes; the attachment's signed ``url`` and ``proxy_url``."""
        self._files[attachment_id] = CdnFile(attachment_id, filename, bytes(data), ctype)
        issued = next(self._issued)
        expires = f"{issued + _DAY:x}"
        query = f"ex={expires}&is={issued:x}&hm={self._sign(attachment_id, expires)}&"
        path = f"attachments/{attachment_id}/{quote(filename)}?{query}"
        return f"{base_url}/{path}", f"{base_url}/media/{path}"

    def attachment(
        self,
        base_url: str,
        attachment_id: int,
        data: bytes,
        filename: str,
        *,
        content_type: str | None = None,
        width: int | None = None,
        height: int | None = None,
        description: str | None = None,
        voice_seconds: float | None = None,
    ) -> dict[str, Any]:
        """Keep a file a user attaches; its attachment object, with links under ``base_url``.

        ``content_type`` defaults to the image format the bytes are, else the file name's
        type; an image's ``width``/``height`` default to its real size. ``voice_seconds``
        makes it a voice message (``duration_secs`` and a ``waveform``; Discord names those
        ``voice-message.ogg``, type ``audio/ogg``).
        """
        image = sniff_image(data)
        if voice_seconds is not None:
            content_type = content_type or "audio/ogg"
        elif image is not None:
            content_type = content_type or image.mime
            width = width or image.width
            height = height or image.height
        content_type = content_type or mimetypes.guess_type(filename)[0]
        url, proxy_url = self.add(base_url, attachment_id, filename, data, content_type)
        waveform = None
        if voice_seconds is not None:
            waveform = base64.b64encode(bytes(range(0, 256, 4))).decode()
        return attachment_object(
            attachment_id,
            filename,
            len(data),
            url,
            proxy_url,
            content_type=content_type,
            width=width,
            height=height,
            description=description,
            duration_secs=voice_seconds,
            waveform=waveform,
        )

    def _sign(self, attachment_id: int, expires: str) -> str:
        return hashlib.sha256(self._secret + f"{attachment_id}:{expires}".encode()).hexdigest()

    def fail_next(self, times: int = 1, status: int = 500) -> None:
        """The next ``times`` downloads (of any attachment) are answered ``status``."""
        self._failures.extend([status] * times)

    def file(self, attachment_id: int) -> CdnFile:
        """An attachment's record; ``LookupError`` for an id the fake never issued."""
        found = self._files.get(attachment_id)
        if found is None:
            raise LookupError(f"the fake Discord has no attachment {attachment_id}")
        return found

    def downloads(self, attachment_id: int | None = None) -> int:
        """Times one attachment (or, without an id, every one) was downloaded."""
        if attachment_id is None:
            return sum(f.downloads for f in self._files.values())
        return self.file(attachment_id).downloads

    def routes(self) -> list[web.RouteDef]:
        """The CDN's routes (the ``url`` and ``proxy_url`` forms)."""
        return [
            web.get("/attachments/{id}/{filename}", self._serve),
            web.get("/media/attachments/{id}/{filename}", self._serve),
        ]

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        raw_id = request.match_info["id"]
        found = self._files.get(int(raw_id)) if raw_id.isdigit() else None
        expires = request.query.get("ex", "")
        signed = found is not None and secrets.compare_digest(
            request.query.get("hm", ""), self._sign(found.attachment_id, expires)
        )
        if found is None or not signed or request.match_info["filename"] != found.filename:
            return web.Response(status=404, text=_GONE)
        if self._failures:
            found.failed += 1
            return web.Response(status=self._failures.pop(0), text="upstream connect error")
        found.downloads += 1
        ctype = found.content_type or "application/octet-stream"
        return web.Response(body=found.data, headers={"Content-Type": ctype})
