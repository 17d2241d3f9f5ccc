"""The documented range of every timing field, so no due time can overflow (issue 34).

``every_seconds: 10**20`` and ``at: 0001-01-01T00:00:00+05:00`` once passed validation, and
computing their next due time raised ``OverflowError``: a tool call failed after its file was
written, and at the next start the whole scheduler did not start. Python's ``datetime`` ends
at year 9999 and ``timedelta`` at 999,999,999 days, so the fields are bounded well inside
both, and the arithmetic on them (``timing.next_due``) checks the result against ``LATEST``
before it builds a ``datetime``:

- ``every_seconds``: ``MIN_EVERY_SECONDS`` (1) to ``MAX_EVERY_SECONDS`` (3,650 days);
- ``at``, an interval's ``anchor`` and ``created_at``: from ``EARLIEST`` (1970-01-01T00:00:00Z)
  to before ``LATEST`` (9000-01-01T00:00:00Z), whatever offset they are written with;
- a cron expression (and its time zone) must have a next fire time inside that range;
- a retry's ``initial_delay_ms`` and ``max_delay_ms``: 0 to ``MAX_RETRY_DELAY_MS`` (one day),
  ``max_retries``: 0 to ``MAX_RETRIES`` (100).

A due time that would fall at or after ``LATEST`` is "none" (the schedule is done), never an
error. The tool, HTTP, ``spec.schedules[]`` and files read at start all check these through
``timing.check_timing`` (``model.parse_schedule`` for documents), so a record out of range is
refused before it is written, and one found on disk is set aside (``loading``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

__all__ = [
    "EARLIEST",
    "EVERY_RANGE",
    "LATEST",
    "MAX_EVERY_SECONDS",
    "MAX_RETRIES",
    "MAX_RETRY_DELAY_MS",
    "MIN_EVERY_SECONDS",
    "TIME_RANGE",
    "TimingProblem",
    "every_problem",
    "in_range",
    "retry_problem",
]

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
"""The earliest ``at``, ``anchor`` or ``created_at`` accepted."""
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
"""Every time accepted, and every due time computed, is before this (exclusive)."""
MIN_EVERY_SECONDS = 1
MAX_EVERY_SECONDS = 3650 * 86_400
"""315,360,000 s: about ten years, far inside what ``timedelta`` and ``LATEST`` allow."""
MAX_RETRIES = 100
MAX_RETRY_DELAY_MS = 86_400_000
"""One day: a retry's backoff (``payloads.backoff_seconds``) never waits longer."""

TIME_RANGE = "from 1970-01-01T00:00:00Z to before 9000-01-01T00:00:00Z"
EVERY_RANGE = f"{MIN_EVERY_SECONDS} to {MAX_EVERY_SECONDS:,} seconds (3,650 days)"


class TimingProblem(NamedTuple):
    """What is wrong with one timing field.

    Its name (``every_seconds``), why, the fix, and the range allowed when the problem is
    one of range.
    """

    field: str
    reason: str
    fix: str
    allowed: str | None = None


def in_range(value: datetime) -> bool:
    """Whether ``value`` (aware) is inside ``TIME_RANGE``."""
    return EARLIEST <= value < LATEST


def every_problem(seconds: object) -> TimingProblem | None:
    """What is wrong with ``every_seconds`` (not a whole number, or out of range), or None."""
    if type(seconds) is not int:
        return TimingProblem(
            "every_seconds", "must be a whole number of seconds", "e.g. every_seconds: 3600",
            EVERY_RANGE,
        )  # fmt: skip
    if not MIN_EVERY_SECONDS <= seconds <= MAX_EVERY_SECONDS:
        return TimingProblem(
            "every_seconds",
            "is out of range",
            "give an interval of at least one second and at most 3,650 days; for something "
            "rarer, use a cron expression or a one-shot 'at'",
            EVERY_RANGE,
        )
    return None


def retry_problem(values: dict[str, object]) -> TimingProblem | None:
    """What is wrong with a ``retry`` block's numbers (``max_retries``, the delays), or None."""
    for name, value in values.items():
        high = MAX_RETRIES if name == "max_retries" else MAX_RETRY_DELAY_MS
        if type(value) is not int or not 0 <= value <= high:
            return TimingProblem(
                name,
                "must be a whole number in range",
                "the delays are in milliseconds, at most one day",
                f"0 to {high:,}",
            )
    return None
