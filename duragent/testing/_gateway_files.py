"""Where an external gateway's media messages point: a small HTTP file server a test fills.

A gateway plugin reports a photo or voice note as ``content: {"type": "media", "media_type",
"url", "caption"}``, and duragent downloads the ``url``. ``MediaFileServer`` serves those
files from the test's process (it outlives the ``duragent serve`` and the gateway child a
crash test kills), counts each file's downloads so a test can say "downloaded once", and
scripts the failures a platform's file host has: ``fail_next`` (a 5xx, once or more) and
``expire`` (the link is gone: 404)::

    async with MediaFileServer() as files:
        url = files.add(png_bytes, "cat.png")
        await child.emit(media_message("42", url, caption="look", message_id="m1", sender_id="42"))
        ...
        assert files.downloads(url) == 1
"""

from __future__ import annotations

import itertools
import mimetypes
import threading
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from aiohttp import web

from duragent.testing._aiohttp_server import EmbeddedAiohttpServer

__all__ = ["MediaFileServer", "ServedFile"]


@dataclass
class ServedFile:
    """One file the server holds."""

    path: str
    data: bytes
    mime_type: str
    downloads: int = 0
    """Times its bytes were served whole."""
    failed: int = 0
    """Requests answered with a scripted failure."""
    expired: bool = False


class MediaFileServer(EmbeddedAiohttpServer):
    """Files at ``http://127.0.0.1:<port>/media/<n>/<name>`` (see the module docstring)."""

    name = "fake gateway file server"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self._files: dict[str, ServedFile] = {}
        self._numbers = itertools.count(1)
        self._failures: list[int] = []
        self._lock = threading.Lock()

    def app(self) -> web.Application:
        """``GET /media/{n}/{name}``."""
        app = web.Application()
        app.router.add_get("/media/{number}/{name}", self._serve)
        return app

    def add(self, data: bytes, name: str, mime_type: str | None = None) -> str:
        """Serve ``data`` as ``name``; its URL (call while serving: it holds the port).

        ``mime_type`` (the ``Content-Type`` served) defaults to the one ``name`` suggests.
        """
        if self._loop is None:
            raise RuntimeError("start the file server before adding files")
        path = f"/media/{next(self._numbers)}/{quote(name)}"
        kind = mime_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
        with self._lock:
            self._files[path] = ServedFile(path, bytes(data), kind)
        return f"{self.url}{path}"

    def file(self, url: str) -> ServedFile:
        """The record of a file by its URL; ``LookupError`` for one never added."""
        with self._lock:
            found = self._files.get(urlsplit(url).path)
        if found is None:
            raise LookupError(f"the file server has no file at {url}")
        return found

    def downloads(self, url: str | None = None) -> int:
        """Times one file (or, without ``url``, every file) was downloaded whole."""
        if url is not None:
            return self.file(url).downloads
        with self._lock:
            return sum(f.downloads for f in self._files.values())

    def fail_next(self, times: int = 1, status: int = 500) -> None:
        """The next ``times`` requests (for any file) are answered ``status``."""
        with self._lock:
            self._failures.extend([status] * times)

    def expire(self, url: str) -> None:
        """The link stops working (404), as a platform's short-lived file links do."""
        self.file(url).expired = True

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            found = self._files.get(request.rel_url.raw_path)
            if found is None or found.expired:
                return web.Response(status=404, text="Not Found")
            if self._failures:
                found.failed += 1
                return web.Response(status=self._failures.pop(0), text="file host error")
            found.downloads += 1
        return web.Response(body=found.data, headers={"Content-Type": found.mime_type})
