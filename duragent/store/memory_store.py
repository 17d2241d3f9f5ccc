"""Sessions kept in memory: the second ``SessionStorage`` backend.

For tests of the layers above (a registry without a disk) and as the proof that the session
layer depends on the protocol, not on files: it passes the same contract suite as the file
backend. Nothing survives the process. It keeps the protocol's promises where they mean
something without a disk: appends and snapshots are all or nothing, a snapshot read back is
a copy (never the object the writer still holds), a rollover loses no event, quarantine keeps
the session and its reason.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duragent.core.events import Event, now_rfc3339
from duragent.core.snapshot import SessionSnapshot
from duragent.store.attachment_blobs import MemoryAttachments
from duragent.store.chat_index import ChatKey
from duragent.store.event_log import EVENTS_FILENAME, ReadReport
from duragent.store.saved_outputs import DEFAULT_LIMITS, MemorySavedOutputs, SavedOutputLimits
from duragent.store.snapshot_file import STATE_FILENAME

__all__ = ["MemorySessionStore"]

_ROOT = Path("<memory>")
"""Where the ``path`` attributes point: descriptive only, never a real folder."""


@dataclass(slots=True)
class _Session:
    events: list[Event] | None = None  # None: no log was ever written
    archive: list[Event] = field(default_factory=list)
    snapshot: dict[str, Any] | None = None
    reason: str = ""
    created: bool = False  # listed once created, as a folder is
    outputs: dict[str, str] = field(default_factory=dict)  # saved full tool outputs
    attachments: dict[str, bytes] = field(default_factory=dict)  # sha256 → bytes

    @property
    def written(self) -> bool:
        return self.events is not None or self.snapshot is not None


class _MemoryLog:
    """``SessionLog`` over a ``_Session``."""

    def __init__(self, session: _Session, path: Path) -> None:
        self._session = session
        self.path = path / EVENTS_FILENAME
        self.appended_bytes = 0
        self.io_seconds = 0.0

    def append(self, events: Sequence[Event]) -> None:
        live = self._session.events if self._session.events is not None else []
        self._session.events = [*live, *events]  # one assignment: all or nothing
        self.appended_bytes += sum(len(e.to_json()) + 1 for e in events)

    def read(self, after_seq: int = 0) -> tuple[list[Event], ReadReport]:
        report = ReadReport()
        if self._session.events is None:
            report.missing = True
            return [], report
        events = sorted((e for e in self._session.events if e.seq > after_seq), key=_seq)
        return events, report

    def read_archive(self) -> list[Event]:
        return sorted(self._session.archive, key=_seq)

    def first_archived(self, event_type: str) -> Event | None:
        return next((e for e in self.read_archive() if e.type == event_type), None)

    def last_seq(self) -> int | None:
        return max((e.seq for e in self._session.events or []), default=0)

    def roll_over(self, up_to_seq: int, *, archive: bool) -> int:
        live = self._session.events or []
        old = [e for e in live if e.seq <= up_to_seq]
        if not old:
            return 0
        if archive:
            known = {e.seq for e in self._session.archive}
            self._session.archive = [
                *self._session.archive,
                *(e for e in old if e.seq not in known),
            ]
        self._session.events = [e for e in live if e.seq > up_to_seq]
        return len(old)

    def close(self) -> None:
        """Nothing is held open."""


class _MemorySnapshots:
    """``SessionSnapshots`` over a ``_Session`` (stored as its dict: a copy, as a file is)."""

    def __init__(self, session: _Session, path: Path) -> None:
        self._session = session
        self.path = path / STATE_FILENAME
        self.last_size = 0
        self.io_seconds = 0.0

    def write(self, snapshot: SessionSnapshot) -> None:
        data = snapshot.to_dict()
        self._session.snapshot = data
        self.last_size = len(repr(data))

    def read(self) -> SessionSnapshot | None:
        data = self._session.snapshot
        return None if data is None else SessionSnapshot.from_dict(data)

    def exists(self) -> bool:
        return self._session.snapshot is not None


class _MemoryChats:
    """``ChatMap`` as a locked dict (several actor threads write)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._map: dict[ChatKey, str] = {}

    def load(self) -> None:
        """Nothing to read: the map is the storage."""

    def get(self, key: ChatKey) -> str | None:
        with self._lock:
            return self._map.get(key)

    def items(self) -> list[tuple[ChatKey, str]]:
        with self._lock:
            return list(self._map.items())

    def set(self, key: ChatKey, session_id: str | None) -> None:
        with self._lock:
            if session_id:
                self._map[key] = session_id
            else:
                self._map.pop(key, None)

    def remove_session(self, session_id: str) -> None:
        with self._lock:
            self._map = {k: v for k, v in self._map.items() if v != session_id}

    def rebuild(self, entries: Iterable[tuple[ChatKey, str]]) -> None:
        with self._lock:
            self._map = dict(entries)

    def skipped(self) -> list[dict[str, str]]:
        """Nothing is ever read back, so nothing is set aside."""
        return []


class _MemoryHealth:
    """``WriteHealth``: memory never refuses, but a reported failure is kept until a success."""

    def __init__(self) -> None:
        self._failure: OSError | None = None

    @property
    def failure(self) -> OSError | None:
        return self._failure

    def succeeded(self) -> None:
        self._failure = None

    def failed(self, exc: OSError) -> None:
        self._failure = exc

    def check(self, *, min_interval: float = 1.0) -> OSError | None:
        return self._failure


class MemorySessionStore:
    """``SessionStorage`` in memory (see module docstring). Thread-safe like the file one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[str, _Session] = {}
        self._quarantined: dict[str, _Session] = {}
        self.chats = _MemoryChats()
        self.health = _MemoryHealth()

    def open(self) -> None:
        """Nothing to prepare."""

    def close(self) -> None:
        """Nothing to release."""

    def _validate(self, session_id: str) -> str:
        if not session_id or "/" in session_id or session_id.startswith((".", "_")):
            raise ValueError(f"invalid session id {session_id!r}")
        return session_id

    def _session(self, session_id: str) -> _Session:
        """The live session, made on first use (as a folder is by its first file)."""
        with self._lock:
            return self._live.setdefault(self._validate(session_id), _Session())

    def create(self, session_id: str) -> Path:
        """Make room for a new session (``FileExistsError`` when the id is taken)."""
        with self._lock:
            session = self._live.setdefault(self._validate(session_id), _Session())
            if session.created or session.written:
                raise FileExistsError(f"session {session_id} exists")
            session.created = True
        return _ROOT / session_id

    def discard_new(self, session_id: str) -> None:
        """Forget a session whose creation failed."""
        with self._lock:
            self._live.pop(session_id, None)

    def exists(self, session_id: str) -> bool:
        """Whether the session has events or a snapshot."""
        with self._lock:
            session = self._live.get(session_id)
        return session is not None and session.written

    def list_ids(self) -> list[str]:
        """Every live session id, sorted."""
        with self._lock:
            return sorted(k for k, v in self._live.items() if v.created or v.written)

    def event_log(self, session_id: str) -> _MemoryLog:
        """The event log of ``session_id``."""
        return _MemoryLog(self._session(session_id), _ROOT / session_id)

    def snapshot(self, session_id: str) -> _MemorySnapshots:
        """The snapshot of ``session_id``."""
        return _MemorySnapshots(self._session(session_id), _ROOT / session_id)

    def header(self, session_id: str, *, quarantined: bool = False) -> dict[str, Any] | None:
        """The snapshot without its conversation, or None."""
        with self._lock:
            session = (self._quarantined if quarantined else self._live).get(session_id)
        if session is None or session.snapshot is None:
            return None
        return {k: v for k, v in session.snapshot.items() if k != "conversation"}

    def saved_outputs(
        self, session_id: str, limits: SavedOutputLimits = DEFAULT_LIMITS
    ) -> MemorySavedOutputs:
        """The saved full tool outputs of ``session_id``."""
        return MemorySavedOutputs(self._session(session_id).outputs, limits)

    def attachments(self, session_id: str) -> MemoryAttachments:
        """The attachments of ``session_id`` (gone with it; moved by quarantine)."""
        self._validate(session_id)

        def live() -> dict[str, bytes] | None:
            with self._lock:
                session = self._live.get(session_id)
            return None if session is None else session.attachments

        return MemoryAttachments(live, session_id)

    def remove_stale_temp_files(self, session_id: str) -> None:
        """No write leaves anything behind."""

    def delete(self, session_id: str) -> None:
        """Forget the session and its chats."""
        self.chats.remove_session(session_id)
        with self._lock:
            self._live.pop(session_id, None)

    def quarantine(self, session_id: str, reason: str) -> Path:
        """Set the session aside with ``reason`` (timestamped, as ``REASON.txt`` is)."""
        with self._lock:
            session = self._live.pop(self._validate(session_id), None)
            if session is None:
                raise FileNotFoundError(f"session {session_id} does not exist")
            session.reason = f"{now_rfc3339()} {reason}"
            self._quarantined[session_id] = session
        self.chats.remove_session(session_id)
        return _ROOT / "_quarantine" / session_id

    def quarantined(self) -> list[str]:
        """Ids of quarantined sessions."""
        with self._lock:
            return sorted(self._quarantined)

    def quarantine_reason(self, session_id: str) -> str | None:
        """Why ``session_id`` is quarantined, or None."""
        with self._lock:
            session = self._quarantined.get(session_id)
        return None if session is None else session.reason or "(no reason recorded)"

    def restore(self, session_id: str) -> Path:
        """Bring a quarantined session back."""
        with self._lock:
            if session_id not in self._quarantined:
                raise FileNotFoundError(f"session {session_id} is not quarantined")
            if session_id in self._live:
                raise FileExistsError(f"a live session already has the id {session_id}")
            self._live[session_id] = self._quarantined.pop(session_id)
        return _ROOT / session_id


def _seq(event: Event) -> int:
    return event.seq
