"""What the layers above ask of storage, as ``Protocol``s; the backends are interchangeable.

Sessions, the actor and the registry type against ``SessionStorage`` and its parts, never a
concrete class or a file name: another backend (``MemorySessionStore``,
``postgres.PostgresSessionStore``) is a new class passing one contract suite
(``tests/store/test_session_storage_contract.py``), not a change to the session layer.

Schedules and run logs have a file and a PostgreSQL backend (one contract suite,
``tests/store/test_schedule_storage_contract.py``); summaries have none yet, their protocol
small here. What several nodes sharing a workspace ask of it is in ``cluster_protocols``.

Shared rules for every protocol:

- A write returns only once it is durable (for the file backend: fsync'd); if it fails,
  nothing it was given is half-applied and the error is raised: an ``OSError``, a
  ``StorageError`` (``errors``) when the machine refused (disk full, permission, I/O).
- Reads never invent data: what cannot be read is reported (``ReadReport``,
  ``SnapshotCorruptError``), never returned as empty.
- ``path`` attributes name where the data lives, for messages and errors only; a backend
  without files gives a descriptive path that does not exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from duragent.core.events import Event
from duragent.core.snapshot import SessionSnapshot
from duragent.store.chat_index import ChatKey
from duragent.store.cluster_protocols import (
    ClaimOutcome,
    InboundLedger,
    LeaderLeases,
    OrphanedChats,
    RunClaims,
    SharedStorage,
)
from duragent.store.event_log import ReadReport
from duragent.store.saved_outputs import SavedOutputLimits

__all__ = [
    "AttachmentStorage",
    "ChatMap",
    "ClaimOutcome",
    "InboundLedger",
    "LeaderLeases",
    "OrphanedChats",
    "RunClaims",
    "RunLogStorage",
    "SavedOutputStorage",
    "ScheduleStorage",
    "SessionLog",
    "SessionSnapshots",
    "SessionStorage",
    "SharedStorage",
    "SummaryStorage",
    "WriteHealth",
]


class SessionLog(Protocol):
    """One session's events: the live log and the archive rollovers move old events to."""

    path: Path
    appended_bytes: int
    """Bytes appended through this object (the owner spaces snapshots by it)."""
    io_seconds: float
    """Seconds spent in durable appends (admission adapts to it)."""

    def append(self, events: Sequence[Event]) -> None:
        """Make ``events`` durable, all or nothing: a failed append leaves no trace."""
        ...

    def read(self, after_seq: int = 0) -> tuple[list[Event], ReadReport]:
        """Live events with ``seq > after_seq`` in order, de-duplicated, and what was skipped."""
        ...

    def read_archive(self) -> list[Event]:
        """Every archived event, in order, de-duplicated."""
        ...

    def first_archived(self, event_type: str) -> Event | None:
        """The oldest archived event of ``event_type`` (None: none), read without the rest."""
        ...

    def last_seq(self) -> int | None:
        """The newest event's seq, read cheaply by a non-owner (0: none; None: cannot tell)."""
        ...

    def roll_over(self, up_to_seq: int, *, archive: bool) -> int:
        """Move events ``<= up_to_seq`` out of the live log (into the archive when ``archive``).

        The config calls this ``compaction``; a failure at any step loses no event.
        Returns how many left the live log.
        """
        ...

    def close(self) -> None:
        """Release what the log holds open (the owner stops)."""
        ...


class SessionSnapshots(Protocol):
    """One session's latest snapshot, replaced atomically."""

    path: Path
    last_size: int
    """Bytes of the last snapshot written (the owner spaces snapshots by it)."""
    io_seconds: float
    """Seconds spent writing snapshots."""

    def write(self, snapshot: SessionSnapshot) -> None:
        """Replace the snapshot: a reader sees the old one or the new one, never a mix."""
        ...

    def read(self) -> SessionSnapshot | None:
        """The snapshot; None when there is none; ``SnapshotCorruptError`` when unreadable."""
        ...

    def exists(self) -> bool:
        """Whether a snapshot is stored."""
        ...


class ChatMap(Protocol):
    """Chat key → the session serving it, readable without opening any session."""

    def load(self) -> None:
        """Read the persisted mapping (start-up)."""
        ...

    def get(self, key: ChatKey) -> str | None:
        """The session serving ``key``, if any."""
        ...

    def items(self) -> list[tuple[ChatKey, str]]:
        """A copy of every mapping."""
        ...

    def set(self, key: ChatKey, session_id: str | None) -> None:
        """Durably map ``key`` to ``session_id`` (None removes it); memory never runs ahead."""
        ...

    def remove_session(self, session_id: str) -> None:
        """Unmap every chat served by ``session_id``."""
        ...

    def rebuild(self, entries: Iterable[tuple[ChatKey, str]]) -> None:
        """Replace the whole mapping."""
        ...

    def skipped(self) -> list[dict[str, str]]:
        """Entries set aside rather than loaded, or naming a session gone (``/readyz``).

        Each: ``record``, ``reason``, and ``moved_to`` when it was moved.
        """
        ...


class WriteHealth(Protocol):
    """Whether the most recent write succeeded (``/readyz``); see ``store.health``."""

    @property
    def failure(self) -> OSError | None:
        """The error of the last write, when it failed."""
        ...

    def succeeded(self) -> None:
        """A write went through."""
        ...

    def failed(self, exc: OSError) -> None:
        """A write failed with ``exc``."""
        ...

    def check(self, *, min_interval: float = 1.0) -> OSError | None:
        """The current failure, after probing again if one is recorded (may block)."""
        ...


class SavedOutputStorage(Protocol):
    """One session's saved full tool outputs (``saved_outputs``), bound to that session."""

    def new_id(self) -> str:
        """An id for an output about to be saved."""
        ...

    def save(self, output_id: str, text: str) -> None:
        """Keep ``text`` durably under ``output_id``, then apply retention and the size cap."""
        ...

    def read(self, output_id: str) -> str:
        """The saved text; ``SavedOutputNotFoundError`` (a ``LookupError``) when there is none."""
        ...

    def ids(self) -> list[str]:
        """Every saved id, oldest first."""
        ...


class AttachmentStorage(Protocol):
    """One session's attachments: their bytes, addressed by SHA-256 (``attachment_blobs``).

    Content-addressed, so storing is idempotent (a redelivered photo is one blob, and a put
    repeated after a crash writes nothing new) and a hash in an event names exactly one
    content. Every method refuses a ``sha256`` that is not a content hash
    (``core.attachments.is_content_hash``) with ``ValueError`` before using it, so no name
    reaches outside the session's blobs; an unknown hash is ``AttachmentNotFoundError``.
    Deleting the session deletes its blobs; quarantine and restore take them along.
    """

    def put(self, data: bytes) -> str:
        """Keep ``data`` durably, all or nothing; returns its hash (``content_hash``).

        The same bytes again write nothing. ``FileNotFoundError`` when the session is not
        live (never created, deleted or quarantined): blobs never outlive their session.
        """
        ...

    def has(self, sha256: str) -> bool:
        """Whether the blob is stored."""
        ...

    def read(self, sha256: str) -> bytes:
        """The blob's bytes."""
        ...

    def size(self, sha256: str) -> int:
        """The blob's length in bytes, without reading it."""
        ...

    def hashes(self) -> list[str]:
        """Every stored blob's hash, sorted."""
        ...

    def export(self, sha256: str, dest: Path) -> None:
        """Write a copy of the blob to ``dest`` (replaced atomically), for code that reads files.

        A copy, never the stored blob itself: a tool may change the file it is given.
        """
        ...


class SessionStorage(Protocol):
    """Every session, live or quarantined: what the session layer needs of storage.

    Backends: ``SessionStore`` (files, see ``session_store``) and ``MemorySessionStore``.
    A session id is validated by the backend (``ValueError`` for ``/``, a leading ``.`` or
    ``_``) so no backend can be tricked out of its space.
    """

    @property
    def chats(self) -> ChatMap:
        """Chat key → session."""
        ...

    @property
    def health(self) -> WriteHealth:
        """The outcome of the last write (``/readyz``)."""
        ...

    def open(self) -> None:
        """Prepare the storage and load the chat map."""
        ...

    def close(self) -> None:
        """Release what the storage holds (connections, leases); the registry closes it last."""
        ...

    def create(self, session_id: str) -> Path:
        """Durably make room for a new session (``FileExistsError`` when the id is taken).

        Returns where it lives (for messages), as the ``path`` attributes do.
        """
        ...

    def discard_new(self, session_id: str) -> None:
        """Forget a session whose creation failed (its id was never given out)."""
        ...

    def exists(self, session_id: str) -> bool:
        """Whether the session has a snapshot or events (quarantined ones do not exist)."""
        ...

    def list_ids(self) -> list[str]:
        """Every live (not quarantined) session id, sorted; cheap: reads no session."""
        ...

    def event_log(self, session_id: str) -> SessionLog:
        """The event log of ``session_id`` (one owner: the session's actor)."""
        ...

    def snapshot(self, session_id: str) -> SessionSnapshots:
        """The snapshot of ``session_id`` (one owner: the session's actor)."""
        ...

    def header(self, session_id: str, *, quarantined: bool = False) -> dict[str, Any] | None:
        """The snapshot's metadata without its conversation (listings), or None without one.

        ``StorageError`` when the machine refuses the read, ``SnapshotCorruptError`` when it is
        not a snapshot: a listing shows such a session rather than drop it.
        """
        ...

    def remove_stale_temp_files(self, session_id: str) -> None:
        """Remove what writes a crash interrupted left behind (before loading the session)."""
        ...

    def saved_outputs(self, session_id: str, limits: SavedOutputLimits) -> SavedOutputStorage:
        """The saved full tool outputs of ``session_id`` (readable only through this object)."""
        ...

    def attachments(self, session_id: str) -> AttachmentStorage:
        """The attachments of ``session_id``: photos, voice notes and files its messages carried."""
        ...

    def delete(self, session_id: str) -> None:
        """Remove the session and its chat mappings (missing is fine)."""
        ...

    def quarantine(self, session_id: str, reason: str) -> Path:
        """Set an untrustworthy session aside with ``reason``: kept, listed, not resumed.

        Returns where it was set aside.
        """
        ...

    def quarantined(self) -> list[str]:
        """Ids of quarantined sessions."""
        ...

    def quarantine_reason(self, session_id: str) -> str | None:
        """Why ``session_id`` is quarantined, or None when it is not."""
        ...

    def restore(self, session_id: str) -> Path:
        """Bring a quarantined session back; returns where it lives again.

        ``FileNotFoundError`` when it is not quarantined, ``FileExistsError`` when a live
        session has the same id.
        """
        ...


class ScheduleStorage(Protocol):
    """Schedules (``.duragent/schedules/<id>.yaml``), a file a person also edits.

    A schedule is a mapping as written in its file; the scheduler validates it. ``put`` is an
    atomic replacement (``atomic.atomic_write``), round-trip so comments survive.
    """

    def ids(self) -> list[str]:
        """Every schedule id, sorted."""
        ...

    def get(self, schedule_id: str) -> dict[str, Any] | None:
        """The schedule, or None when there is none."""
        ...

    def put(self, schedule_id: str, schedule: dict[str, Any]) -> None:
        """Create or replace the schedule durably."""
        ...

    def remove(self, schedule_id: str) -> None:
        """Delete the schedule (missing is fine); its run log is kept."""
        ...


class RunLogStorage(Protocol):
    """Each schedule's runs (``schedules/runs/<id>.jsonl``): append-only, newest last."""

    def append(self, schedule_id: str, run: dict[str, Any]) -> None:
        """Durably record one run (start, outcome, session it ran in)."""
        ...

    def recent(self, schedule_id: str, limit: int) -> list[dict[str, Any]]:
        """The last ``limit`` runs, oldest first (torn or malformed lines skipped)."""
        ...

    def logged(self) -> list[str]:
        """Every schedule id with runs, sorted (also those with no document: declared ones)."""
        ...


class SummaryStorage(Protocol):
    """LLM summaries of a session's older history ("compaction" in the LLM sense).

    A summary covers events ``first_seq``…``last_seq`` and chains to the one before it; the
    events themselves stay in the log or its archive, so a summary never replaces history.
    """

    def latest(self, session_id: str) -> dict[str, Any] | None:
        """The newest summary of the session, or None."""
        ...

    def add(self, session_id: str, summary: dict[str, Any]) -> None:
        """Durably store a new summary (it must start after the latest one ends)."""
        ...
