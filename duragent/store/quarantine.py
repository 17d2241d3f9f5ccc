"""Moving a record the runtime cannot use aside, with its reason, instead of failing on it.

Issue 34: one bad record (a schedule, a local policy, a background job's metadata) once
stopped every other record of its kind. Each reader now validates a record when it reads it
and, when it cannot be used, moves its file to a ``_quarantine/`` folder next to it
(``move_aside``) with ``<name>.reason.txt`` beside it, keeps going, and reports it
(``set_aside`` lists them again after a restart, for ``/readyz`` and ``duragent doctor``).
Moving the file back restores it (it is checked again when next read).
"""

from __future__ import annotations

from pathlib import Path

from duragent.core.events import now_rfc3339
from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps

__all__ = ["QUARANTINE_DIRNAME", "REASON_SUFFIX", "move_aside", "set_aside"]

QUARANTINE_DIRNAME = "_quarantine"
REASON_SUFFIX = ".reason.txt"


def move_aside(path: Path, folder: Path, reason: str, ops: FileOps = OS_FILE_OPS) -> Path:
    """Move ``path`` into ``folder`` with ``reason`` beside it; where it went.

    It keeps its name unless a file of that name is already there, then ``<stem>.2<suffix>``…
    The reason file is written first, so a crash between the two steps leaves the record
    where it was (read, and moved aside, again next time). Raises OSError (the file may
    have gone meanwhile: FileNotFoundError).
    """
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    suffix = 1
    while target.exists():
        suffix += 1
        target = folder / f"{path.stem}.{suffix}{path.suffix}"
    note = f"{now_rfc3339()} {reason}\n".encode()
    atomic_write(target.with_name(target.name + REASON_SUFFIX), note, ops)
    ops.replace(path, target)
    ops.fsync_dir(path.parent)
    ops.fsync_dir(folder)
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
