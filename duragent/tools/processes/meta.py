"""What a background job is on disk: ``<workspace>/.duragent/processes/<handle>.meta.json``.

The fields and their JSON shapes are the reference's (``handle``, ``command``, ``label``,
``workdir``, ``pid``, ``session_id``, ``agent``, ``tmux_session``, ``backend``, ``status`` as
``{"state": "completed", "exit_code": 0}``, ``log_path``, ``spawned_at``, ``completed_at``,
``timeout_seconds``, ``gateway``, ``chat_id``), so a workspace moved over keeps its jobs
readable. Two fields are ours: ``notified`` (the job's outcome has been handed to its
session: until then a restart reports it again, so an outcome is never lost) and
``pid_start`` (the kernel's start time of ``pid``, so a restart never signals a process
that merely reuses the number).

A job belongs to the chat it was started from (``gateway`` + ``chat_id``): the tool shows
and acts on a chat's jobs only from that chat (``reach_of``). A job without them (started
over HTTP, or from a file that never had them) is nobody's chat: only a caller reaching the
whole agent (the operator, an agent-wide owner) sees it.

Every write replaces the file atomically (``store.atomic``): a crash leaves the old state
or the new one, never half of each.

Every file is validated before it is written and when it is read (``ProcessMeta.parse``:
types, a ``handle`` that is its file's name, ``log_path`` named ``<handle>.log``, a ``pid``,
times and numbers within range). One that cannot be used is never fatal (issue 34):
``recover_all`` moves it to ``processes/_quarantine/`` with its reason beside it
(``store.quarantine``), logs it, and every other job loads; ``/readyz`` lists it in
``skipped_records``, also after a restart.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from duragent.core.caller import Caller, ChatRef
from duragent.core.clock import utc_now
from duragent.store.atomic import atomic_write
from duragent.store.quarantine import QUARANTINE_DIRNAME, move_aside, set_aside

__all__ = [
    "TERMINAL_STATES",
    "ProcessMeta",
    "ProcessStatus",
    "Reach",
    "load_all",
    "meta_path",
    "now",
    "pid_start_time",
    "quarantined",
    "reach_of",
    "recover_all",
    "set_aside_meta",
    "write_meta",
]

log = logging.getLogger(__name__)

State = Literal["running", "completed", "failed", "lost", "timed_out", "killed"]
TERMINAL_STATES = frozenset({"completed", "failed", "lost", "timed_out", "killed"})
Backend = Literal["local", "tmux"]

_HANDLE = re.compile(r"[A-Za-z0-9_-]{1,100}\Z")
_SUFFIX = ".meta.json"
PID_MAX = 1 << 22
"""Linux's largest possible pid (``PID_MAX_LIMIT``)."""
INT_LIMIT = 1 << 31
"""Bound of ``timeout_seconds`` (the tool's own limit) and of an ``exit_code``."""


def now() -> datetime:
    """The current time (UTC, aware)."""
    return utc_now()


@dataclass(frozen=True, slots=True)
class ProcessStatus:
    """A job's state; ``exit_code`` for ``completed`` and ``failed`` only."""

    state: State = "running"
    exit_code: int | None = None

    @property
    def terminal(self) -> bool:
        """Whether the job has ended (any state but ``running``)."""
        return self.state in TERMINAL_STATES

    def __str__(self) -> str:
        """As the reference prints it: ``completed (exit 0)``, ``timed out``, ``lost``."""
        if self.state in ("completed", "failed"):
            return f"{self.state} (exit {self.exit_code})"
        return self.state.replace("_", " ")

    def document(self) -> dict[str, Any]:
        """The reference's JSON: ``{"state": …}`` plus ``exit_code`` when it has one."""
        doc: dict[str, Any] = {"state": self.state}
        if self.state in ("completed", "failed"):
            doc["exit_code"] = self.exit_code
        return doc


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def _parse_time(value: object) -> datetime | None:
    """An RFC 3339 time as UTC (None: not one, or outside what arithmetic on it can reach)."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError):  # ``0001-01-01T00:00+05:00`` is before year 1 in UTC
        return None


def _check_ranges(doc: dict[str, Any], file: Path) -> None:
    """Optional fields: of their type when present, numbers in range, no NUL in a path.

    A ``null`` is as if absent (the reference writes them).
    """
    for key in ("label", "workdir", "tmux_session", "gateway", "chat_id", "completed_at"):
        value = doc.get(key)
        if value is not None and (not isinstance(value, str) or "\0" in value):
            raise ValueError(f"{file}: field '{key}' is not a string (or has a NUL character)")
    bounds = {"pid": (1, PID_MAX), "pid_start": (0, 1 << 63), "timeout_seconds": (0, INT_LIMIT)}
    status = doc.get("status")
    numbers = dict(doc)
    if isinstance(status, dict):
        numbers["status.exit_code"] = status.get("exit_code")
        bounds["status.exit_code"] = (-INT_LIMIT, INT_LIMIT)
    for key, (low, high) in bounds.items():
        value = numbers.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ValueError(
                f"{file}: field '{key}' is {f'{value!r}'[:40]}, not a whole number {low}…{high}"
            )
    if doc.get("completed_at") is not None and _parse_time(doc["completed_at"]) is None:
        raise ValueError(f"{file}: field 'completed_at' is not an RFC 3339 time")
    if not isinstance(doc.get("notified", False), bool):
        raise ValueError(f"{file}: field 'notified' is not true or false")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessMeta:
    """One job's metadata (see module docstring)."""

    handle: str
    command: str
    session_id: str
    agent: str
    log_path: Path
    spawned_at: datetime
    timeout_seconds: int
    label: str | None = None
    workdir: str | None = None
    pid: int | None = None
    pid_start: int | None = None
    tmux_session: str | None = None
    backend: Backend = "local"
    status: ProcessStatus = field(default_factory=ProcessStatus)
    completed_at: datetime | None = None
    gateway: str | None = None
    chat_id: str | None = None
    notified: bool = False

    @property
    def chat(self) -> ChatRef | None:
        """The chat it was started from (None: nobody's chat, see module docstring)."""
        if self.gateway and self.chat_id:
            return ChatRef(self.gateway, self.chat_id)
        return None

    def ended(self, status: ProcessStatus) -> ProcessMeta:
        """This job, ended now with ``status``."""
        return replace(self, status=status, completed_at=now())

    def document(self) -> dict[str, Any]:
        """The JSON written to ``<handle>.meta.json`` (and shown by ``status``)."""
        doc = asdict(self)
        doc["log_path"] = str(self.log_path)
        doc["status"] = self.status.document()
        doc["spawned_at"] = _time(self.spawned_at)
        doc["completed_at"] = _time(self.completed_at)
        return doc

    @classmethod
    def parse(cls, doc: object, *, file: Path) -> ProcessMeta:
        """Read a ``.meta.json`` document; ``ValueError`` naming the file and field if unusable."""
        if not isinstance(doc, dict):
            raise ValueError(f"{file}: not a JSON object")
        for key in ("handle", "command", "session_id", "agent", "log_path"):
            if not isinstance(doc.get(key), str) or not doc[key]:
                raise ValueError(f"{file}: field '{key}' is missing or not a string")
        handle = doc["handle"]
        if not _HANDLE.match(handle) or file.name != f"{handle}{_SUFFIX}":
            raise ValueError(f"{file}: field 'handle' is {handle!r}, not this file's name")
        if "\0" in doc["log_path"] or Path(doc["log_path"]).name != f"{handle}.log":
            # the log is deleted with the job: it must be the job's own log, nothing else
            raise ValueError(f"{file}: field 'log_path' does not name {handle}.log")
        _check_ranges(doc, file)
        status_doc = doc.get("status")
        state = status_doc.get("state") if isinstance(status_doc, dict) else status_doc
        if state not in ("running", *TERMINAL_STATES):
            raise ValueError(f"{file}: field 'status.state' is {state!r}")
        code = status_doc.get("exit_code") if isinstance(status_doc, dict) else None
        spawned = _parse_time(doc.get("spawned_at"))
        if spawned is None:
            raise ValueError(f"{file}: field 'spawned_at' is not an RFC 3339 time")

        def opt_str(key: str) -> str | None:
            value = doc.get(key)
            return value if isinstance(value, str) else None

        def opt_int(key: str) -> int | None:
            value = doc.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        tmux = opt_str("tmux_session")
        return cls(
            handle=doc["handle"],
            command=doc["command"],
            session_id=doc["session_id"],
            agent=doc["agent"],
            log_path=Path(doc["log_path"]),
            spawned_at=spawned,
            timeout_seconds=opt_int("timeout_seconds") or 0,
            label=opt_str("label"),
            workdir=opt_str("workdir"),
            pid=opt_int("pid"),
            pid_start=opt_int("pid_start"),
            tmux_session=tmux,
            # The reference's older files lack ``backend``: a tmux session means tmux.
            backend="tmux" if doc.get("backend") == "tmux" or tmux else "local",
            status=ProcessStatus(state, code if isinstance(code, int) else None),
            completed_at=_parse_time(doc.get("completed_at")),
            gateway=opt_str("gateway"),
            chat_id=opt_str("chat_id"),
            # A file the reference wrote has no ``notified``: its callback was its own
            # business, so a terminal job from it is not reported again.
            notified=bool(doc.get("notified", state in TERMINAL_STATES)),
        )


Reach = Callable[[ProcessMeta], bool]
"""Whether a request may see and act on a job (``reach_of``)."""


def reach_of(agent: str, caller: Caller) -> Reach:
    """``agent``'s jobs started from a chat ``caller`` may reach (see module docstring)."""

    def sees(meta: ProcessMeta) -> bool:
        return meta.agent == agent and caller.may_reach(meta.chat)

    return sees


def meta_path(directory: Path, handle: str) -> Path:
    """``<directory>/<handle>.meta.json``."""
    return directory / f"{handle}.meta.json"


def write_meta(directory: Path, meta: ProcessMeta) -> None:
    """Replace the job's metadata file atomically, once it reads back (else ValueError)."""
    path = meta_path(directory, meta.handle)
    document = meta.document()
    ProcessMeta.parse(document, file=path)  # never write what the next start would set aside
    atomic_write(path, json.dumps(document, indent=2).encode("utf-8"))


def load_all(directory: Path) -> list[ProcessMeta]:
    """Every readable ``*.meta.json`` in ``directory``; unreadable ones are logged and kept."""
    found: list[ProcessMeta] = []
    try:
        paths = sorted(directory.glob("*.meta.json"))
    except OSError:
        return found
    for path in paths:
        try:
            found.append(_read(path))
        except (OSError, ValueError) as exc:  # JSONDecodeError is a ValueError
            log.error("background process file skipped (left as it is): %s", exc)
    return found


def _read(path: Path) -> ProcessMeta:
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (UnicodeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise ValueError(f"{path}: not valid JSON: {exc}") from None
    return ProcessMeta.parse(doc, file=path)


def recover_all(directory: Path) -> tuple[list[ProcessMeta], list[dict[str, str]]]:
    """Every usable job in ``directory``, and each file set aside (now or earlier), with why.

    A file that cannot be used is moved to ``_quarantine/`` (``set_aside_meta``); one the
    machine cannot read (``OSError``) is left where it is: the fault is the disk's.
    """
    found: list[ProcessMeta] = []
    skipped = quarantined(directory)  # by an earlier start (read before this one moves more)
    try:
        paths = sorted(directory.glob(f"*{_SUFFIX}"))
    except OSError:
        paths = []
    for path in paths:
        try:
            found.append(_read(path))
        except OSError as exc:
            log.error("background process file skipped (left as it is): %s", exc)
            skipped.append({"record": str(path), "reason": f"could not be read: {exc}"})
        except ValueError as exc:
            skipped.append(set_aside_meta(path, str(exc)))
    return found, skipped


def set_aside_meta(path: Path, reason: str) -> dict[str, str]:
    """Move a job's file to ``_quarantine/`` with ``reason``; the report of it (logged)."""
    try:
        moved = move_aside(path, path.parent / QUARANTINE_DIRNAME, reason)
    except OSError as exc:
        log.error("background process file skipped, not moved aside (%s): %s", exc, reason)
        return {"record": str(path), "reason": reason}
    log.error("background process file skipped and moved to %s: %s", moved, reason)
    return {"record": str(path), "reason": reason, "moved_to": str(moved)}


def quarantined(directory: Path) -> list[dict[str, str]]:
    """The job files set aside by an earlier start (still reported after a restart)."""
    folder = directory / QUARANTINE_DIRNAME
    return [
        {"record": str(path), "reason": reason, "moved_to": str(path)}
        for path, reason in set_aside(folder, "*.json").items()  # ``<handle>.meta.2.json``…
    ]


def pid_start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot (``/proc/<pid>/stat`` field 22).

    None when the process does not exist (or ``/proc`` is unavailable).
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text("ascii", errors="replace")
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain spaces: split after it.
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None
