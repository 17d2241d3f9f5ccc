"""Replace a file all or nothing: the one place the store (and the tools) do it.

The sequence that survives a crash at any instant: write a temporary file in the same folder,
fsync it, rename it over the target, fsync the folder. A reader, or a process started after a
crash, sees the old content or the new, never a mix. It used to be written out five times
(snapshot, log rollover, chat index, policy, memory), two of them past the ``FileOps`` seam,
so an injected disk fault never reached them; every step now goes through ``FileOps``.

A failed replacement leaves the target as it was and its temporary file removed; the error is
a ``StorageError`` naming the target (``store.health.storage_error``) when the machine refused.
A crash can still leave a temporary file behind: its name ends in ``.tmp`` so recovery
(``SessionFiles.remove_stale_temp_files``) can recognise and delete it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from duragent.core.ids import new_ulid
from duragent.store.fileops import OS_FILE_OPS, FileOps, write_all
from duragent.store.health import storage_error

__all__ = ["atomic_write", "temp_path"]


def temp_path(path: Path, *, hidden: bool = False) -> Path:
    """A unique temporary name next to ``path``: ``<name>.<ulid>.tmp`` (``.<name>…`` if hidden).

    Hidden names suit folders a person browses (memory notes, policy files).
    """
    return path.with_name(f"{'.' if hidden else ''}{path.name}.{new_ulid()}.tmp")


def atomic_write(
    path: Path,
    data: bytes,
    ops: FileOps = OS_FILE_OPS,
    *,
    keep_mode: bool = False,
    new_file_mode: int | None = None,
    hidden_temp: bool = False,
    durable: bool = True,
) -> None:
    """Replace ``path`` with ``data``: temporary file, fsync, rename, fsync of the folder.

    - ``durable=False`` leaves out both fsyncs: a reader, and a process killed and started
      again, still see the old content or the new, never a mix; only a machine that loses
      power may be left with an empty file. For a copy that can be made again (a chat's
      copy of a stored attachment), never for anything that is the only record.

    - ``keep_mode``: the new file gets the permissions of the one it replaces (a file a
      person edits keeps what they set); a new file gets ``new_file_mode``.
    - without: the file gets ``new_file_mode``, or ``0o666`` less the umask when None.

    Raises ``StorageError`` (through ``storage_error``) when the machine refuses a step; the
    target is then untouched (or, if only the final folder fsync failed, replaced but perhaps
    not yet durable).
    """
    mode = new_file_mode
    if keep_mode:
        with contextlib.suppress(FileNotFoundError):
            mode = path.stat().st_mode & 0o777
    tmp = temp_path(path, hidden=hidden_temp)
    try:
        try:
            fd = ops.open_new(tmp, mode)
            try:
                write_all(ops, fd, data)
                if durable:
                    ops.fsync(fd)
            finally:
                ops.close(fd)
            ops.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise
        if durable:
            ops.fsync_dir(path.parent)
    except OSError as exc:
        error = storage_error(f"writing {path}", exc)
        if error is exc:  # the files are wrong (a folder in the way), not the machine
            raise
        raise error from exc
