"""What the layers above ask of storage, as ``Protocol``s; the backends are interchangeable.

Sessions, the actor and the registry type against ``SessionStorage`` and its parts, never a
concrete class or a file name, so another backend (the in-memory ``MemorySessionStore``,
``postgres.PostgresSessionStore``) is a new class, not a change to the session layer. All
backends pass one contract suite (``tests/store/test_session_storage_contract.py``).

Schedules and run logs have a file and a PostgreSQL backend (one contract suite,
``tests/store/test_schedule_storage_contract.py``); summaries have none yet: their protocol
is here, small, so LLM summarisation starts from a shape instead of a new concrete store.

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
from typing import Any, Literal, Protocol, runtime_checkable

from duragent.core.events import Event
from duragent.core.snapshot import SessionSnapshot
from duragent.store.chat_index import ChatKey
from duragent.store.event_log import ReadReport
from duragent.store.ownership import NodeDirectory
from duragent.store.saved_outputs import SavedOutputLimits

__all__ = [
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


ClaimOutcome = Literal["first", "duplicate", "busy"]
"""``first``: handle it; ``duplicate``: handled already; ``busy``: another node handles it now."""


class InboundLedger(Protocol):
    """Which platform messages were taken in, shared by every node serving the workspace.

    The same Telegram update, Discord message or external-gateway message delivered to two
    nodes (a webhook retried through a load balancer) is handled by the first claim only.
    A claim lasts a hold (a few lease periods); one whose node died before ``settle`` is taken
    over after it, so a redelivered message is never lost (the session's own platform-id
    de-duplication then recognises one that was recorded after all). Files: one node, so the
    ledger is this process's memory and the session's de-duplication is the durable one.
    """

    def claim(self, gateway: str, chat_id: str, message_id: str) -> ClaimOutcome:
        """Claim the message for this node (see ``ClaimOutcome``)."""
        ...

    def settle(self, gateway: str, chat_id: str, message_id: str) -> None:
        """The claimed message is recorded (or deliberately dropped): a duplicate from now on."""
        ...

    def release(self, gateway: str, chat_id: str, message_id: str) -> None:
        """The claimed message could not be recorded: a redelivery may claim it at once."""
        ...


class LeaderLeases(Protocol):
    """Leases for loops that must run on one node only (long polling, the scheduler's loop)."""

    node_id: str
    seconds: float
    """How long a lease lasts unless renewed: another node takes over after it."""

    def acquire(self, name: str) -> bool:
        """Take or renew the lease ``name`` for this node; whether this node holds it now."""
        ...

    def release(self, name: str) -> None:
        """Give the lease up (this node stops the loop), so another takes over at once."""
        ...


class RunClaims(Protocol):
    """Schedule due times started, one claim per (schedule id, due time) cluster-wide."""

    def claim(self, schedule_id: str, due_ms: int) -> bool:
        """Whether this node may start that due time (False: claimed before, by any node)."""
        ...


class OrphanedChats(Protocol):
    """Chats whose session no live node serves: what another node must finish for them.

    A node that died left its sessions' leases to expire; an undelivered reply, an approval
    never shown or a message never answered in them is then finished elsewhere (the
    gateway's recovery, run by the holder of a leader lease). One node (files) has none.
    """

    def chats(self, gateway: str, *, owned_by: str | None = None) -> list[tuple[str, str]]:
        """``(chat_id, session_id)`` of ``gateway``'s chats whose session's lease expired.

        With ``owned_by`` (a node starting): those whose lease is free or is that node's too.
        """
        ...

    def adopt(self, session_ids: list[str]) -> None:
        """Mark the expired leases of ``session_ids`` free: they were examined and finished."""

    def serving_node(self, gateway: str, chat_id: str) -> str | None:
        """The node holding a live lease on a session of the chat (None: no node serves it)."""
        ...


@runtime_checkable
class SharedStorage(Protocol):
    """A ``SessionStorage`` several nodes share (PostgreSQL): session leases and fresh reads.

    The file and memory backends are not shared (one process owns a workspace: the serve
    lock), so they do not implement this; the session layer checks ``isinstance``. See
    ``store.ownership`` for the errors and ``store/postgres/leases.py`` for the fence.
    """

    @property
    def node_id(self) -> str:
        """This node's name in leases."""
        ...

    @property
    def nodes(self) -> NodeDirectory:
        """The deployment's nodes: where each answers, whether it is alive."""
        ...

    @property
    def lease_seconds(self) -> float:
        """How long a lease lasts without renewal."""
        ...

    @property
    def fenced_writes(self) -> int:
        """Writes of this node the epoch fence refused since start."""
        ...

    def own(self, session_id: str) -> None:
        """Claim the session for this node before loading it (a new epoch fences the old one).

        ``LeaseHeldError`` when another node's lease is live.
        """
        ...

    def renew_leases(self) -> list[str]:
        """Renew every lease this node holds, in one round trip; the sessions it lost."""
        ...

    def fetch_chat(self, key: ChatKey) -> str | None:
        """The chat's session as stored now (another node may have mapped it); may block."""
        ...

    def map_chat(self, key: ChatKey, session_id: str, replacing: str | None) -> str:
        """Map the chat to ``session_id`` if it still maps to ``replacing``; the session it maps.

        One insert wins when two nodes make a chat's first session at once (the loser is told
        the winner's session); may block.
        """
        ...
