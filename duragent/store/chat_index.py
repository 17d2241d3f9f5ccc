"""``sessions/chats.jsonl``: which session serves each chat, readable without opening sessions.

A chat key is ``(gateway, chat_id, agent)``. Starting with 10,000 sessions on disk must not
mean reading 10,000 snapshots before the first message, so the mapping lives in one small
append-only file: one line per change, ``{"key": [gateway, chat_id, agent], "session_id": …}``
(``null`` when the chat's session ended). The last line for a key wins. Appends are fsync'd
under a lock (several actor threads write); the file is rewritten compactly when it grows to
several times its live size. If it is lost, ``rebuild`` recreates it from the snapshots.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path

from duragent.core.ids import new_ulid
from duragent.store.fileops import fsync_dir
from duragent.store.health import storage_error

__all__ = ["CHAT_INDEX_FILENAME", "ChatIndex", "ChatKey"]

log = logging.getLogger(__name__)

CHAT_INDEX_FILENAME = "chats.jsonl"

ChatKey = tuple[str, str, str]
"""(gateway, chat_id, agent)."""


class ChatIndex:
    """Chat key → session id, persisted as an append-only JSON-lines file."""

    def __init__(self, sessions_dir: Path) -> None:
        self.path = sessions_dir / CHAT_INDEX_FILENAME
        self._lock = threading.Lock()
        self._map: dict[ChatKey, str] = {}
        self._lines = 0

    def load(self) -> None:
        """Read the file (missing = empty; bad lines are skipped and logged)."""
        mapping: dict[ChatKey, str] = {}
        lines = 0
        bad = 0
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raw = b""
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            lines += 1
            try:
                entry = json.loads(line)
                gateway, chat_id, agent = entry["key"]
                key = (str(gateway), str(chat_id), str(agent))
                session_id = entry.get("session_id")
            except (ValueError, KeyError, TypeError):
                bad += 1
                continue
            if session_id:
                mapping[key] = str(session_id)
            else:
                mapping.pop(key, None)
        if bad:
            log.warning("%s: skipped %d unreadable line(s)", self.path, bad)
        with self._lock:
            self._map = mapping
            self._lines = lines

    def get(self, key: ChatKey) -> str | None:
        """The session serving ``key``, if any."""
        with self._lock:
            return self._map.get(key)

    def items(self) -> list[tuple[ChatKey, str]]:
        """A copy of every mapping."""
        with self._lock:
            return list(self._map.items())

    def set(self, key: ChatKey, session_id: str | None) -> None:
        """Durably map ``key`` to ``session_id`` (None removes it)."""
        line = json.dumps({"key": list(key), "session_id": session_id}) + "\n"
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
                fd = os.open(self.path, flags, 0o644)
                try:
                    os.write(fd, line.encode())
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as exc:  # the map is unchanged: memory never runs ahead of disk
                raise storage_error(f"appending to {self.path}", exc) from exc
            if session_id:
                self._map[key] = session_id
            else:
                self._map.pop(key, None)
            self._lines += 1
            if self._lines > 1000 and self._lines > 4 * len(self._map):
                self._rewrite_locked()

    def remove_session(self, session_id: str) -> None:
        """Unmap every chat served by ``session_id``."""
        for key in [k for k, v in self.items() if v == session_id]:
            self.set(key, None)

    def rebuild(self, entries: Iterable[tuple[ChatKey, str]]) -> None:
        """Replace the whole index (used when the file was lost or is stale)."""
        with self._lock:
            self._map = dict(entries)
            self._rewrite_locked()

    def _rewrite_locked(self) -> None:
        tmp = self.path.with_name(f"{CHAT_INDEX_FILENAME}.{new_ulid()}.tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for key, session_id in self._map.items():
                fh.write(json.dumps({"key": list(key), "session_id": session_id}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        fsync_dir(self.path.parent)
        self._lines = len(self._map)
