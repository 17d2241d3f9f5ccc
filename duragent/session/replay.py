"""What a loading session replays: the events after its snapshot, or its whole log without one.

``Journal.load`` builds the state from the snapshot plus these events, through the same
``SessionState.apply`` as the live path. The reading rules are here, apart from the journal's
writing ones: every event the snapshot says was written must be found (the live log first,
then the archive, ``store.integrity``), or the session is refused
(``SessionFilesInconsistentError``: quarantine), never resumed without them; with no snapshot
the whole log (archive first) must start at the session's first event, and a snapshot lost
with more than that event logged is reported. Reads only: nothing here writes or moves a file.
"""

from __future__ import annotations

import logging

from duragent.core.events import Event, EventType, now_rfc3339
from duragent.core.payloads import SessionStartData
from duragent.core.snapshot import SessionSnapshot
from duragent.store import (
    ReadReport,
    SessionFilesInconsistentError,
    SessionLog,
    SessionSnapshots,
    SnapshotCorruptError,
)
from duragent.store.integrity import merge_events, missing_events

__all__ = ["events_after", "rebuild_without_snapshot"]

log = logging.getLogger(__name__)


def events_after(
    session_id: str, events_log: SessionLog, snapshots: SessionSnapshots, snapshot: SessionSnapshot
) -> list[Event]:
    """The events to replay on ``snapshot``; every one it says was written, or raise."""
    start = snapshot.replay_from_seq
    events, report = events_log.read(start)
    _report(session_id, events_log, snapshots, report)
    problem = missing_events(events, start, snapshot.last_event_seq)
    if problem is None:
        return events
    log.error("session %s: %s; looking in the archive", session_id, problem)
    merged = merge_events(events, (e for e in events_log.read_archive() if e.seq > start))
    if missing_events(merged, start, snapshot.last_event_seq) is not None:
        raise SessionFilesInconsistentError(events_log.path, problem)
    log.error("session %s: the missing events were recovered from the archive", session_id)
    return merged


def rebuild_without_snapshot(
    session_id: str, events_log: SessionLog, snapshots: SessionSnapshots
) -> tuple[SessionSnapshot, list[Event]]:
    """No state.yaml: rebuild from the whole log (archive first) if it is complete.

    Normal right after a crash during creation (the first event is written before the
    first snapshot); anything longer means the snapshot was lost, which is logged.
    """
    events, report = events_log.read(0)
    _report(session_id, events_log, snapshots, report)
    if not events or events[0].seq != 1:  # rolled over: the start is in the archive
        events = merge_events(events_log.read_archive(), events)
    first = events[0] if events else None
    if first is None or first.type != EventType.SESSION_START or first.seq != 1:
        raise SnapshotCorruptError(snapshots.path, "no snapshot and no log start")
    problem = missing_events(events, 0, 0)
    if problem is not None:
        raise SessionFilesInconsistentError(events_log.path, f"no snapshot, and {problem}")
    if len(events) > 1:
        log.error(
            "session %s: %s is missing; rebuilt from %d logged events",
            session_id,
            snapshots.path,
            len(events),
        )
    now = first.timestamp or now_rfc3339()
    snapshot = SessionSnapshot(
        session_id=session_id,
        agent=SessionStartData.of(first.data).agent,
        created_at=now,
        updated_at=now,
    )
    return snapshot, events


def _report(
    session_id: str, events_log: SessionLog, snapshots: SessionSnapshots, report: ReadReport
) -> None:
    """Log what reading the live log skipped or found missing."""
    if report.missing and snapshots.exists():
        log.error("session %s: %s is missing", session_id, events_log.path)
    if not report.clean:
        log.warning(
            "session %s log: %d malformed, %d duplicate, %d out of order, torn tail %s, gaps %s",
            session_id,
            report.skipped_malformed,
            report.skipped_duplicates,
            report.out_of_order,
            report.torn_tail,
            report.gaps,
        )
