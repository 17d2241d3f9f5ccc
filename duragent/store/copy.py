"""Copy every session of one ``SessionStorage`` into another, then prove nothing was lost.

``duragent store copy --from file --to postgres`` uses it to move a workspace. For each live
session: its archived and live events (archived ones archived again in the target), its
snapshot, its saved tool outputs (kept as they are: no retention or cap applied), its
attachments and the chats it serves. Afterwards every session's whole history (archive +
live events, as their JSON lines, the snapshot, the outputs and the attachments' hashes:
the target computes each one from the bytes it stored) is read back from both sides and
compared; a difference is reported by session and never hidden. A session the target already
holds with the same history is skipped (the copy can be run again after an interruption);
one it holds with a *different* history is left alone and reported as a conflict, except the
one unfinished copy an interrupted run leaves: the snapshot is each session's last write, so
a target session without one, whose events are the start of the source's, is removed and
copied again (``redone``). Quarantined sessions are not copied (their files cannot be
trusted): they are listed so a person can restore them first.

Schedules and their run logs are copied too (``copy_schedules``): the scheduler reads them
from the store the workspace uses, so a workspace moving to PostgreSQL keeps its schedules.

The source is only read. Run it while no server writes to either store.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from duragent.core.events import Event
from duragent.store.event_log import ReadReport
from duragent.store.protocols import RunLogStorage, ScheduleStorage, SessionStorage
from duragent.store.saved_outputs import SavedOutputLimits
from duragent.store.schedule_files import PRUNE_KEEP

_KEEP_ALL = SavedOutputLimits(max_output_bytes=1 << 62, max_session_bytes=1 << 62, retention_days=0)
"""Copying keeps every saved output as it is: retention and caps apply at the next real save."""

__all__ = [
    "CopyReport",
    "ScheduleCopyReport",
    "copy_schedules",
    "copy_sessions",
    "history_differences",
]


@dataclass(slots=True)
class CopyReport:
    """What ``copy_sessions`` did, session by session."""

    copied: list[str] = field(default_factory=list)
    already_there: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    """Sessions the target holds with another history (left as they were)."""
    differences: dict[str, list[str]] = field(default_factory=dict)
    """Sessions whose history read back differently after the copy: never expected."""
    unclean_source: dict[str, str] = field(default_factory=dict)
    """Sessions whose source log had skipped lines (copied as read; the reason)."""
    quarantined: list[str] = field(default_factory=list)
    redone: list[str] = field(default_factory=list)
    """Sessions an interrupted run had left half copied: removed and copied again."""
    chats: int = 0

    @property
    def ok(self) -> bool:
        """Every live session is in the target with the same history."""
        return not (self.conflicts or self.differences)


def _history(store: SessionStorage, session_id: str) -> tuple[list[Event], str]:
    """Archive + live events, one per seq (the live copy wins), and what the read skipped.

    The live log alone starts where its last roll-over left it, so its own read reports
    the archived seqs as missing: a gap counts only when neither holds the seq. Seqs before
    the first one kept are no gap either: a roll-over without an archive discarded them.
    """
    log = store.event_log(session_id)
    live, report = log.read()
    by_seq = {e.seq: e for e in log.read_archive()}
    by_seq.update((e.seq, e) for e in live)
    log.close()
    seqs = sorted(by_seq)
    report.gaps = [(a + 1, b - 1) for a, b in itertools.pairwise(seqs) if b != a + 1]
    return [by_seq[s] for s in seqs], "" if report.clean else describe_read(report)


def describe_read(report: ReadReport) -> str:
    """What a read of an event log skipped, for the operator (``1 malformed line``, ...)."""
    parts = []
    if report.skipped_malformed:
        parts.append(_count(report.skipped_malformed, "malformed line"))
    if report.skipped_duplicates:
        parts.append(_count(report.skipped_duplicates, "duplicate seq"))
    if report.torn_tail:
        parts.append("a torn last line")
    if report.gaps:
        parts.append("missing seqs " + ", ".join(f"{a}–{b}" for a, b in report.gaps))
    if report.out_of_order:
        parts.append(_count(report.out_of_order, "event out of order", "events out of order"))
    return "; ".join(parts)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def history_differences(source: SessionStorage, target: SessionStorage, sid: str) -> list[str]:
    """How ``sid``'s history differs between the two stores ([] when identical)."""
    found: list[str] = []
    src_events, _ = _history(source, sid)
    dst_events, _ = _history(target, sid)
    src_lines = [e.to_json() for e in src_events]
    dst_lines = [e.to_json() for e in dst_events]
    if src_lines != dst_lines:
        missing = sorted({e.seq for e in src_events} - {e.seq for e in dst_events})
        found.append(
            f"events differ ({len(src_lines)} in the source, {len(dst_lines)} in the target"
            + (f"; missing seqs {missing[:10]}" if missing else "")
            + ")"
        )
    src_archive = [e.seq for e in source.event_log(sid).read_archive()]
    dst_archive = [e.seq for e in target.event_log(sid).read_archive()]
    if sorted(set(src_archive)) != dst_archive:
        found.append("the archived seqs differ")
    src_snap, dst_snap = source.snapshot(sid).read(), target.snapshot(sid).read()
    if (src_snap and src_snap.to_dict()) != (dst_snap and dst_snap.to_dict()):
        found.append("the snapshots differ")
    src_out, dst_out = source.saved_outputs(sid, _KEEP_ALL), target.saved_outputs(sid, _KEEP_ALL)
    if src_out.ids() != dst_out.ids() or any(
        src_out.read(i) != dst_out.read(i) for i in src_out.ids()
    ):
        found.append("the saved tool outputs differ")
    if source.attachments(sid).hashes() != target.attachments(sid).hashes():
        found.append("the attachments differ")
    return found


def _unfinished_copy(source: SessionStorage, target: SessionStorage, sid: str) -> bool:
    """Whether the target's ``sid`` is what an interrupted copy leaves, and nothing else.

    A copy writes a session's snapshot last, and every session duragent creates has one; so
    a target session with no snapshot whose events are the first events of the source's
    (maybe none) was being copied when the run stopped. A session written by a server
    (a snapshot) or with events of its own is someone's data: a conflict, never removed.
    """
    if source.snapshot(sid).read() is None or target.snapshot(sid).read() is not None:
        return False
    src_events, _ = _history(source, sid)
    dst_events, _ = _history(target, sid)
    head = src_events[: len(dst_events)]
    return [e.to_json() for e in dst_events] == [e.to_json() for e in head]


def copy_sessions(source: SessionStorage, target: SessionStorage) -> CopyReport:
    """Copy every live session and chat of ``source`` into ``target`` (both open)."""
    report = CopyReport(quarantined=source.quarantined())
    for sid in source.list_ids():
        if target.exists(sid) or sid in target.list_ids():
            if not history_differences(source, target, sid):
                report.already_there.append(sid)
                continue
            if not _unfinished_copy(source, target, sid):
                report.conflicts.append(sid)
                continue
            target.discard_new(sid)
            report.redone.append(sid)
        events, note = _history(source, sid)
        if note:
            report.unclean_source[sid] = note
        archived = {e.seq for e in source.event_log(sid).read_archive()}
        target.create(sid)
        log = target.event_log(sid)
        try:
            if events:
                log.append(events)
            # Events archived in the source are archived in the target: the prefix up to the
            # first live one (rollover only ever archives a prefix).
            live_seqs = {e.seq for e in source.event_log(sid).read()[0]}
            prefix = max((s for s in archived if s not in live_seqs), default=0)
            if prefix:
                log.roll_over(prefix, archive=True)
            outputs = source.saved_outputs(sid, _KEEP_ALL)
            copies = target.saved_outputs(sid, _KEEP_ALL)
            for output_id in outputs.ids():
                copies.save(output_id, outputs.read(output_id))
            blobs, blob_copies = source.attachments(sid), target.attachments(sid)
            for sha in blobs.hashes():  # before the snapshot, as everything else
                blob_copies.put(blobs.read(sha))
            snapshot = source.snapshot(sid).read()
            if snapshot is not None:  # last: a target session without one is unfinished
                target.snapshot(sid).write(snapshot)
        finally:
            log.close()
        report.copied.append(sid)
    for key, sid in source.chats.items():
        if target.chats.get(key) != sid:
            target.chats.set(key, sid)
        report.chats += 1
    for sid in report.copied:
        diff = history_differences(source, target, sid)
        if diff:
            report.differences[sid] = diff
    return report


@dataclass(slots=True)
class ScheduleCopyReport:
    """What ``copy_schedules`` did."""

    copied: list[str] = field(default_factory=list)
    already_there: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    """Schedules the target holds with another document (left as they were)."""
    runs_only: list[str] = field(default_factory=list)
    """Run logs copied of schedules with no stored document: those declared in
    ``agent.yaml`` (``decl_<agent>_<name>``), whose runs are their only record."""


def copy_schedules(
    source: tuple[ScheduleStorage, RunLogStorage], target: tuple[ScheduleStorage, RunLogStorage]
) -> ScheduleCopyReport:
    """Copy every schedule and its run log (the newest ``PRUNE_KEEP`` runs) into ``target``.

    The run log is what keeps a due time from running again (its cursor), so it moves with
    the schedule, runs first: a schedule is never in the target without its history. A
    schedule declared in ``agent.yaml`` has no stored document, only runs: they move too, or
    the target's scheduler would start it afresh and skip the due times missed meanwhile.
    """
    report = ScheduleCopyReport()
    (src, src_runs), (dst, dst_runs) = source, target
    documented = src.ids()
    for schedule_id in documented:
        document = src.get(schedule_id)
        if document is None:
            continue
        there = dst.get(schedule_id)
        if there is not None:
            (report.already_there if there == document else report.conflicts).append(schedule_id)
            continue
        _copy_runs(schedule_id, src_runs, dst_runs)
        dst.put(schedule_id, document)
        report.copied.append(schedule_id)
    for schedule_id in sorted(set(src_runs.logged()) - set(documented)):
        if _copy_runs(schedule_id, src_runs, dst_runs):
            report.runs_only.append(schedule_id)
    return report


def _copy_runs(schedule_id: str, source: RunLogStorage, target: RunLogStorage) -> int:
    """Append the source's runs the target lacks (an interrupted copy left some: not twice)."""
    there = target.recent(schedule_id, PRUNE_KEEP)
    added = 0
    for run in source.recent(schedule_id, PRUNE_KEEP):
        if run in there:
            there.remove(run)
        else:
            target.append(schedule_id, run)
            added += 1
    return added
