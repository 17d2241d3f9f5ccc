"""What a schedule's run log says: the entries the scheduler writes and the state they add up to.

Every line of ``schedules/runs/<id>.jsonl`` has the reference's ``ts`` (ms) and ``status``;
we add ``due`` (ms), the due time the line is about, which is what makes a run
at-most-once per due time across crashes: the scheduler never starts a due time at or
before the newest ``due`` in the log.

- ``running`` (``due``, ``attempt``): written and fsync'd *before* an attempt starts;
- ``recorded`` (``due``, ``session_id``, ``seq``): the run wrote into a session (its user
  message or the delivered text), so the session's own recovery owns it from now on (a kill
  between that write and this line: the next attempt finds the write by its key, ``chat``);
- ``retry`` (``due``, ``attempt``, ``error``): an attempt failed and another follows;
- the outcome, exactly one per due time: ``ok``, ``error``, ``interrupted`` (the server
  stopped during the run) or ``missed`` (not run: late beyond the grace, or coalesced; it
  covers ``first_due``…``due``, ``count`` due times), with ``duration_ms``, ``error`` and
  ``next_run_at`` (ms) as the reference writes them;
- ``registered`` (``cursor``): a declared schedule first seen, declared again after it was
  removed, or its timing changed (``reason`` says which); due times before are not its to run;
- ``removed`` (``reason``): a declared schedule no longer declared (a reload); it does not
  run again unless declared again, and then only from a new ``registered`` line.

``RunState.fold`` reads the lines back into the reference's runtime fields, which it kept
in memory only (``last_run_at``, ``last_status``, ``last_error``, ``last_duration_ms``,
``next_run_at``, ``running_since``), plus the cursor and a run left dangling by a crash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from duragent.observability.metrics import Metrics

__all__ = ["OUTCOMES", "Dangling", "RunState", "count_line", "from_ms", "to_ms"]

OUTCOMES = frozenset({"ok", "error", "interrupted", "missed"})


def to_ms(when: datetime) -> int:
    """Milliseconds since the epoch."""
    return round(when.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    """An aware UTC datetime from milliseconds since the epoch."""
    return datetime.fromtimestamp(ms / 1000, UTC)


@dataclass(frozen=True, slots=True)
class Dangling:
    """A run whose start is on disk and whose outcome is not: the server stopped during it."""

    due: datetime
    attempt: int
    started: datetime
    recorded: bool


@dataclass(slots=True)
class RunState:
    """The durable state of one schedule (see module docstring)."""

    cursor: datetime | None = None
    last_run_at: datetime | None = None
    last_status: str | None = None
    last_error: str | None = None
    last_duration_ms: int | None = None
    next_run_at: datetime | None = None
    running_since: datetime | None = None
    dangling: Dangling | None = None
    removed: bool = False
    """The newest of its ``removed`` and ``registered`` lines is ``removed``."""

    @classmethod
    def fold(cls, entries: Iterable[Mapping[str, Any]]) -> RunState:
        """The state the entries (oldest first) add up to; unknown lines are ignored."""
        state = cls()
        for entry in entries:
            state.apply(entry)
        return state

    def apply(self, entry: Mapping[str, Any]) -> None:
        """Take one more entry into account."""
        status = entry.get("status")
        ts = _time(entry.get("ts"))
        due = _time(entry.get("due")) or _time(entry.get("cursor"))
        if due is not None and (self.cursor is None or due > self.cursor):
            self.cursor = due
        if status in ("removed", "registered"):
            self.removed = status == "removed"
        elif status == "running" and due is not None and ts is not None:
            since = self.running_since if self._same(due) and self.running_since else ts
            self.running_since = since
            attempt = entry.get("attempt")
            self.dangling = Dangling(due, attempt if isinstance(attempt, int) else 1, since, False)
        elif status == "recorded" and self.dangling is not None and self._same(due):
            self.dangling = Dangling(
                self.dangling.due, self.dangling.attempt, self.dangling.started, True
            )
        elif status in OUTCOMES:
            if self._same(due):
                self.dangling = None
                self.running_since = None
            if status != "missed" or self.last_status is None:
                self.last_run_at = ts
            self.last_status = str(status)
            error = entry.get("error")
            self.last_error = error if isinstance(error, str) else None
            duration = entry.get("duration_ms")
            self.last_duration_ms = duration if isinstance(duration, int) else None
            self.next_run_at = _time(entry.get("next_run_at"))

    def _same(self, due: datetime | None) -> bool:
        return self.dangling is not None and due == self.dangling.due

    def document(self) -> dict[str, Any]:
        """The state as HTTP and the CLI show it (RFC 3339 times)."""

        def iso(value: datetime | None) -> str | None:
            return None if value is None else value.isoformat().replace("+00:00", "Z")

        return {
            "last_run_at": iso(self.last_run_at),
            "last_status": self.last_status,
            "last_error": self.last_error,
            "last_duration_ms": self.last_duration_ms,
            "next_run_at": iso(self.next_run_at),
            "running_since": iso(self.running_since),
        }


def _time(value: object) -> datetime | None:
    return from_ms(value) if isinstance(value, int) and not isinstance(value, bool) else None


def count_line(metrics: Metrics, line: Mapping[str, object], now: datetime) -> None:
    """A run-log line as metrics: outcomes and retries by status; a first start's lag."""
    status = line["status"]
    if status == "running":
        due = line.get("due")
        if line.get("attempt") == 1 and isinstance(due, int):
            lag = (now - from_ms(due)).total_seconds()
            metrics.scheduler_fire_lag_seconds.observe(max(0.0, lag))
    elif status in OUTCOMES or status == "retry":
        count = line.get("count", 1)
        metrics.scheduler_runs.labels(status).inc(count if isinstance(count, int) else 1)
