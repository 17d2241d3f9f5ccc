"""Durable files: session event logs and snapshots, the chat index, quarantine.

- ``event_log``: ``events.jsonl`` append-with-fsync, torn-tail safe, de-duplicating reads,
  compaction to ``events.archive.jsonl``.
- ``snapshot_file``: atomic ``state.yaml`` (reads the reference's ``state.json`` too).
- ``chat_index``: chat key → session id without opening every session.
- ``session_store``: the sessions directory as a whole.
- ``fileops``: the OS calls, replaceable to inject disk failures in tests.
- ``health``: OS refusals as ``StorageError`` (never corruption) and whether writes work now.

Imports only ``core`` (and ``errors``).
"""

from __future__ import annotations

from duragent.store.chat_index import ChatIndex, ChatKey
from duragent.store.event_log import EventLog, ReadReport
from duragent.store.fileops import OS_FILE_OPS, FileOps
from duragent.store.health import StoreHealth, is_disk_full, storage_error
from duragent.store.session_store import SessionStore
from duragent.store.snapshot_file import (
    SessionFilesInconsistentError,
    SnapshotCorruptError,
    SnapshotFile,
)

__all__ = [
    "OS_FILE_OPS",
    "ChatIndex",
    "ChatKey",
    "EventLog",
    "FileOps",
    "ReadReport",
    "SessionFilesInconsistentError",
    "SessionStore",
    "SnapshotCorruptError",
    "SnapshotFile",
    "StoreHealth",
    "is_disk_full",
    "storage_error",
]
