"""``MediaIndex``: which platform files a session already holds, so none is downloaded twice.

A platform delivers an update again when the first delivery was not confirmed: after a crash
between keeping a photo's bytes and recording its message, or between recording it and
confirming it. The blob store is content-addressed, so keeping the same bytes twice writes
nothing, but the *download* would happen again (and a voice note would be transcribed
again). This index remembers, per session, the ``Attachment`` kept for each platform file
(``MediaRef.key``: Telegram's ``file_unique_id``, a Discord attachment id, a gateway's URL);
the intake asks it before downloading and, when the session's store still holds that hash
(``SessionAttachments.has``), reuses the record: no download, no transcription.

It lives in the workspace's ``.duragent/media/`` (front ends never write into a session's
store but through ``TurnRunner``), one JSON-lines file per session, each line appended
right after the bytes were kept. It is not fsync'd: a killed process's writes are in the
kernel's page cache and survive it, so a redelivery after a SIGKILL finds the line; only a
machine that loses power may lose the last lines, and a lost or torn line (one that does not
read is skipped) costs one download again, nothing else — the blob store keeps the same
bytes once. It is a cache of downloads, not a record: the ``user_message`` event, fsync'd,
is. With several
nodes each keeps its own (a redelivery to another node downloads once more). A deleted
session's file stays (small; its hashes are no longer held, so it is never trusted).

The same folder remembers the chats told how to turn on voice transcription
(``told.txt``), so each chat is told once, across restarts too.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
from collections import OrderedDict
from pathlib import Path

from duragent.core.attachments import Attachment

__all__ = ["MediaIndex"]

log = logging.getLogger(__name__)

_SAFE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}")
_CACHED_SESSIONS = 256
"""Sessions whose index is kept in memory (each a few lines; read again when evicted)."""


class MediaIndex:
    """Per session: platform file key → the ``Attachment`` kept for it (module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._cache: OrderedDict[str, dict[str, Attachment]] = OrderedDict()
        self._told: set[str] | None = None
        self._lock = threading.Lock()  # the files are written from worker threads

    def _file(self, session_id: str) -> Path:
        name = session_id if _SAFE.fullmatch(session_id) else _digest(session_id)
        return self.folder / f"{name}.jsonl"

    async def get(self, session_id: str, key: str) -> Attachment | None:
        """The attachment kept for the platform file ``key`` in the session, if any."""
        known = self._cache.get(session_id)
        if known is None:
            known = await asyncio.to_thread(self._read, session_id)
            self._cache[session_id] = known
            while len(self._cache) > _CACHED_SESSIONS:
                self._cache.popitem(last=False)
        self._cache.move_to_end(session_id)
        return known.get(key)

    async def put(self, session_id: str, key: str, attachment: Attachment) -> None:
        """Remember ``attachment`` for ``key`` (durable when this returns)."""
        await asyncio.to_thread(self.write, session_id, key, attachment)
        self.remember(session_id, key, attachment)

    def write(self, session_id: str, key: str, attachment: Attachment) -> None:
        """``put``'s line, from a worker thread that has other work in hand.

        The intake's, keeping the bytes: one hop for both. ``remember`` follows, on the loop.
        """
        line = json.dumps({"key": key, "attachment": attachment.to_data()}, ensure_ascii=False)
        self._append(self._file(session_id), line)

    def remember(self, session_id: str, key: str, attachment: Attachment) -> None:
        """``put``'s entry in memory, once its line is written (``write``)."""
        known = self._cache.get(session_id)
        if known is not None:
            known[key] = attachment

    def _read(self, session_id: str) -> dict[str, Attachment]:
        path = self._file(session_id)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        found: dict[str, Attachment] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            try:
                record = json.loads(line)
                found[str(record["key"])] = Attachment.of(record["attachment"])
            except (ValueError, KeyError, TypeError):  # a torn line: that file downloads again
                log.debug("%s line %d is not a media record; skipped", path, number)
        return found

    def _append(self, path: Path, line: str) -> None:
        with self._lock:
            if not path.parent.is_dir():
                path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as file:
                file.write(line + "\n")  # not fsync'd: module docstring

    async def tell_once(self, chat: str) -> bool:
        """Whether ``chat`` has not been told yet (it is marked told when this returns True)."""
        return await asyncio.to_thread(self._tell_once, chat)

    def _tell_once(self, chat: str) -> bool:
        path = self.folder / "told.txt"
        with self._lock:
            if self._told is None:
                try:
                    self._told = set(path.read_text(encoding="utf-8").splitlines())
                except FileNotFoundError:
                    self._told = set()
            if chat in self._told:
                return False
            self._told.add(chat)
        self._append(path, chat.replace("\n", " "))
        return True


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
