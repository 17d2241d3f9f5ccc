"""Run-log lines written in order, and off the event loop when the run log is a database.

The scheduler's loop decides in memory (a cursor moves, a due time is marked missed) and
records each decision as a run-log line. With files (one node) a line is an fsync'd append,
written where it is decided, as it always was. With PostgreSQL (several nodes) a line is a
round trip to a server that may be slow or away: written on the event loop it stalled every
session of the node for the pool's timeout, and its error ended the scheduler's loop. So
there, lines go to a thread, one after another in the order they were decided (a chain of
tasks, each waiting for the one before), and:

- ``write`` is awaited by a run (its ``running`` line must be in the log before the payload
  does anything, see ``service``): its failure is the run's failure;
- ``write_behind`` is not awaited (``missed``, ``registered``, a run found interrupted): its
  failure is logged with the schedule's id. Nothing is lost by it: the run log is the truth
  the next leader reads, and a decision whose line did not land is made again from it (the
  same due times are found missed again, the same interrupted run found again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from duragent.store.protocols import RunLogStorage

__all__ = ["RunLogWriter"]

log = logging.getLogger(__name__)

CANCELLED_WAIT_SECONDS = 5.0
"""How long a cancelled ``write`` waits for its line (a stop cancels the runs; the database
may be away, and the run log's next reader finds the run interrupted either way)."""


class RunLogWriter:
    """Appends run-log lines in order (see module docstring)."""

    def __init__(self, runs: RunLogStorage, *, off_loop: bool) -> None:
        """Lines go to ``runs``; through a thread, in order, when ``off_loop``."""
        self._runs = runs
        self._off_loop = off_loop
        self._tail: asyncio.Future[None] | None = None

    def write_behind(self, schedule_id: str, line: dict[str, object]) -> None:
        """Append ``line`` without waiting for it (inline with files or outside a loop)."""
        if not self._off_loop or not _in_a_loop():
            self._runs.append(schedule_id, line)
            return
        written = self._chain(schedule_id, line)
        written.add_done_callback(lambda done: _log_failure(done, schedule_id, line))

    async def write(self, schedule_id: str, line: dict[str, object]) -> None:
        """Append ``line`` after every line before it; raises what the append raised.

        Cancelled meanwhile, it still waits for its line to land (``CANCELLED_WAIT_SECONDS``
        at most) before it lets the cancellation through, so the line the caller writes next
        stays after it.
        """
        if not self._off_loop:
            self._runs.append(schedule_id, line)
            return
        written = self._chain(schedule_id, line)
        try:
            await asyncio.shield(written)
        except asyncio.CancelledError:  # at most a while: a database gone away never answers
            with contextlib.suppress(Exception):
                await asyncio.wait([written], timeout=CANCELLED_WAIT_SECONDS)
            raise

    async def flush(self, within_seconds: float) -> None:
        """Wait (at most ``within_seconds``) for the lines not yet written."""
        if self._tail is not None and not self._tail.done():
            await asyncio.wait([self._tail], timeout=within_seconds)

    def _chain(self, schedule_id: str, line: dict[str, object]) -> asyncio.Future[None]:
        previous = self._tail

        async def after_previous() -> None:
            if previous is not None:
                await asyncio.wait([previous])  # its outcome is its own caller's to see
            await asyncio.to_thread(self._runs.append, schedule_id, line)

        self._tail = written = asyncio.ensure_future(after_previous())
        return written


def _in_a_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _log_failure(done: asyncio.Future[None], schedule_id: str, line: dict[str, object]) -> None:
    if done.cancelled():
        return
    if (exc := done.exception()) is not None:
        log.error(
            "schedule %s: run-log line %s not written (%s); the next leader finds it again",
            schedule_id,
            line.get("status"),
            exc,
        )
