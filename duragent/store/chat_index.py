"""``sessions/chats.jsonl``: which session serves each chat, readable without opening sessions.

A chat key is ``(gateway, chat_id, agent)``. Starting with 10,000 sessions on disk must not
mean reading 10,000 snapshots before the first message, so the mapping lives in one small
append-only file: one line per change, ``{"key": [gateway, chat_id, agent], "session_id": …}``
(``null`` when the chat's session ended). The last line for a key wins. Appends are fsync'd
under a lock (several actor threads write); the file is rewritten compactly when it grows to
several times its live size (``atomic_write``). If it is lost, ``rebuild`` recreates it
from the snapshots. Every write goes through ``FileOps``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from pathlib import Path

from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps, write_all
from duragent.store.health import storage_error

__all__ = ["CHAT_INDEX_FILENAME", "ChatIndex", "ChatKey"]

log = logging.getLogger(__name__)

CHAT_INDEX_FILENAME = "chats.jsonl"

ChatKey = tuple[str, str, str]
"""(gateway, chat_id, agent)."""


class ChatIndex:
    """Chat key → session id, persisted as an append-only JSON-lines file."""

    def __init__(self, sessions_dir: Path, ops: FileOps = OS_FILE_OPS) -> None:
        self.path = sessions_dir / CHAT_INDEX_FILENAME
        self._ops = ops
        self._lock = threading.Lock()
        self._map: dict[ChatKey, str] = {}
        self._lines = 0

    def load(self) -> None:
        """Read the file (missing = empty; bad lines are skipped and logged)."""
        mapping: dict[ChatKey, str] = {}
        lines = 0
        bad = 0
        try:
            raw = self._ops.read_bytes(self.path)
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
                fd = self._ops.open_append(self.path)
                try:
                    write_all(self._ops, fd, line.encode())
                    self._ops.fsync(fd)
                finally:
                    self._ops.close(fd)
            except OSError as exc:  # the map is unchanged: memory never runs ahead of disk
                raise storage_error(f"appending to {self.path}", exc) from exc
            if session_id:
                self._map[key] = session_id
            else:
                self._map.pop(key, None)
            self._lines += 1
            if self._lines > 1000 and self._lines > 4 * len(self._map):
                try:
                    self._rewrite_locked()
                except OSError as exc:  # the mapping is durable (appended); shrink next time
                    log.warning("could not rewrite %s compactly: %s", self.path, exc)

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
        """One line per live mapping, replacing the file atomically (``StorageError``)."""
        text = "".join(
            json.dumps({"key": list(key), "session_id": session_id}) + "\n"
            for key, session_id in self._map.items()
        )
        atomic_write(self.path, text.encode(), self._ops)
        self._lines = len(self._map)
