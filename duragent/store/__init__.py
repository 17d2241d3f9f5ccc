"""Durable files: session event logs and snapshots, the chat index, quarantine.

- ``protocols``: what the layers above use (``SessionStorage`` and its parts; the shapes of
  schedule, run-log and summary storage to come). The session layer types against these.
- ``session_store``: the sessions directory as a whole (the file backend);
  ``memory_store``: the in-memory backend; ``postgres``: PostgreSQL (its own package, imported
  only when selected). All pass one contract suite. ``backends`` picks the one
  ``duragent.yaml`` selects (``store.backend``); ``copy`` moves sessions between them.
- ``event_log``: ``events.jsonl`` append-with-fsync, torn-tail safe, de-duplicating reads,
  rollover (config: ``compaction``) to ``events.archive.jsonl``.
- ``snapshot_file``: atomic ``state.yaml`` (reads the reference's ``state.json`` too);
  ``reference_migration``: the reference's sessions converted at first start;
  ``original_task``: a session's first user message, archive included.
- ``saved_outputs``: full copies of tool outputs Layer 3a cut (``outputs/`` per session).
- ``attachment_blobs``: the bytes of the photos, voice notes and files messages carry,
  content-addressed (``attachments/`` per session).
- ``chat_index``: chat key → session id without opening every session.
- ``atomic``: the one atomic replacement (temp file, fsync, rename, fsync of the folder).
- ``fileops``: the OS calls, replaceable to inject disk failures in tests.
- ``health``: OS refusals as ``StorageError`` (never corruption) and whether writes work now.

Imports only ``core``, ``config`` (the ``store:`` section) and ``errors``.
"""

from __future__ import annotations

from duragent.store.attachment_blobs import AttachmentNotFoundError
from duragent.store.chat_index import ChatIndex, ChatKey
from duragent.store.event_log import EventLog, ReadReport
from duragent.store.fileops import OS_FILE_OPS, FileOps
from duragent.store.health import (
    StoreHealth,
    is_database_unreachable,
    is_disk_full,
    storage_error,
)
from duragent.store.memory_store import MemorySessionStore
from duragent.store.ownership import FencedWriteError, LeaseHeldError, NodeDirectory, NodeRecord
from duragent.store.protocols import (
    AttachmentStorage,
    ChatMap,
    RunLogStorage,
    SavedOutputStorage,
    ScheduleStorage,
    SessionLog,
    SessionSnapshots,
    SessionStorage,
    SharedStorage,
    SummaryStorage,
    WriteHealth,
)
from duragent.store.saved_outputs import (
    SavedOutputLimits,
    SavedOutputNotFoundError,
    is_output_id,
)
from duragent.store.session_store import SessionStore
from duragent.store.snapshot_file import (
    STATE_FILENAME,
    SessionFilesInconsistentError,
    SnapshotCorruptError,
    SnapshotFile,
)

__all__ = [
    "OS_FILE_OPS",
    "STATE_FILENAME",
    "AttachmentNotFoundError",
    "AttachmentStorage",
    "ChatIndex",
    "ChatKey",
    "ChatMap",
    "EventLog",
    "FencedWriteError",
    "FileOps",
    "LeaseHeldError",
    "MemorySessionStore",
    "NodeDirectory",
    "NodeRecord",
    "ReadReport",
    "RunLogStorage",
    "SavedOutputLimits",
    "SavedOutputNotFoundError",
    "SavedOutputStorage",
    "ScheduleStorage",
    "SessionFilesInconsistentError",
    "SessionLog",
    "SessionSnapshots",
    "SessionStorage",
    "SessionStore",
    "SharedStorage",
    "SnapshotCorruptError",
    "SnapshotFile",
    "StoreHealth",
    "SummaryStorage",
    "WriteHealth",
    "is_database_unreachable",
    "is_disk_full",
    "is_output_id",
    "storage_error",
]
