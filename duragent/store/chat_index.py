"""``sessions/chats.jsonl``: which session serves each chat, readable without opening sessions.

A chat key is ``(gateway, chat_id, agent)``. Starting with 10,000 sessions on disk must not
mean reading 10,000 snapshots before the first message, so the mapping lives in one small
append-only file: one line per change, ``{"key": [gateway, chat_id, agent], "session_id": …}``
(``null`` when the chat's session ended). The last line for a key wins. Appends are fsync'd
under a lock (several actor threads write); the file is rewritten compactly when it grows to
several times its live size (``atomic_write``). If it is lost, ``rebuild`` recreates it
from the snapshots. Every write goes through ``FileOps``.

Every entry is checked before it is appended (``check_entry``: a key of three non-empty
strings, a session id that names a folder) and again when the file is read. A line that
fails (a torn last line, bad JSON, a bad key or id) is skipped, never fatal: the other chats
keep their sessions. The file as it was is then moved to ``_quarantine/chats.<time>.jsonl``
with ``….reason.txt`` beside it (each bad line and why) and rewritten from the good lines;
``SessionStore.open`` maps the chats the bad lines lost again from the sessions' snapshot
headers. ``skipped`` lists what was set aside — this start's and the earlier starts' files
still in the quarantine folder — for ``/readyz`` and ``doctor``.

An entry whose session is gone (its folder deleted or moved to ``_quarantine/`` by hand) is
a valid line naming a session that no longer exists. It is kept — the chat's next message
finds the session missing and starts a new one, which replaces it
(``SessionRegistry.for_chat``) — and reported meanwhile: ``SessionStore.open`` checks every
entry against the session folders (one directory listing, no reads) and ``skipped`` lists
each such entry (``record``, ``reason``; nothing is moved) until it is replaced or removed.
``read_problems`` (``doctor``) does the same check.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Collection, Iterable
from pathlib import Path

from duragent.core.events import now_rfc3339
from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps, write_all
from duragent.store.health import storage_error

__all__ = [
    "CHAT_INDEX_FILENAME",
    "ChatIndex",
    "ChatKey",
    "check_entry",
    "read_problems",
    "session_id_problem",
]

log = logging.getLogger(__name__)

CHAT_INDEX_FILENAME = "chats.jsonl"

ChatKey = tuple[str, str, str]
"""(gateway, chat_id, agent)."""

QUARANTINE_DIRNAME = "_quarantine"
_REASON_SUFFIX = ".reason.txt"
_MAX_PART = 1000


def session_id_problem(session_id: object) -> str | None:
    """Why ``session_id`` cannot name a session folder (``SessionStore.directory``), or None."""
    if not isinstance(session_id, str) or not session_id:
        return f"session_id {session_id!r} is not a non-empty string"
    if len(session_id) > 255 or "/" in session_id or "\x00" in session_id:
        return f"session_id {session_id[:80]!r} is not a valid folder name"
    if session_id.startswith((".", "_")):
        return f"session_id {session_id[:80]!r} starts with '.' or '_'"
    return None


def check_entry(key: object, session_id: object) -> ChatKey:
    """``key`` as a ``ChatKey`` when it and ``session_id`` (None: unmapped) are valid.

    ValueError names the field otherwise: an entry the reader would skip is never written.
    """
    if not isinstance(key, (list, tuple)) or len(key) != 3:
        raise ValueError(f"key {key!r:.120} is not [gateway, chat_id, agent]")
    for name, part in zip(("gateway", "chat_id", "agent"), key, strict=True):
        if not isinstance(part, str) or not part or len(part) > _MAX_PART:
            raise ValueError(f"key's {name} {part!r:.80} is not a non-empty string")
    if session_id is not None:
        problem = session_id_problem(session_id)
        if problem:
            raise ValueError(problem)
    return (key[0], key[1], key[2])


def _parse_line(line: bytes) -> tuple[ChatKey, str | None]:
    """One line's entry; ValueError says why it cannot be used."""
    try:
        entry = json.loads(line)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(entry, dict) or "key" not in entry:
        raise ValueError('not an object with "key" and "session_id"')
    session_id = entry.get("session_id")
    return check_entry(entry["key"], session_id), session_id


class ChatIndex:
    """Chat key → session id, persisted as an append-only JSON-lines file."""

    def __init__(self, sessions_dir: Path, ops: FileOps = OS_FILE_OPS) -> None:
        self.path = sessions_dir / CHAT_INDEX_FILENAME
        self._ops = ops
        self._lock = threading.Lock()
        self._map: dict[ChatKey, str] = {}
        self._lines = 0
        self._skipped: list[dict[str, str]] = []
        self._gone: dict[ChatKey, tuple[str, dict[str, str]]] = {}
        """Entries whose session was gone at ``find_gone``: (that session, the report)."""
        self.damaged = False
        """The last ``load`` set lines aside: chats they mapped may need recovering."""

    def load(self) -> None:
        """Read the file (missing = empty); ``damaged`` when lines were set aside (see above).

        A file the machine refuses to read counts as wholly bad: it is moved aside and the
        index starts from what ``SessionStore.open`` recovers from the snapshots.
        """
        mapping: dict[ChatKey, str] = {}
        lines = 0
        bad: list[tuple[int, str]] = []
        try:
            raw = self._ops.read_bytes(self.path)
        except FileNotFoundError:
            raw = b""
        except OSError as exc:
            raw = b""
            bad.append((0, f"the file cannot be read: {exc}"))
        numbered = raw.split(b"\n")
        for number, line in enumerate(numbered, start=1):
            if not line.strip():
                continue
            lines += 1
            try:
                key, session_id = _parse_line(line)
            except ValueError as exc:
                torn = number == len(numbered)  # no newline after it: a cut append
                bad.append((number, ("torn last line: " if torn else "") + str(exc)))
                continue
            if session_id:
                mapping[key] = session_id
            else:
                mapping.pop(key, None)
        with self._lock:
            self._map = mapping
            self._lines = lines
            self._skipped = []
            self._gone = {}
            if bad:
                self._set_aside_locked(bad)
        self.damaged = bool(bad)
        self._skipped += self._earlier()

    def skipped(self) -> list[dict[str, str]]:
        """What was set aside: ``record``, ``reason``, ``moved_to`` (``/readyz``, ``doctor``).

        Also each entry whose session is gone (``find_gone``) while it still maps that
        session (``record`` and ``reason`` only: it was not moved).
        """
        with self._lock:
            gone = [r for key, (sid, r) in self._gone.items() if self._map.get(key) == sid]
            return list(self._skipped) + gone

    def find_gone(self, sessions: Collection[str], quarantined: Collection[str] = ()) -> int:
        """Note every entry whose session is not in ``sessions``; how many (logged once).

        ``quarantined``: sessions in the quarantine folder (said in the reason). The entries
        stay: the chat's next message replaces its own (see the module docstring).
        """
        with self._lock:
            self._gone = {
                key: (sid, _gone_record(self.path, key, sid, sid in quarantined))
                for key, sid in self._map.items()
                if sid not in sessions
            }
            found = [record["record"] for _, record in self._gone.values()]
        if found:
            shown = "; ".join(found[:3]) + (f"; … {len(found) - 3} more" if len(found) > 3 else "")
            log.warning(
                "chat index: %d chat(s) map to a session that no longer exists (each chat's "
                "next message starts a new session; reported until then): %s",
                len(found),
                shown,
            )
        return len(found)

    def recover(self, entries: Iterable[tuple[ChatKey, str]]) -> int:
        """Map the chats the index lost (only keys it does not map); how many, then compact."""
        added = 0
        with self._lock:
            for key, session_id in entries:
                if key not in self._map:
                    self._map[key] = session_id
                    added += 1
            if added:
                self._rewrite_locked()
        return added

    def _set_aside_locked(self, bad: list[tuple[int, str]]) -> None:
        """Move the file to quarantine with each bad line's reason; rewrite the good part."""
        folder = self.path.parent / QUARANTINE_DIRNAME
        target: Path | None = (
            folder / f"chats.{time.strftime('%Y%m%dT%H%M%S')}.{time.time_ns() % 10**9}.jsonl"
        )
        note = "".join(
            f"{now_rfc3339()} {'line ' + str(n) if n else 'file'}: {why}\n" for n, why in bad
        )
        try:
            folder.mkdir(parents=True, exist_ok=True)
            assert target is not None
            atomic_write(target.with_name(target.name + _REASON_SUFFIX), note.encode(), self._ops)
            if self.path.exists():
                self._ops.replace(self.path, target)
            self._rewrite_locked()
        except OSError as exc:  # the good entries are in memory; the bad are skipped anyway
            log.error("chat index: could not move %s aside: %s", self.path, exc)
            target = None
        for number, why in bad:
            where = f"{self.path} line {number}" if number else str(self.path)
            record = {"record": where, "reason": why}
            if target is not None:
                record["moved_to"] = str(target)
            self._skipped.append(record)
            log.error("chat index: %s skipped: %s", where, why)
        if target is not None:
            log.error(
                "chat index: %d bad line(s) set aside; %s moved to %s and rewritten from the "
                "good lines (chats they mapped are recovered from the session snapshots)",
                len(bad),
                self.path,
                target,
            )

    def _earlier(self) -> list[dict[str, str]]:
        """Files an earlier start set aside (still in the quarantine folder), with why."""
        folder = self.path.parent / QUARANTINE_DIRNAME
        found: list[dict[str, str]] = []
        if not folder.is_dir():
            return found
        with self._lock:
            this_start = {r.get("moved_to") for r in self._skipped}
        for path in sorted(folder.glob("chats.*.jsonl")):
            if str(path) in this_start:
                continue
            try:
                text = path.with_name(path.name + _REASON_SUFFIX).read_text(encoding="utf-8")
            except OSError as exc:
                text = f"(reason unreadable: {exc})"
            found.append(
                {
                    "record": str(path),
                    "reason": text.strip() or "(no reason recorded)",
                    "moved_to": str(path),
                }
            )
        return found

    def get(self, key: ChatKey) -> str | None:
        """The session serving ``key``, if any."""
        with self._lock:
            return self._map.get(key)

    def items(self) -> list[tuple[ChatKey, str]]:
        """A copy of every mapping."""
        with self._lock:
            return list(self._map.items())

    def set(self, key: ChatKey, session_id: str | None) -> None:
        """Durably map ``key`` to ``session_id`` (None removes it); ValueError if invalid."""
        key = check_entry(key, session_id)
        line = json.dumps({"key": list(key), "session_id": session_id}) + "\n"
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = self._ops.open_append(self.path)
                try:
                    if self._ops.size(fd) and not _ends_with_newline(self.path):
                        line = "\n" + line  # after a torn line: never glued onto it
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
        fresh = {check_entry(key, sid): sid for key, sid in entries}
        with self._lock:
            self._map = fresh
            self._rewrite_locked()

    def _rewrite_locked(self) -> None:
        """One line per live mapping, replacing the file atomically (``StorageError``)."""
        text = "".join(
            json.dumps({"key": list(key), "session_id": session_id}) + "\n"
            for key, session_id in self._map.items()
        )
        atomic_write(self.path, text.encode(), self._ops)
        self._lines = len(self._map)


def _gone_record(path: Path, key: ChatKey, session_id: str, quarantined: bool) -> dict[str, str]:
    """How ``skipped`` and ``doctor`` report an entry whose session is gone."""
    where = f"sessions/{QUARANTINE_DIRNAME}/{session_id}" if quarantined else "no folder"
    return {
        "record": f"{path} chat {list(key)}",
        "reason": f"its session {session_id} no longer exists ({where}); the chat's next "
        "message starts a new session, which replaces this entry",
    }


def _ends_with_newline(path: Path) -> bool:
    """Whether the file's last byte is a newline (a crash can cut an append short)."""
    with path.open("rb") as f:
        f.seek(-1, 2)
        return f.read(1) == b"\n"


def read_problems(sessions_dir: Path) -> list[dict[str, str]]:
    """What ``load`` would set aside, and what earlier starts did, without writing (doctor)."""
    path = sessions_dir / CHAT_INDEX_FILENAME
    found: list[dict[str, str]] = []
    try:
        numbered = path.read_bytes().split(b"\n")
    except FileNotFoundError:
        numbered = []
    except OSError as exc:
        numbered = []
        found.append({"record": str(path), "reason": f"the file cannot be read: {exc}"})
    mapping: dict[ChatKey, str] = {}
    for number, line in enumerate(numbered, start=1):
        if line.strip():
            try:
                key, session_id = _parse_line(line)
            except ValueError as exc:
                found.append({"record": f"{path} line {number}", "reason": str(exc)})
                continue
            if session_id:
                mapping[key] = session_id
            else:
                mapping.pop(key, None)
    folder = sessions_dir / QUARANTINE_DIRNAME
    if mapping:
        sessions = _folders(sessions_dir)
        quarantined = _folders(folder)
        found.extend(
            _gone_record(path, key, sid, sid in quarantined)
            for key, sid in mapping.items()
            if sid not in sessions
        )
    for moved in sorted(folder.glob("chats.*.jsonl")) if folder.is_dir() else []:
        try:
            text = moved.with_name(moved.name + _REASON_SUFFIX).read_text(encoding="utf-8")
        except OSError as exc:
            text = f"(reason unreadable: {exc})"
        found.append({"record": str(moved), "reason": text.strip() or "(no reason recorded)"})
    return found


def _folders(directory: Path) -> set[str]:
    """The names of the folders in ``directory`` (none when it cannot be listed)."""
    try:
        with os.scandir(directory) as entries:
            return {e.name for e in entries if e.is_dir(follow_symlinks=False)}
    except OSError:
        return set()
