"""``events.jsonl``: the append-only log of one session.

Promises:
- ``append`` returns only after the lines are written and fsync'd. If anything fails, the
  file is cut back to its size before the call (so a retry neither duplicates nor leaves a
  half line) and the error is raised; the caller keeps the events and retries.
- A torn last line (a crash mid-write) is never glued to the next record: before appending to
  a file whose last byte is not a newline, a newline is written first.
- ``read`` skips blank, torn and malformed lines, keeps the first copy of a duplicated
  ``seq``, and reports what it skipped, so recovery is exact and visible.
- ``roll_over`` ("rollover": the config calls it ``compaction``, a word kept free for LLM
  summaries) moves events up to a seq out of the live log (to ``events.archive.jsonl`` in
  archive mode) with an atomic rewrite; a crash or a refused write at any point loses nothing.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from duragent.core.events import Event
from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps, write_all
from duragent.store.health import storage_error

__all__ = ["ARCHIVE_FILENAME", "EVENTS_FILENAME", "EventLog", "ReadReport"]

log = logging.getLogger(__name__)

EVENTS_FILENAME = "events.jsonl"
ARCHIVE_FILENAME = "events.archive.jsonl"

_SEQ_PREFIX = re.compile(rb'\s*\{\s*"seq"\s*:\s*(\d+)')


@dataclass(slots=True)
class ReadReport:
    """What ``EventLog.read`` found besides the events."""

    skipped_malformed: int = 0
    skipped_duplicates: int = 0
    torn_tail: bool = False
    gaps: list[tuple[int, int]] = field(default_factory=list)
    missing: bool = False
    """The file does not exist (normal for a session not yet written, never after one was)."""
    out_of_order: int = 0
    """Events written after a higher seq (a single appender never does this; they are kept)."""

    @property
    def clean(self) -> bool:
        """True when nothing was skipped or missing."""
        return not (
            self.skipped_malformed
            or self.skipped_duplicates
            or self.torn_tail
            or self.gaps
            or self.out_of_order
        )


def _line_seq(line: bytes) -> int | None:
    match = _SEQ_PREFIX.match(line)
    return int(match.group(1)) if match else None


class EventLog:
    """The event log of one session directory. Not thread-safe: one owner (the actor)."""

    def __init__(
        self,
        directory: Path,
        ops: FileOps = OS_FILE_OPS,
        on_append: Callable[[float], None] | None = None,
    ) -> None:
        self.path = directory / EVENTS_FILENAME
        self._on_append = on_append
        """Told each durable append's seconds (the metrics); called on the owner's thread."""
        self.archive_path = directory / ARCHIVE_FILENAME
        self._ops = ops
        self._tail_clean: bool | None = None  # None = unknown, check before next append
        self._fd: int | None = None  # kept open while the owner lives: fewer syscalls
        self._size = 0
        self._archived_seq: int | None = None  # highest seq in the archive, once known
        self.appended_bytes = 0
        """Bytes appended through this object (the owner spaces snapshots by it)."""
        self.io_seconds = 0.0
        """Seconds spent in the durable write (and fsync) of appends."""

    def append(self, events: Sequence[Event]) -> None:
        """Write ``events`` as lines and fsync; all or nothing (see module docstring).

        The live log stays open between appends (its size tracked here) with ``O_DSYNC`` where
        the OS has it, so an append is one durable write: under load every extra system call
        is another wait for the GIL. After a failure it is closed, so the next append reopens
        it and checks its size and last byte again.
        """
        if not events:
            return
        if len(events) == 1:  # the usual case: one durable event
            payload = (events[0].to_json() + "\n").encode()
        else:
            payload = "".join(e.to_json() + "\n" for e in events).encode()
        if self._fd is None:
            fd = self._ops.open_append(self.path, sync=True)
            try:
                self._size = self._ops.size(fd)
            except BaseException:
                self._ops.close(fd)
                raise
            self._fd = fd
            self._tail_clean = None
        began = time.perf_counter()
        try:
            written = self._append_at(
                self._fd,
                self.path,
                self._size,
                payload,
                tail_clean=bool(self._tail_clean),
                synced=self._ops.sync_appends,
            )
        except BaseException:
            self.close()
            raise
        took = time.perf_counter() - began
        self.io_seconds += took
        if self._on_append is not None:
            self._on_append(took)
        self._size += written
        self._tail_clean = True
        self.appended_bytes += written

    def close(self) -> None:
        """Close the open log (the owner stops, or the file is about to be replaced)."""
        self._tail_clean = None
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                self._ops.close(fd)
            except OSError as exc:
                log.warning("closing %s: %s", self.path, exc)

    def _append_at(
        self, fd: int, path: Path, start: int, payload: bytes, *, tail_clean: bool, synced: bool
    ) -> int:
        """The one append path (live log and archive): durable, or rolled back and raised.

        ``payload`` (complete lines) goes at ``start``, the file's size. A file whose last byte
        is not a newline (a torn write; checked unless ``tail_clean``) first gets one, so the
        new lines never glue onto the fragment. Unless ``synced`` (an ``O_DSYNC`` descriptor)
        the file is fsync'd. On any failure the file is cut back to ``start`` (a retry neither
        duplicates nor leaves half a line) and the error is raised. Returns the bytes written.
        """
        try:
            if start and not tail_clean and not _ends_with_newline(path, start):
                payload = b"\n" + payload
            write_all(self._ops, fd, payload)
            if not synced:
                self._ops.fsync(fd)
        except BaseException:
            try:
                self._ops.truncate(fd, start)
                self._ops.fsync(fd)
            except OSError as exc:  # the read side de-duplicates what survives
                log.error("could not roll back a failed append to %s: %s", path, exc)
            raise
        return len(payload)

    def read(self, after_seq: int = 0) -> tuple[list[Event], ReadReport]:
        """Events with ``seq > after_seq`` in order, and a report of what was skipped."""
        report = ReadReport()
        try:
            raw = self._ops.read_bytes(self.path)
        except FileNotFoundError:
            report.missing = True
            return [], report
        lines = raw.split(b"\n")
        unterminated = len(lines) - 1  # index of the piece after the last newline
        events: list[Event] = []
        seen: set[int] = set()
        last = after_seq
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            seq = _line_seq(line)
            if seq is not None and seq <= after_seq:
                continue
            try:
                event = Event.from_json(line)
            except ValueError:
                if index == unterminated:
                    report.torn_tail = True  # a crash mid-append; never acknowledged
                else:
                    report.skipped_malformed += 1
                continue
            if event.seq <= after_seq:
                continue
            if event.seq in seen:
                report.skipped_duplicates += 1
                continue
            seen.add(event.seq)
            if events and event.seq < events[-1].seq:
                report.out_of_order += 1
            events.append(event)
        events.sort(key=lambda e: e.seq)
        for e in events:
            if e.seq != last + 1:
                report.gaps.append((last + 1, e.seq - 1))
            last = e.seq
        return events, report

    def last_seq(self) -> int | None:
        """The seq of the last complete line, read from the file's end (0: no events).

        A cheap probe for a reader that is not the owner (a chat's recovery asking whether
        anything was written after the snapshot): it reads back only as far as the last
        line starts. None when that line has no readable seq or the file cannot be read; the
        caller then loads the session instead.
        """
        try:
            with open(self.path, "rb") as file:
                return _last_line_seq(file)
        except FileNotFoundError:
            return 0
        except OSError:
            return None

    def roll_over(self, up_to_seq: int, *, archive: bool) -> int:
        """Move events with ``seq <= up_to_seq`` out of the live log; return how many.

        In archive mode they are first appended (and fsync'd) to the archive, skipping any the
        archive already holds, so a crash between the two steps duplicates nothing; otherwise
        they are discarded. The live log is then replaced atomically (``atomic_write``). A
        failure at any step leaves every event in the live log, the archive, or both, and
        raises ``StorageError`` when the machine refused.
        """
        try:
            return self._roll_over(up_to_seq, archive=archive)
        except OSError as exc:
            error = storage_error(f"moving events up to seq {up_to_seq} out of {self.path}", exc)
            if error is exc:
                raise
            raise error from exc

    def _roll_over(self, up_to_seq: int, *, archive: bool) -> int:
        try:
            raw = self._ops.read_bytes(self.path)
        except FileNotFoundError:
            return 0
        old: list[bytes] = []
        keep: list[bytes] = []
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            seq = _line_seq(line)
            (old if seq is not None and seq <= up_to_seq else keep).append(line)
        if not old:
            return 0
        if archive:
            archived = self._archive_last_seq()
            fresh = [line for line in old if (_line_seq(line) or 0) > archived]
            if fresh:
                self._archived_seq = None  # unknown until the append is known to be done
                self._append_archive(b"\n".join(fresh) + b"\n")
                self._archived_seq = max(archived, *(_line_seq(line) or 0 for line in fresh))
        self.close()  # the open descriptor would keep appending to the replaced file
        atomic_write(self.path, b"".join(line + b"\n" for line in keep), self._ops)
        self._tail_clean = True
        return len(old)

    def _append_archive(self, payload: bytes) -> None:
        fd = self._ops.open_append(self.archive_path)
        try:
            start = self._ops.size(fd)
            self._append_at(fd, self.archive_path, start, payload, tail_clean=False, synced=False)
        finally:
            self._ops.close(fd)

    def _archive_last_seq(self) -> int:
        """The highest seq of a *complete* event in the archive (a torn line does not count).

        Read from the file's tail once, then tracked here (this log is the archive's only
        writer), so a rollover does not re-parse the archive every time.
        """
        if self._archived_seq is None:
            self._archived_seq = self._scan_archive_last_seq()
        return self._archived_seq

    def _scan_archive_last_seq(self) -> int:
        try:
            with self.archive_path.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                window = 65536
                while True:
                    fh.seek(max(0, size - window))
                    lines = fh.read().split(b"\n")
                    if size > window:
                        lines = lines[1:]  # the first piece may start mid-line
                    for line in reversed(lines):  # events are appended in seq order
                        try:
                            return Event.from_json(line).seq
                        except ValueError:
                            continue
                    if window >= size:
                        return 0
                    window *= 4
        except FileNotFoundError:
            return 0

    def first_archived(self, event_type: str) -> Event | None:
        """The oldest archived event of ``event_type``, reading the archive no further.

        The archive is appended in seq order, so the first such line is the oldest. A long
        session's original task (its first user message) is there, near the start of a file
        that may be far larger than that one line (``store.original_task``). Read directly,
        like ``last_seq``: a lookup, not one of the owner's durable paths.
        """
        needle = b'"' + event_type.encode() + b'"'
        try:
            with self.archive_path.open("rb") as file:
                for line in file:
                    if needle not in line:
                        continue  # most lines: no parse
                    try:
                        event = Event.from_json(line)
                    except ValueError:
                        continue  # a torn line
                    if event.type == event_type:
                        return event
        except FileNotFoundError:
            return None
        return None

    def read_archive(self) -> list[Event]:
        """Every archived event (for full-history reads), in order, de-duplicated."""
        try:
            raw = self._ops.read_bytes(self.archive_path)
        except FileNotFoundError:
            return []
        seen: set[int] = set()
        out: list[Event] = []
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            try:
                event = Event.from_json(line)
            except ValueError:
                continue
            if event.seq not in seen:
                seen.add(event.seq)
                out.append(event)
        out.sort(key=lambda e: e.seq)
        return out


_TAIL_BLOCK = 64 * 1024


def _last_line_seq(file: BinaryIO) -> int | None:
    """The seq of the last newline-terminated, non-blank line of ``file`` (0: none)."""
    pos = file.seek(0, os.SEEK_END)
    tail = b""
    while True:
        end = tail.rfind(b"\n")  # a torn last line (no newline yet) is not a record
        lines = tail[:end].split(b"\n") if end >= 0 else []
        complete = lines[1:] if pos > 0 else lines  # the first piece may be cut
        for line in reversed(complete):
            if line.strip():
                return _line_seq(line)
        if pos == 0:
            return 0
        step = min(_TAIL_BLOCK, pos)
        pos -= step
        file.seek(pos)
        tail = file.read(step) + tail


def _ends_with_newline(path: Path, size: int) -> bool:
    with path.open("rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) == b"\n"
