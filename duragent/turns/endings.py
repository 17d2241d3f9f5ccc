"""How a turn that cannot finish normally ends: its open calls closed, its failure recorded.

Split from ``turn`` because every way a turn can end early (a cancelled stream, a model
error, a full disk, a bug) must leave the same durable trace, and that rule is easier to
check in one small place: each call the turn started gets a result saying why, written
before the turn is over (never appended later after other turns); a failure is recorded as
an ``error`` event; a storage error is raised to the front end, which reports its cause.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from duragent.context.budget import ContextOverflowError
from duragent.context.summaries import PinnedTooLargeError
from duragent.errors import LLMError, StorageError
from duragent.session import SessionHandle
from duragent.turns.loop import cancelled_result
from duragent.turns.result import Failed, why_cut_short

__all__ = [
    "PINS_OVER_BUDGET",
    "apology",
    "apology_for",
    "close_cut_short_turn",
    "failure_code",
    "record_failed_turn",
]

PINS_OVER_BUDGET = "pins_over_budget"
"""``Failed.code`` when the session's pins no longer fit (a person must unpin)."""

log = logging.getLogger(__name__)


async def close_cut_short_turn(session: SessionHandle, exc: BaseException) -> None:
    """A turn ends early: every call it started gets a result saying why, written.

    Shielded, so a second cancellation (shutdown after a disconnect) does not cut the write
    itself; if it fails anyway, the next turn or a restart closes the calls.
    """
    reason = why_cut_short(exc)
    try:
        await asyncio.shield(session.close_open_calls(cancelled_result(reason)))
    except Exception as error:  # the original error matters more; the actor retries writes
        log.error(
            "session %s: recording the end of a cut-short turn failed: %s",
            session.session_id,
            error,
        )


async def record_failed_turn(session: SessionHandle, exc: Exception) -> Failed:
    """Record why a turn failed and say it to the user (a storage error is raised instead)."""
    code = failure_code(exc)
    session_id = session.session_id
    log.error("session %s: turn failed: %s", session_id, exc)
    if isinstance(exc, StorageError):  # the client is told the cause (507/503), not "sorry"
        with contextlib.suppress(StorageError):  # for the operator, if the disk lets us
            await session.record_error(code, str(exc))
        raise exc
    await session.record_error(code, str(exc))
    return Failed(session_id=session_id, content=apology(exc), error=str(exc), code=code)


def failure_code(exc: Exception) -> str:
    """The ``error`` event's code for ``exc`` (``Failed.code``)."""
    if isinstance(exc, PinnedTooLargeError):
        return PINS_OVER_BUDGET
    if isinstance(exc, ContextOverflowError):
        return "context_overflow"
    return "llm_error" if isinstance(exc, LLMError) else "turn_failed"


def apology(exc: Exception) -> str:
    """What the user reads when a turn failed: the cause, one full stop, what to do next.

    SDK messages often end with their own full stop ("Connection error."), which must not
    become "Connection error.." here.
    """
    return apology_for(str(exc) or type(exc).__name__)


def apology_for(cause: str) -> str:
    """``apology`` for a failure known by its text (a recorded ``error`` event's message)."""
    cause = cause.rstrip().rstrip(".") or "an error"
    return f"Sorry, I could not answer: {cause}. Your message is saved; you can send it again."
