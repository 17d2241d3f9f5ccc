"""In a group, someone else's turn waits for a pending approval's requester, for a while.

A turn cancels the approval it finds pending: the call is skipped and recorded as denied
(``driving.cancel_approval``, the reference's rule). In a direct message that is right: the
one person writing again means "never mind". In a group it let anyone deny anyone's request
by writing, and in a busy group nobody's approval lived long enough to be pressed, so the
requester's message was never answered (found by ``bench/strangers``, issue 40). There the
next turn of someone else waits for the requester's decision, at most the group queue's
``approval_wait_seconds`` (default 120; 0 keeps the old rule), so a requester who never
decides cannot hold the group up. The requester's own next message, and an approval nobody
asked for (a scheduled task's, the owners' alone), go on at once, as before.

Wall time (monotonic), as ``turn_timeout``: it bounds how long people wait. The session is
asked only when an approval may wait (``Line.paused``, or the context kept for an idle
session's message): a group's turn costs no more round trips than a DM's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

from duragent.agents.roles import DM_CHAT_TYPES

if TYPE_CHECKING:
    from duragent.turns.lines import Line, Lines
    from duragent.turns.ordering import PendingTurn
    from duragent.turns.sessions import SessionQueries

__all__ = ["wait_for_requester"]

log = logging.getLogger(__name__)


async def wait_for_requester(
    sessions: SessionQueries, lines: Lines, session_id: str, line: Line, entry: PendingTurn
) -> None:
    """Return when ``entry``'s turn (in ``session_id``'s ``line``) may start (module docstring)."""
    hold = line.queue.approval_wait_seconds
    if hold <= 0 or entry.chat.kind is None or entry.chat.kind in DM_CHAT_TYPES:
        return
    kept = lines.kept_context(session_id, entry.seq)  # an idle session's message: known
    if kept is not None and kept.pending_approval is None:
        return
    if kept is None and line.paused is False:  # the last turn here did not pause
        return
    deadline = time.monotonic() + hold
    while True:
        pending = (await sessions.info(session_id)).pending_approval
        line.paused = pending is not None
        if pending is None or pending.requester_id in (None, entry.sender_id):
            return
        left = deadline - time.monotonic()
        if left <= 0:
            log.info(
                "session %s: %s's approval had no decision in %d s: seq %d goes on",
                session_id,
                pending.requester_id,
                hold,
                entry.first,
            )
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(lines.approval_change(), left)
