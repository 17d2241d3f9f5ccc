"""``.duragent/schedules/<id>.yaml`` and ``schedules/runs/<id>.jsonl`` on disk.

``ScheduleFiles`` is the ``ScheduleStorage`` of ``protocols``: one YAML document per
schedule, replaced atomically (``atomic.atomic_write``), so a crash leaves either the old or
the new file, never half of one. ``RunLogFiles`` is the ``RunLogStorage``: one JSON object a
line, appended and fsync'd before ``append`` returns (the scheduler relies on a run's start
being on disk before the run does anything), torn last lines skipped on read, and pruned as
the reference prunes: past 1 MiB the file is rewritten (atomically) with its last 1,000
lines.

Both only store mappings; the scheduler validates them (``duragent.scheduler.model``). A
schedule file the scheduler cannot use (unreadable YAML, a field out of range) is moved to
``schedules/_quarantine/<id>.yaml`` with ``<id>.yaml.reason.txt`` beside it (``quarantine``),
as sessions are: kept, listed with its reason, never run; moving it back restores it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps, write_all
from duragent.store.quarantine import QUARANTINE_DIRNAME, move_aside, set_aside
from duragent.store.yaml_emit import dump_yaml

__all__ = [
    "PRUNE_BYTES",
    "PRUNE_KEEP",
    "QUARANTINE_DIRNAME",
    "RunLogFiles",
    "ScheduleFiles",
    "check_schedule_id",
]

PRUNE_BYTES = 1024 * 1024
PRUNE_KEEP = 1000
_ID = re.compile(r"[A-Za-z0-9_.-]{1,200}\Z")


def check_schedule_id(schedule_id: str) -> str:
    """``schedule_id`` if it is safe as a file name; ValueError otherwise."""
    if not _ID.match(schedule_id) or schedule_id.startswith("."):
        raise ValueError(f"not a valid schedule id: {schedule_id!r}")
    return schedule_id


class ScheduleFiles:
    """Schedule documents in ``directory`` (see module docstring)."""

    def __init__(self, directory: Path, ops: FileOps = OS_FILE_OPS) -> None:
        self.directory = directory
        self._ops = ops

    def path(self, schedule_id: str) -> Path:
        """Where the schedule's file is."""
        return self.directory / f"{check_schedule_id(schedule_id)}.yaml"

    def ids(self) -> list[str]:
        """Every schedule id, sorted (``*.yaml`` files; temporary files ignored)."""
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.yaml") if _ID.match(p.stem))

    def get(self, schedule_id: str) -> dict[str, Any] | None:
        """The parsed document; None when missing. YAML errors propagate (``yaml.YAMLError``)."""
        try:
            text = self.path(schedule_id).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        data = yaml.safe_load(text)
        return data if isinstance(data, dict) else {"(document)": data}

    def put(self, schedule_id: str, schedule: dict[str, Any]) -> None:
        """Create or replace the file atomically."""
        self.directory.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path(schedule_id), dump_yaml(schedule).encode(), self._ops)

    def remove(self, schedule_id: str) -> None:
        """Delete the file (missing is fine); the run log is kept."""
        with contextlib.suppress(FileNotFoundError):
            self.path(schedule_id).unlink()

    def quarantine(self, schedule_id: str, reason: str) -> Path:
        """Move the schedule's file aside with ``reason`` beside it; where it went.

        It keeps its name (``<id>.yaml``) unless a file of that name is already there, then
        ``<id>.2.yaml``… (``store.quarantine.move_aside``: a crash between the two steps
        leaves the schedule where it was, read and quarantined again at the next start).
        """
        return move_aside(
            self.path(schedule_id), self.directory / QUARANTINE_DIRNAME, reason, self._ops
        )

    def quarantined(self) -> dict[Path, str]:
        """Every quarantined file, with the reason recorded when it was moved aside."""
        return set_aside(self.directory / QUARANTINE_DIRNAME, "*.yaml")


class RunLogFiles:
    """Run logs in ``directory`` (see module docstring). ``sync=False`` only for simulations."""

    def __init__(self, directory: Path, ops: FileOps = OS_FILE_OPS, *, sync: bool = True) -> None:
        self.directory = directory
        self._ops = ops
        self._sync = sync

    def path(self, schedule_id: str) -> Path:
        """Where the schedule's run log is."""
        return self.directory / f"{check_schedule_id(schedule_id)}.jsonl"

    def append(self, schedule_id: str, run: dict[str, Any]) -> None:
        """Append one line and make it durable before returning; prune past 1 MiB."""
        path = self.path(schedule_id)
        line = json.dumps(run, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        try:
            fd = self._ops.open_append(path)
        except FileNotFoundError:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = self._ops.open_append(path)
        try:
            new = self._ops.size(fd) == 0
            if not new and not _ends_with_newline(path):
                line = b"\n" + line  # a torn tail stays its own (skipped) line
            write_all(self._ops, fd, line)
            if self._sync:
                self._ops.fsync(fd)
                if new:  # the file's name must be as durable as its first line
                    self._ops.fsync_dir(self.directory)
            size = self._ops.size(fd)
        finally:
            self._ops.close(fd)
        if size > PRUNE_BYTES:
            self._prune(path)

    def _prune(self, path: Path) -> None:
        lines = path.read_bytes().splitlines(keepends=True)[-PRUNE_KEEP:]
        atomic_write(path, b"".join(lines), self._ops)

    def logged(self) -> list[str]:
        """Every schedule id with a run log (``*.jsonl``; temporary files ignored), sorted."""
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.jsonl") if _ID.match(p.stem))

    def recent(self, schedule_id: str, limit: int) -> list[dict[str, Any]]:
        """The last ``limit`` entries, oldest first (torn or malformed lines skipped)."""
        try:
            raw = self.path(schedule_id).read_bytes()
        except FileNotFoundError:
            return []
        runs: list[dict[str, Any]] = []
        for line in raw.splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict):
                    runs.append(entry)
        return runs[-limit:] if limit > 0 else []


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"
