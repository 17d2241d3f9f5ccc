"""Sessions the reference left (``state.json``) become ours (``state.yaml``) at first start.

The reference (giosakti/duragent) keeps a session as ``state.json`` + ``events.jsonl`` (+
``events.archive.jsonl``). We can read its ``state.json``, but leaving it where it is
misleads: the reference, started on the workspace again, resumes from it, and an approval we
ran since still shows as pending there. So ``SessionStore.open`` converts every session
folder that has one, at start, before any session is used, in three steps each safe to
interrupt:

1. ``convert``: write ``state.yaml`` (atomically) from ``state.json``, with the session's
   original task from the first user message of the whole conversation, archive included
   (``original_task``). When ``state.yaml`` is there already (an interrupted pass, or a
   duragent that read ``state.json`` before this existed and took the first *replayed*
   message for the task), only a wrong task is corrected;
2. the store maps the chats of those sessions (``ChatIndex.recover``: chats it does not map
   yet; the reference rebuilt its chat map from the snapshots, we keep ``chats.jsonl``);
3. ``set_aside``: rename ``state.json`` to ``state.json.migrated`` (``.migrated.2``… when
   taken) and fsync the folder. The reference counts a folder as a session only while it has
   a ``state.json``, so it no longer offers a stale copy; the original is kept, never lost.

A crash between any two steps leaves ``state.yaml`` (read first) or only ``state.json`` (read
as before): every session stays readable, and the next start finishes, since a folder with a
``state.json`` is taken up again. A ``state.json`` that cannot be read is left as it is (the
session is quarantined when used, as before). ``migration_status`` is what ``doctor`` reports.
Going back: ``duragent session export ID --format reference`` (``session.reference_export``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from duragent.core.snapshot import SNAPSHOT_SCHEMA_VERSION, SessionSnapshot
from duragent.store.event_log import EventLog
from duragent.store.fileops import OS_FILE_OPS, FileOps
from duragent.store.original_task import original_task
from duragent.store.snapshot_file import LEGACY_STATE_FILENAME, SnapshotFile

__all__ = [
    "MIGRATED_SUFFIX",
    "MigrationStatus",
    "convert",
    "migration_status",
    "set_aside",
    "waiting_ids",
]

log = logging.getLogger(__name__)

MIGRATED_SUFFIX = ".migrated"
"""``state.json`` → ``state.json.migrated``: where a converted session's original goes."""


@dataclass(frozen=True, slots=True)
class MigrationStatus:
    """What ``doctor`` reports: sessions converted, and sessions still to convert."""

    migrated: list[str]
    """Session ids whose ``state.json`` was set aside (as ``state.json.migrated``)."""
    waiting: list[str]
    """Session ids that still have a ``state.json`` (the next start converts them)."""


def _session_folders(root: Path) -> list[Path]:
    """Every session folder (not ``_quarantine`` nor hidden ones), sorted. One listing."""
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return []
    return sorted(
        Path(e.path)
        for e in entries
        if e.is_dir(follow_symlinks=False) and not e.name.startswith(("_", "."))
    )


def waiting_ids(root: Path) -> list[str]:
    """Sessions that still have the reference's ``state.json`` (one stat per session)."""
    return [f.name for f in _session_folders(root) if (f / LEGACY_STATE_FILENAME).exists()]


def migration_status(root: Path) -> MigrationStatus:
    """Which sessions were migrated and which are still to be (read only)."""
    migrated: list[str] = []
    waiting: list[str] = []
    for folder in _session_folders(root):
        if (folder / LEGACY_STATE_FILENAME).exists():
            waiting.append(folder.name)
        elif (folder / (LEGACY_STATE_FILENAME + MIGRATED_SUFFIX)).exists():
            migrated.append(folder.name)
    return MigrationStatus(migrated, waiting)


def convert(folder: Path, ops: FileOps = OS_FILE_OPS) -> bool:
    """Step 1: ``state.yaml`` holds the session, with its true original task.

    Returns whether ``state.yaml`` was written. Raises ``SnapshotCorruptError`` (an
    unreadable ``state.json``) or ``OSError`` (the machine refused): the folder is then as
    it was.
    """
    files = SnapshotFile(folder, ops)
    legacy = files.read_legacy()
    if legacy is None:  # set aside since it was listed
        return False
    events = EventLog(folder, ops)
    task = original_task(events, legacy)
    if not files.path.exists():
        files.write(_converted(legacy, task))
        return True
    ours = files.read()
    if ours is None or task is None or ours.task == task:
        return False
    # Converted by a duragent that took the first replayed message for the task.
    files.write(dataclasses.replace(ours, task=task))
    return True


def set_aside(folder: Path, ops: FileOps = OS_FILE_OPS) -> Path:
    """Step 3: rename ``state.json`` out of the reference's sight; return where it went."""
    source = folder / LEGACY_STATE_FILENAME
    target = folder / (LEGACY_STATE_FILENAME + MIGRATED_SUFFIX)
    number = 1
    while target.exists():
        number += 1
        target = folder / f"{LEGACY_STATE_FILENAME}{MIGRATED_SUFFIX}.{number}"
    ops.replace(source, target)
    ops.fsync_dir(folder)
    return target


def _converted(legacy: SessionSnapshot, task: str | None) -> SessionSnapshot:
    """``state.json``'s snapshot as ours: same session, same replay start.

    Schema 1 held everything up to ``last_event_seq`` (no replay): that is its checkpoint.
    The reference's pending approval carries a copy of the loop's whole message list
    (``messages``); we resume from the session's history and never read it, so it stays in
    the original only.
    """
    approval = legacy.pending_approval
    if approval is not None:
        approval = {k: v for k, v in approval.items() if k != "messages"}
    return dataclasses.replace(
        legacy,
        schema_version=SNAPSHOT_SCHEMA_VERSION,
        checkpoint_seq=legacy.replay_from_seq,
        task=task,
        pending_approval=approval,
    )
