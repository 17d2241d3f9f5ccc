"""The sessions directory: one folder per session, plus the chat index and quarantine.

```
sessions/<session_id>/events.jsonl   state.yaml   events.archive.jsonl   outputs/   attachments/
sessions/chats.jsonl                  chat key → session id
sessions/_quarantine/<session_id>/    sessions whose files could not be trusted (+ REASON.txt)
sessions/<session_id>/state.json.migrated   the reference's snapshot, kept once converted
```

A quarantined session is kept, listed with its reason, and refused (never resumed as an empty
chat) until ``restore`` moves it back; if its files are still bad, the next load quarantines it
again with the new reason.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from duragent.core.events import now_rfc3339
from duragent.store import reference_migration as migration
from duragent.store.atomic import atomic_write
from duragent.store.attachment_blobs import AttachmentFiles
from duragent.store.chat_index import ChatIndex, ChatKey, check_entry
from duragent.store.event_log import EVENTS_FILENAME, EventLog
from duragent.store.fileops import OS_FILE_OPS, FileOps
from duragent.store.health import StoreHealth
from duragent.store.saved_outputs import DEFAULT_LIMITS, SavedOutputFiles, SavedOutputLimits
from duragent.store.snapshot_file import (
    LEGACY_STATE_FILENAME,
    STATE_FILENAME,
    SnapshotCorruptError,
    SnapshotFile,
    read_header,
)

__all__ = ["QUARANTINE_DIRNAME", "REASON_FILENAME", "SessionStore"]

log = logging.getLogger(__name__)

QUARANTINE_DIRNAME = "_quarantine"
REASON_FILENAME = "REASON.txt"


class SessionStore:
    """Where sessions live on disk: the file backend of ``protocols.SessionStorage``."""

    def __init__(self, root: Path, ops: FileOps = OS_FILE_OPS) -> None:
        self.root = root
        self.ops = ops
        self.chats = ChatIndex(root, ops)
        self.health = StoreHealth(root, ops)
        """Whether the last write succeeded (``/readyz`` reports it)."""
        self.on_append: Callable[[float], None] | None = None
        """Told each event-log append's seconds (write + fsync), for ``observability.metrics``."""

    def open(self) -> None:
        """Create the directory if needed and load the chat index, checking its entries.

        When lines of the index were set aside (``ChatIndex.load``), the chats they mapped are
        recovered from the snapshot headers: each chat's newest session that is not completed.
        An entry whose session folder is gone is kept (the registry starts that chat a new
        session on its next message, logging why) and reported until then
        (``ChatIndex.find_gone``: one listing of the folder, no reads). Sessions the
        reference left (``state.json``) are converted first (``reference_migration``).
        """
        self.root.mkdir(parents=True, exist_ok=True)
        self.chats.load()
        self._migrate_reference_sessions()
        if self.chats.damaged:
            added = self.chats.recover(self._chats_from_headers().items())
            log.error("chat index: %d chat(s) recovered from the session snapshots", added)
        self.chats.find_gone(set(self.list_ids()), set(self.quarantined()))

    def _migrate_reference_sessions(self) -> None:
        """Convert the sessions the reference left (``reference_migration``: why and how).

        Each step is done for every session before the next starts, so a crash anywhere
        leaves each one readable and the next start resumes: a session keeps its
        ``state.json`` (which marks it as still to do) until its ``state.yaml`` is written
        and its chat mapped.
        """
        waiting = migration.waiting_ids(self.root)
        if not waiting:
            return
        ready: list[str] = []
        for session_id in waiting:
            try:
                migration.convert(self.root / session_id, self.ops)
            except (OSError, SnapshotCorruptError) as exc:  # loads as before, or quarantined
                log.error("session %s: its state.json was not converted: %s", session_id, exc)
                continue
            ready.append(session_id)
        try:
            mapped = self.chats.recover(self._chats_from_headers(ready).items())
        except OSError as exc:  # nothing set aside: the next start maps them again
            log.error("chat index: the migrated sessions' chats not mapped: %s", exc)
            return
        moved = 0
        for session_id in ready:
            try:
                migration.set_aside(self.root / session_id, self.ops)
            except OSError as exc:  # state.yaml is read first; the next start retries
                log.error("session %s: could not set state.json aside: %s", session_id, exc)
                continue
            moved += 1
        log.info(
            "migrated %d session(s) of the reference (%d chat(s) mapped): state.json became "
            "state.yaml; each original is kept as <session>/state.json%s",
            moved,
            mapped,
            migration.MIGRATED_SUFFIX,
        )

    def _chats_from_headers(self, ids: list[str] | None = None) -> dict[ChatKey, str]:
        """Each chat's newest not-completed session, as the snapshot headers record it.

        Among ``ids`` only, when given (the sessions just migrated).
        """
        found: dict[ChatKey, str] = {}
        for session_id in self.list_ids() if ids is None else sorted(ids):  # the newest wins
            try:
                head = self.header(session_id) or {}
            except (OSError, SnapshotCorruptError) as exc:  # the session's own problem
                log.warning("chat index: session %s not recovered: %s", session_id, exc)
                continue
            config = head.get("config")
            chat: dict[str, Any] = config if isinstance(config, dict) else head
            key = (chat.get("gateway"), chat.get("gateway_chat_id"), head.get("agent"))
            if head.get("status") == "completed" or not all(isinstance(p, str) for p in key):
                continue
            try:
                found[check_entry(key, session_id)] = session_id
            except ValueError:
                continue
        return found

    def close(self) -> None:
        """Nothing is held between writes (each log is closed by its owner)."""

    def directory(self, session_id: str) -> Path:
        """The folder of ``session_id`` (validated: no path tricks)."""
        if not session_id or "/" in session_id or session_id.startswith((".", "_")):
            raise ValueError(f"invalid session id {session_id!r}")
        return self.root / session_id

    def create(self, session_id: str) -> Path:
        """Make the folder of a new session durable (mkdir + fsync of the parent)."""
        path = self.directory(session_id)
        path.mkdir(parents=True, exist_ok=False)
        self.ops.fsync_dir(self.root)
        return path

    def discard_new(self, session_id: str) -> None:
        """Remove the folder of a session whose creation failed (never announced)."""
        shutil.rmtree(self.directory(session_id), ignore_errors=True)

    def exists(self, session_id: str) -> bool:
        """True when the session's folder has a snapshot or an event log."""
        try:
            path = self.directory(session_id)
        except ValueError:
            return False
        return any(
            (path / name).exists()
            for name in (STATE_FILENAME, LEGACY_STATE_FILENAME, EVENTS_FILENAME)
        )

    def list_ids(self) -> list[str]:
        """Every session id on disk, sorted (ULIDs sort by creation time). Cheap: no reads."""
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return []
        return sorted(
            e.name
            for e in entries
            if e.is_dir(follow_symlinks=False) and not e.name.startswith(("_", "."))
        )

    def event_log(self, session_id: str) -> EventLog:
        """The event log of ``session_id``."""
        return EventLog(self.directory(session_id), self.ops, self.on_append)

    def snapshot(self, session_id: str) -> SnapshotFile:
        """The snapshot file of ``session_id``."""
        return SnapshotFile(self.directory(session_id), self.ops)

    def header(self, session_id: str, *, quarantined: bool = False) -> dict[str, Any] | None:
        """The snapshot's metadata without its conversation (``snapshot_file.read_header``)."""
        folder = self.directory(session_id)
        if quarantined:
            folder = self.root / QUARANTINE_DIRNAME / folder.name
        return read_header(folder, self.ops)

    def saved_outputs(
        self, session_id: str, limits: SavedOutputLimits = DEFAULT_LIMITS
    ) -> SavedOutputFiles:
        """The saved full tool outputs of ``session_id`` (``saved_outputs``)."""
        return SavedOutputFiles(self.directory(session_id), limits, self.ops)

    def attachments(self, session_id: str) -> AttachmentFiles:
        """The attachments of ``session_id`` (``attachment_blobs``: in its folder)."""
        return AttachmentFiles(self.directory(session_id), self.ops)

    def remove_stale_temp_files(self, session_id: str) -> None:
        """Temp files of writes a crash interrupted (their targets were never replaced).

        The session's own files are written by its actor alone, which is loading now; its
        attachments' temp files only when a crash left them (``attachment_blobs``).
        """
        for stale in self.directory(session_id).glob("*.tmp"):
            try:
                stale.unlink()
            except OSError as exc:
                log.warning("could not remove %s: %s", stale, exc)
        self.attachments(session_id).remove_stale_temp_files()

    def delete(self, session_id: str) -> None:
        """Remove the session's folder and its chat mappings (missing is fine)."""
        self.chats.remove_session(session_id)
        shutil.rmtree(self.directory(session_id), ignore_errors=True)

    def quarantine(self, session_id: str, reason: str) -> Path:
        """Move an untrustworthy session aside with the reason, so it is kept but not resumed.

        The folder keeps the session id as its name (``restore`` and the 409 answers find it
        by id); only if a copy with that id is already there does the new one get a suffix.
        """
        source = self.directory(session_id)
        target_root = self.root / QUARANTINE_DIRNAME
        target_root.mkdir(exist_ok=True)
        target = target_root / session_id
        suffix = 1
        while target.exists():
            suffix += 1
            target = target_root / f"{session_id}.{suffix}"
        self.ops.replace(source, target)
        atomic_write(target / REASON_FILENAME, f"{now_rfc3339()} {reason}\n".encode(), self.ops)
        self.ops.fsync_dir(self.root)
        self.chats.remove_session(session_id)
        log.error("session %s quarantined to %s: %s", session_id, target, reason)
        return target

    def quarantined(self) -> list[str]:
        """Ids of quarantined sessions."""
        folder = self.root / QUARANTINE_DIRNAME
        if not folder.is_dir():
            return []
        return sorted(p.name for p in folder.iterdir() if p.is_dir())

    def quarantine_reason(self, session_id: str) -> str | None:
        """Why ``session_id`` is quarantined (``REASON.txt``), or None when it is not."""
        try:
            folder = self.root / QUARANTINE_DIRNAME / self.directory(session_id).name
        except ValueError:
            return None
        if not folder.is_dir():
            return None
        try:
            text = (folder / REASON_FILENAME).read_text(encoding="utf-8").strip()
        except OSError as exc:
            text = f"(reason unreadable: {exc})"
        return text or "(no reason recorded)"

    def restore(self, session_id: str) -> Path:
        """Move a quarantined session back; it is loaded (and checked again) on next use.

        Raises ``FileNotFoundError`` when it is not quarantined and ``FileExistsError`` when a
        live session with the same id exists. ``REASON.txt`` is kept as ``REASON.restored.txt``
        (a record of what happened).
        """
        target = self.directory(session_id)
        source = self.root / QUARANTINE_DIRNAME / session_id
        if not source.is_dir():
            raise FileNotFoundError(f"session {session_id} is not in {source.parent}")
        if target.exists():
            raise FileExistsError(f"{target} exists: a live session already has this id")
        reason = source / REASON_FILENAME
        if reason.exists():
            self.ops.replace(reason, source / "REASON.restored.txt")
        self.ops.replace(source, target)
        self.ops.fsync_dir(self.root)
        log.warning("session %s restored from quarantine", session_id)
        return target
