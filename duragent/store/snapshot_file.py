"""``state.yaml``: the atomic snapshot of one session (and the reference's ``state.json``).

Written with ``atomic.atomic_write`` (temp file, fsync, rename, fsync of the directory, all
through ``FileOps``): a reader sees the old snapshot or the new one, never a mix. Reading
accepts the reference's ``state.json`` so an existing workspace opens; corrupt files raise
``SnapshotCorruptError`` (the session is then quarantined, never silently resumed as an empty
chat). A file the OS refuses to read (permission, I/O, descriptors) is not corrupt: that raises
``StorageError`` and the session stays where it is, to load once the cause is fixed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from duragent.core.messages import Message
from duragent.core.nesting import MAX_NESTING_DEPTH, loads_bounded, yaml_too_deep
from duragent.core.snapshot import SessionSnapshot
from duragent.errors import DuragentError
from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps
from duragent.store.health import storage_error
from duragent.store.yaml_emit import dump_lines, dump_yaml

__all__ = [
    "LEGACY_STATE_FILENAME",
    "STATE_FILENAME",
    "SessionFilesInconsistentError",
    "SnapshotCorruptError",
    "SnapshotFile",
    "read_header",
]

"""Read failures that say nothing about the snapshot: never a reason to quarantine it."""

STATE_FILENAME = "state.yaml"
LEGACY_STATE_FILENAME = "state.json"

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SnapshotCorruptError(DuragentError):
    """A snapshot exists but cannot be read; the session must not be resumed empty."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"snapshot {path} is unreadable: {reason}")


class SessionFilesInconsistentError(SnapshotCorruptError):
    """Events the snapshot says were written cannot be found (log missing, garbage, a gap).

    Quarantined like a corrupt snapshot: resuming would silently drop acknowledged messages.
    """

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(path, reason)
        self.args = (f"{path}: {reason}",)

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class SnapshotFile:
    """The snapshot of one session directory (one owner: the session's actor).

    Messages are immutable, so the YAML lines of each one are rendered once and kept while it
    is in the conversation: a snapshot of 1,000 messages is then a join, not a re-render
    (measured: 9 ms → well under 1 ms on this machine).
    """

    def __init__(self, directory: Path, ops: FileOps = OS_FILE_OPS) -> None:
        self.directory = directory
        self._ops = ops
        self.path = directory / STATE_FILENAME
        self.legacy_path = directory / LEGACY_STATE_FILENAME
        self._rendered: dict[Message, str] = {}  # identity-keyed (Message has eq=False)
        self.last_size = 0
        """Bytes of the last snapshot written (the actor spaces snapshots by it)."""
        self.io_seconds = 0.0
        """Seconds spent writing and syncing snapshots (the admission limit adapts to it)."""

    def render(self, snapshot: SessionSnapshot) -> str:
        """The text of state.yaml for ``snapshot``: header first, conversation last."""
        rendered, kept = self._rendered, {}
        parts = [dump_yaml(snapshot.header_dict())]
        if snapshot.conversation:
            parts.append("conversation:\n")
            for index, message in enumerate(snapshot.conversation):
                text = rendered.get(message)  # a message's origin seq never changes
                if text is None:
                    text = dump_lines([snapshot.message_dict(index)])
                kept[message] = text
                parts.append(text)
        else:
            parts.append("conversation: []\n")
        self._rendered = kept  # messages that left the window are forgotten
        return "".join(parts)

    def exists(self) -> bool:
        """True when either snapshot file is present."""
        return self.path.exists() or self.legacy_path.exists()

    def write(self, snapshot: SessionSnapshot) -> None:
        """Atomically replace state.yaml with ``snapshot`` (``StorageError`` when refused)."""
        data = self.render(snapshot).encode()
        began = time.perf_counter()
        atomic_write(self.path, data, self._ops)
        self.io_seconds += time.perf_counter() - began
        self.last_size = len(data)

    def read(self) -> SessionSnapshot | None:
        """The snapshot, or None when the session has none yet."""
        if self.path.exists():
            return self._read(self.path)
        if self.legacy_path.exists():
            return self._read(self.legacy_path)
        return None

    def read_legacy(self) -> SessionSnapshot | None:
        """The reference's ``state.json`` even beside a ``state.yaml`` (``reference_migration``)."""
        return self._read(self.legacy_path)

    def _read(self, path: Path) -> SessionSnapshot | None:
        try:
            raw = self._ops.read_bytes(path)
        except FileNotFoundError:
            return None  # removed since the check: as if never there
        except OSError as exc:  # permission, descriptors, I/O: the machine, not the data
            error = storage_error(f"reading {path}", exc)
            if error is exc:  # a directory where the file belongs: the files are wrong
                raise SnapshotCorruptError(path, str(exc)) from None
            raise error from exc
        try:
            text = raw.decode("utf-8")
            data = _parse_yaml(text) if path is self.path else _parse_json(text)
        except (UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            raise SnapshotCorruptError(path, str(exc).splitlines()[0]) from None
        if not isinstance(data, dict):
            raise SnapshotCorruptError(path, "not a mapping")
        try:
            return SessionSnapshot.from_dict(data)
        except (ValueError, TypeError, KeyError) as exc:
            raise SnapshotCorruptError(path, str(exc)) from None


def read_header(directory: Path, ops: FileOps = OS_FILE_OPS) -> dict[str, Any] | None:
    """The snapshot's metadata without parsing its conversation (fast session listings).

    Our writer puts ``conversation`` last, so only the text before it is parsed. Returns None
    when there is no snapshot. A listing must show a session it cannot describe rather than
    drop it, so failures are raised for it to report: ``StorageError`` when the machine
    refuses the read (through ``ops``, like every read of the store), ``SnapshotCorruptError``
    when the file is not a snapshot.
    """
    path = directory / STATE_FILENAME
    if not path.exists():
        path = directory / LEGACY_STATE_FILENAME
        if not path.exists():
            return None
    try:
        raw = ops.read_bytes(path)
    except FileNotFoundError:
        return None  # removed since the check (deleted, or moved to quarantine)
    except OSError as exc:
        error = storage_error(f"reading {path}", exc)
        if error is exc:
            raise SnapshotCorruptError(path, str(exc)) from None
        raise error from exc
    try:
        if path.name == STATE_FILENAME:
            cut = raw.find(b"\nconversation:")
            data = _parse_yaml(raw[: cut + 1 if cut >= 0 else len(raw)].decode("utf-8"))
        else:
            data = _parse_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise SnapshotCorruptError(path, str(exc).splitlines()[0]) from None
    if not isinstance(data, dict):
        raise SnapshotCorruptError(path, "not a mapping")
    return data


def _parse_yaml(text: str) -> Any:
    """YAML, refused (ValueError) when nested deeper than libyaml survives (it crashes)."""
    deep = yaml_too_deep(text)
    if deep is not None:
        raise ValueError(f"line {deep.line}: {deep.reason(MAX_NESTING_DEPTH)}")
    return yaml.load(text, Loader=_Loader)


def _parse_json(text: str) -> Any:
    """JSON, refused (ValueError, not RecursionError) when nested too deep."""
    return loads_bounded(text)
