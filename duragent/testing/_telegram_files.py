"""The fake Telegram's files: ``getFile`` and the file server a bot downloads them from.

A bot gets a photo, voice note or document in two steps, as on Telegram: ``getFile(file_id)``
answers a ``File`` with a ``file_path``, and the bytes are at
``<base_file_url><token>/<file_path>`` (python-telegram-bot builds that URL from the bot's
``base_file_url``; the fake's is ``FakeTelegram.base_file_url``). Telegram's rules that a
gateway meets are kept: an unknown ``file_id`` is 400 "Bad Request: invalid file_id", a file
over the 20 MB a bot may download is 400 "Bad Request: file is too big" (and gets no path), a
wrong token on the file server is 404. Each file counts the times it was served, so a test
can say "downloaded once" across a crash and a redelivery; the fake's ``FaultRule`` s apply
to downloads under the method name ``DOWNLOAD_METHOD`` (a 500 once, a slow or dropped
download), matched by the chat the file was sent in. The file server answers under a node's
``/n/{node}`` prefix too (``_fake_nodes``), and each download keeps the node that made it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from duragent.testing._fake_nodes import node_of
from duragent.testing._telegram_http import respond
from duragent.testing.telegram_faults import FaultBook

__all__ = ["DOWNLOAD_METHOD", "MAX_FILE_SIZE", "FileServer", "FileStore", "TelegramFile"]

MAX_FILE_SIZE = 20 * 1024 * 1024
"""The largest file ``getFile`` lets a bot download (Telegram's limit for bots)."""
DOWNLOAD_METHOD = "downloadFile"
"""The method name ``FaultRule`` s match downloads by (the file server has no method names)."""

Answer = tuple[int, dict[str, Any]]


@dataclass
class TelegramFile:
    """One file a user sent: its ids, bytes, path on the file server, and download count."""

    file_id: str
    file_unique_id: str
    data: bytes
    file_path: str
    mime_type: str
    chat_id: int | str | None = None
    downloads: int = 0
    """Times its bytes were served whole (faulted attempts not counted)."""
    download_nodes: list[str] = field(default_factory=list)
    """The node that made each of those downloads, in order (which process fetched it)."""


class FileStore:
    """The files users sent, by ``file_id`` and by path (not thread-safe: callers lock)."""

    def __init__(self, size_limit: int = MAX_FILE_SIZE) -> None:
        self.size_limit = size_limit
        self._by_id: dict[str, TelegramFile] = {}
        self._by_path: dict[str, TelegramFile] = {}
        self._numbers = itertools.count(1)

    def add(
        self,
        data: bytes,
        *,
        kind: str,
        folder: str,
        extension: str,
        mime_type: str,
        chat_id: int | str,
    ) -> TelegramFile:
        """Keep ``data`` as a new file (``kind`` names its ids: ``photo-3``, ``voice-4``)."""
        number = next(self._numbers)
        path = f"{folder}/file_{number}.{extension.lstrip('.') or 'bin'}"
        found = TelegramFile(
            f"{kind}-{number}", f"u-{kind}-{number}", bytes(data), path, mime_type, chat_id
        )
        self._by_id[found.file_id] = found
        self._by_path[path] = found
        return found

    def get(self, file_id: str) -> TelegramFile | None:
        """A file by ``file_id``."""
        return self._by_id.get(file_id)

    def servable(self, path: str) -> TelegramFile | None:
        """The file at ``path`` on the file server (never one over the size limit)."""
        found = self._by_path.get(path)
        return found if found is not None and len(found.data) <= self.size_limit else None

    def downloads(self, file_id: str | None = None, node: str | None = None) -> int:
        """Times one file (or, without ``file_id``, every file) was downloaded (by ``node``)."""
        if file_id is None:
            chosen = list(self._by_id.values())
        elif (found := self._by_id.get(file_id)) is not None:
            chosen = [found]
        else:
            raise LookupError(f"the fake Telegram has no file {file_id!r}")
        if node is None:
            return sum(f.downloads for f in chosen)
        return sum(f.download_nodes.count(node) for f in chosen)

    def all_downloads(self) -> dict[str, int]:
        """Every file's download count, by ``file_id``."""
        return {f.file_id: f.downloads for f in self._by_id.values()}

    def get_file(self, params: dict[str, Any]) -> Answer:
        """The ``getFile`` method: the ``File`` a bot downloads by its ``file_path``."""
        file_id = params.get("file_id")
        found = self._by_id.get(file_id) if isinstance(file_id, str) else None
        if found is None:
            return 400, _error(400, "Bad Request: invalid file_id")
        if len(found.data) > self.size_limit:
            return 400, _error(400, "Bad Request: file is too big")
        result = {
            "file_id": found.file_id,
            "file_unique_id": found.file_unique_id,
            "file_size": len(found.data),
            "file_path": found.file_path,
        }
        return 200, {"ok": True, "result": result}


def _error(code: int, description: str) -> dict[str, Any]:
    return {"ok": False, "error_code": code, "description": description}


class FileServer:
    """``GET /file/bot<token>/<file_path>``: the bytes, counted, with the fault rules applied."""

    def __init__(
        self,
        files: FileStore,
        token: Callable[[], str],
        faults: FaultBook,
        lock: threading.Lock,
        pause: Callable[[float], Awaitable[None]],
    ) -> None:
        self._files = files
        self._token = token
        self._faults = faults
        self._lock = lock
        self._pause = pause

    async def serve(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            found = self._files.servable(request.match_info["path"])
        if request.match_info["token"] != self._token() or found is None:
            return respond(404, _error(404, "Not Found"))
        choice = self._faults.choose(DOWNLOAD_METHOD, found.chat_id)
        if choice.delay:
            await self._pause(choice.delay)
        fault = choice.fault
        if fault is not None and fault.kind in ("drop", "drop_after"):
            if fault.kind == "drop_after":  # served, as far as the file server knows
                self._count(found, node_of(request))
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500)  # never reaches the client
        if fault is not None:
            return respond(*fault.answer())
        self._count(found, node_of(request))
        return web.Response(body=found.data, content_type=found.mime_type)

    def _count(self, found: TelegramFile, node: str) -> None:
        with self._lock:
            found.downloads += 1
            found.download_nodes.append(node)
