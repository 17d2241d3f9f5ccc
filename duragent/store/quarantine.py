"""Moving a record the runtime cannot use aside, with its reason, instead of failing on it.

Issue 34: one bad record (a schedule, a local policy, a background job's metadata) once
stopped every other record of its kind. Each reader now validates a record when it reads it
and, when it cannot be used, moves its file to a ``_quarantine/`` folder next to it
(``move_aside``) with ``<name>.reason.txt`` beside it, keeps going, and reports it
(``set_aside`` lists them again after a restart, for ``/readyz`` and ``duragent doctor``).
Moving the file back restores it (it is checked again when next read). A reader that
replaces a bad record with what it could salvage keeps the original with ``copy_aside``.
"""

from __future__ import annotations

from pathlib import Path

from duragent.core.events import now_rfc3339
from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps

__all__ = ["QUARANTINE_DIRNAME", "REASON_SUFFIX", "copy_aside", "move_aside", "set_aside"]

QUARANTINE_DIRNAME = "_quarantine"
REASON_SUFFIX = ".reason.txt"


def move_aside(path: Path, folder: Path, reason: str, ops: FileOps = OS_FILE_OPS) -> Path:
    """Move ``path`` into ``folder`` with ``reason`` beside it; where it went.

    It keeps its name unless a file of that name is already there, then ``<stem>.2<suffix>``…
    The reason file is written first, so a crash between the two steps leaves the record
    where it was (read, and moved aside, again next time). Raises OSError (the file may
    have gone meanwhile: FileNotFoundError).
    """
    target = _free_name(path, folder)
    note = f"{now_rfc3339()} {reason}\n".encode()
    atomic_write(target.with_name(target.name + REASON_SUFFIX), note, ops)
    ops.replace(path, target)
    ops.fsync_dir(path.parent)
    ops.fsync_dir(folder)
    return target


def copy_aside(
    path: Path, data: bytes, folder: Path, reason: str, ops: FileOps = OS_FILE_OPS
) -> Path:
    """Keep ``data`` (what ``path`` held) in ``folder`` with ``reason``; where it went.

    For a record its reader replaces in place with what it could salvage: the copy is
    durable before the caller replaces ``path``, so a crash in between leaves the record
    where it was (set aside again, as ``<stem>.2<suffix>``, when next read) and never
    loses it. Names as ``move_aside``; raises OSError.
    """
    target = _free_name(path, folder)
    note = f"{now_rfc3339()} {reason}\n".encode()
    atomic_write(target.with_name(target.name + REASON_SUFFIX), note, ops)
    atomic_write(target, data, ops)
    return target


def _free_name(path: Path, folder: Path) -> Path:
    """``folder/<name>``, or ``<stem>.2<suffix>``… when taken (the folder is made)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    suffix = 1
    while target.exists():
        suffix += 1
        target = folder / f"{path.stem}.{suffix}{path.suffix}"
    return target


def set_aside(folder: Path, pattern: str) -> dict[Path, str]:
    """Every file matching ``pattern`` in ``folder``, with the reason recorded when moved."""
    if not folder.is_dir():
        return {}
    found = {}
    for path in sorted(folder.glob(pattern)):
        if path.name.endswith(REASON_SUFFIX):
            continue
        try:
            text = path.with_name(path.name + REASON_SUFFIX).read_text(encoding="utf-8")
        except OSError as exc:
            text = f"(reason unreadable: {exc})"
        found[path] = text.strip() or "(no reason recorded)"
    return found
