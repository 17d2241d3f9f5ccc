"""Steering: a message that arrives while its session's loop runs joins that loop.

The one implementation for every front end (issue 35). The message is recorded at once and
handed to the running loop through the line's inbox (``Inbox.put``), which the loop reads at
its next boundary; when the loop ends it stamps every ticket with how it ended, and
``Steered.needs_own_turn`` says whether the message still needs a turn of its own. Two
callers wait for that differently, by what they are:

- an HTTP request (``TurnRunner.run``, ``join_running`` here) waits for the loop and answers
  with its result (``steered``), or runs the message's own turn when the loop left it; a
  stream opens once the message is recorded (``TurnSink.opened``, with no disconnect policy:
  cancelling the request never cancels the loop, so a client that leaves only stops waiting);
- a chat queue (``turns.ordering``, ``batch`` mode) returns as soon as the message is on disk
  and, once the turn it was steered into ended, gives what that turn left one more turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from duragent.errors import StorageError
from duragent.session import SessionHandle
from duragent.turns.inbox import Ending
from duragent.turns.interruptions import recorded_outcome
from duragent.turns.lines import Line
from duragent.turns.recorded import Incoming
from duragent.turns.result import AwaitingApproval, TurnResult, copy_result
from duragent.turns.sink import TurnSink

__all__ = ["ending_of", "join_running"]


def ending_of(result: TurnResult) -> Ending:
    """How a loop that returned ``result`` ended, for the tickets of what was steered in."""
    return Ending.PAUSED if isinstance(result, AwaitingApproval) else Ending.ANSWERED


async def join_running(
    session: SessionHandle,
    line: Line,
    running: asyncio.Future[TurnResult],
    inbound: Incoming,
    sink: TurnSink | None,
    own_turn: Callable[[int], Awaitable[TurnResult]],
) -> TurnResult:
    """A loop runs: record ``inbound``, hand it to that loop, answer with the loop's result.

    If the loop ends without having settled the message (``Steered.needs_own_turn``: it ended
    while the message was being recorded, stopped at ``max_tool_iterations``…), the message
    gets a turn of its own (``own_turn(seq)``): a reply written without it does not answer
    it. A redelivered copy of a message already steered shares the turn its first copy has.

    ``sink`` is told ``opened`` once the message is on disk, with no agent and no disconnect
    policy: recorded without the turn's context, it learnt neither, and this request runs no
    loop of its own (the running loop's caller owns it, and the wait on it is shielded), so a
    client that leaves only stops waiting. Its own turn, if it gets one, tells ``opened``
    again, with the session's values.
    """
    recorded = await inbound.record(session)
    if sink is not None:
        await sink.opened("", "")
    if recorded.duplicate and recorded.answered:
        return await recorded_outcome(session, recorded.seq)
    ticket = None
    if not recorded.duplicate:
        running = line.running or running  # it may have ended while this was recorded
        ticket = line.inbox.put(inbound.content, recorded.seq) if not running.done() else None
        if ticket is None:
            return await own_turn(recorded.seq)
    try:
        result = await asyncio.shield(running)  # its outcome is its caller's too; never cancel
    except StorageError as exc:  # this caller's message is on disk too
        raise exc.after_recording(recorded.seq) from exc
    if ticket is not None and ticket.needs_own_turn:
        return await own_turn(recorded.seq)
    return copy_result(result, steered=True)
