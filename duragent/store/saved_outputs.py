"""Full tool outputs that Layer 3a cut, kept per session so the agent can read what was cut.

Seed 000: a result cut to fit the window loses what the model may need next (the error at
line 4,000 of a build log). The loop saves the whole output here before it records the cut
result, the cut result's notice names the saved id, and the ``tool_output`` tool reads it
back (head, tail, a line range, or lines containing a string).

```
sessions/<session_id>/outputs/out_<ULID>.txt     UTF-8 text, written atomically
```

Each object is bound to ONE session's folder by the runtime, and ids are validated
(``out_`` + 26 Crockford base32 characters) before any path is built, so a session can read
only its own outputs: another session's id is simply not found there, and no id can name a
path outside the folder. Limits: a single output is saved up to ``max_output_bytes`` (the
saved copy then says where it stops); after each save, outputs older than
``retention_days`` (by the time in their ULID) and then the oldest beyond
``max_session_bytes`` are removed. Deleting or quarantining a session takes its outputs along
(they are in its folder).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from duragent.core.clock import now_seconds
from duragent.core.ids import new_ulid
from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps

__all__ = [
    "DAY_MS",
    "DEFAULT_LIMITS",
    "OUTPUTS_DIRNAME",
    "MemorySavedOutputs",
    "SavedOutputFiles",
    "SavedOutputLimits",
    "SavedOutputNotFoundError",
    "capped_bytes",
    "is_output_id",
    "new_output_id",
    "saved_at_millis",
    "swept",
]

log = logging.getLogger(__name__)

OUTPUTS_DIRNAME = "outputs"
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ID = re.compile(r"out_[0-9A-HJKMNP-TV-Z]{26}")
DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class SavedOutputLimits:
    """How much one session keeps (``spec.session.context.saved_outputs``)."""

    max_output_bytes: int = 8 << 20
    max_session_bytes: int = 64 << 20
    retention_days: int = 7  # 0: kept until the session is deleted


DEFAULT_LIMITS = SavedOutputLimits()


class SavedOutputNotFoundError(LookupError):
    """No saved output with this id in this session (never saved, removed, or not an id)."""

    def __init__(self, output_id: str) -> None:
        self.output_id = output_id
        super().__init__(
            f"no saved output {output_id!r} in this session (it may have been removed by "
            "retention; ids look like out_01J…)"
        )


def new_output_id() -> str:
    """A fresh id: ``out_`` and a ULID (sortable by time)."""
    return f"out_{new_ulid()}"


def is_output_id(value: str) -> bool:
    """Whether ``value`` is a well-formed output id (the only names ever turned into paths)."""
    return _ID.fullmatch(value) is not None


def saved_at_millis(output_id: str) -> int:
    """When the output was saved: the ULID's 48-bit timestamp."""
    value = 0
    for char in output_id[4:14]:
        value = value * 32 + _ALPHABET.index(char)
    return value


def capped_bytes(text: str, limits: SavedOutputLimits) -> bytes:
    """``text`` as UTF-8, cut at ``max_output_bytes`` on a character boundary, with a note."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limits.max_output_bytes:
        return data
    kept = data[: limits.max_output_bytes].decode("utf-8", errors="ignore").encode("utf-8")
    note = f"\n[saved output stops here: first {len(kept)} of {len(data)} bytes]\n"
    return kept + note.encode("utf-8")


def swept(sizes: dict[str, int], keep: str, now_ms: int, limits: SavedOutputLimits) -> list[str]:
    """Which outputs (id → bytes) go after ``keep`` was saved; one policy for every backend.

    The expired first, then the oldest beyond the session's cap; never ``keep``.
    """
    ids = sorted(sizes)
    days = limits.retention_days
    gone = [i for i in ids if i != keep and days and now_ms - saved_at_millis(i) > days * DAY_MS]
    total = sum(sizes[i] for i in ids if i not in gone)
    for output_id in ids:
        if total <= limits.max_session_bytes:
            break
        if output_id != keep and output_id not in gone:
            gone.append(output_id)
            total -= sizes[output_id]
    return gone


class SavedOutputFiles:
    """One session's saved outputs on disk (module docstring)."""

    def __init__(
        self,
        session_dir: Path,
        limits: SavedOutputLimits = DEFAULT_LIMITS,
        ops: FileOps = OS_FILE_OPS,
        clock: Callable[[], float] = now_seconds,
    ) -> None:
        self.folder = session_dir / OUTPUTS_DIRNAME
        self.limits = limits
        self._ops = ops
        self._clock = clock

    def new_id(self) -> str:
        """An id for an output about to be saved."""
        return new_output_id()

    def _path(self, output_id: str) -> Path:
        if not is_output_id(output_id):
            raise SavedOutputNotFoundError(output_id)
        return self.folder / f"{output_id}.txt"

    def save(self, output_id: str, text: str) -> None:
        """Keep ``text`` under ``output_id`` durably, then apply retention and the size cap."""
        path = self._path(output_id)
        if not self.folder.is_dir():
            self.folder.mkdir(exist_ok=True)
            self._ops.fsync_dir(self.folder.parent)
        atomic_write(path, capped_bytes(text, self.limits), self._ops)
        self._sweep(keep=output_id)

    def read(self, output_id: str) -> str:
        """The saved text (``SavedOutputNotFoundError`` when there is none by that id here)."""
        path = self._path(output_id)
        try:
            data = self._ops.read_bytes(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise SavedOutputNotFoundError(output_id) from None
        return data.decode("utf-8", errors="replace")

    def ids(self) -> list[str]:
        """Every saved id, oldest first."""
        try:
            names = [p.name for p in self.folder.iterdir()]
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(n[:-4] for n in names if n.endswith(".txt") and is_output_id(n[:-4]))

    def _sweep(self, keep: str) -> None:
        """Remove expired outputs, then the oldest beyond the session's cap (never ``keep``)."""
        ids = self.ids()
        now_ms = int(self._clock() * 1000)
        sizes: dict[str, int] = {}
        for output_id in ids:
            sizes[output_id] = 0  # unreadable: still subject to retention
            with contextlib.suppress(OSError):
                sizes[output_id] = (self.folder / f"{output_id}.txt").stat().st_size
        for output_id in swept(sizes, keep, now_ms, self.limits):
            try:
                (self.folder / f"{output_id}.txt").unlink(missing_ok=True)
            except OSError as exc:
                log.warning("could not remove saved output %s: %s", output_id, exc)
        for stale in self.folder.glob("*.tmp"):  # writes a crash interrupted
            with contextlib.suppress(OSError):
                if time.time() - stale.stat().st_mtime > 3600:  # mtime: the wall clock
                    stale.unlink()


class MemorySavedOutputs:
    """The in-memory backend's saved outputs (same rules, no files)."""

    def __init__(
        self,
        store: dict[str, str],
        limits: SavedOutputLimits = DEFAULT_LIMITS,
        clock: Callable[[], float] = now_seconds,
    ) -> None:
        self._store = store
        self.limits = limits
        self._clock = clock
        self._lock = threading.Lock()

    def new_id(self) -> str:
        """An id for an output about to be saved."""
        return new_output_id()

    def save(self, output_id: str, text: str) -> None:
        """Keep ``text`` under ``output_id``, then apply retention and the size cap."""
        if not is_output_id(output_id):
            raise SavedOutputNotFoundError(output_id)
        data = capped_bytes(text, self.limits)
        now_ms = int(self._clock() * 1000)
        with self._lock:
            self._store[output_id] = data.decode("utf-8")
            sizes = {k: len(v.encode("utf-8")) for k, v in self._store.items()}
            for old in swept(sizes, output_id, now_ms, self.limits):
                del self._store[old]

    def read(self, output_id: str) -> str:
        """The saved text (``SavedOutputNotFoundError`` when there is none by that id)."""
        with self._lock:
            found = self._store.get(output_id) if is_output_id(output_id) else None
        if found is None:
            raise SavedOutputNotFoundError(output_id)
        return found

    def ids(self) -> list[str]:
        """Every saved id, oldest first."""
        with self._lock:
            return sorted(self._store)
