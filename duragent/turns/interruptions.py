"""What became of a message whose turn was cut: read back from the session's events.

A message is sent again under its key (``platform_message_id``) when its first request was
cut: the node running its turn stopped, or lost the session to another node (a lease
take-over, ``store.ownership``) while a tool ran. Whoever went on with the session closed the
calls left open as interrupted (on loading it, or at its next turn) and either ran the
message's turn on from there (the same message sent again), or recorded a later message
whose turn answered instead. Either way the state counts the message as answered, and a
copy of it got a bare ``Duplicate`` — so the client whose request was cut was told
"duplicate" although its tool was interrupted. This module reads the events after the
message and says what happened, so each front end can answer with the recorded outcome
(``Interruption``) instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from duragent.core.events import Event
from duragent.core.payloads import (
    AssistantResponseData,
    EventType,
    ToolResultData,
    ToolsSkippedData,
    UserMessageData,
)
from duragent.session import SessionHandle
from duragent.session.state import INTERRUPTED_RESULT, UNFINISHED_RESULT
from duragent.turns.loop import cancelled_result
from duragent.turns.result import CallOutcome, Complete, Duplicate, Interruption, TurnResult

__all__ = ["INTERRUPTED_RESULTS", "interruption_of", "noting_interruption", "recorded_outcome"]

INTERRUPTED_RESULTS = (INTERRUPTED_RESULT, UNFINISHED_RESULT, cancelled_result(""))
"""How the results of calls a cut turn left open begin: closed when the session was loaded
again (``INTERRUPTED_RESULT``: a restart, or another node taking it over), by the next turn
(``UNFINISHED_RESULT``), or by the turn itself as it was cancelled (``cancelled_result``)."""

_ASSISTANT = (EventType.ASSISTANT_RESPONSE, EventType.ASSISTANT_MESSAGE)


def interruption_of(events: Sequence[Event], seq: int) -> Interruption | None:
    """The interruption of user message ``seq``'s turn in ``events`` (None: it was not cut).

    The turn is read from the message to the event that settled it: its final reply, a
    failure, an approval request, or a later message recorded after the cut (the talk went
    on without an answer to it). A call whose result says it was interrupted — or that has
    no result at all — was cut. A turn that asked for an approval is not reported here: it
    waits for a person, as an answered duplicate says.
    """
    names: dict[str, str] = {}  # call id → tool name, in call order
    outcomes: dict[str, str] = {}
    for event in events:
        if event.seq <= seq:
            continue
        data = event.data
        kind = event.type
        cut = "interrupted" in outcomes.values()
        if kind == EventType.USER_MESSAGE and cut and not UserMessageData.of(data).passive:
            break  # a later message's turn went on from the cut one: none answered it
        if kind in _ASSISTANT:
            response = AssistantResponseData.of(data)
            if not response.tool_calls:
                if not cut:
                    return None
                return _cut(seq, names, outcomes, event)
            for call in response.calls():
                names[call.id] = call.name
        elif kind == EventType.TOOL_RESULT:
            result = ToolResultData.of(data)
            outcomes[result.call_id] = _outcome(result)
        elif kind == EventType.TOOLS_SKIPPED:
            for call_id in ToolsSkippedData.of(data).call_ids:
                outcomes[call_id] = "skipped"
        elif kind == EventType.APPROVAL_REQUIRED:
            return None
        elif kind == EventType.ERROR:
            break
    for call_id in names:
        outcomes.setdefault(call_id, "interrupted")  # never recorded: cut as it ran
    if "interrupted" not in outcomes.values():
        return None
    return _cut(seq, names, outcomes, None)


async def recorded_outcome(session: SessionHandle, seq: int) -> Duplicate:
    """The result for a copy of message ``seq`` whose turn already ended (``Duplicate``).

    Carries the ``Interruption`` when that turn was cut, so the copy's sender learns it.
    """
    events = await session.events(after_seq=seq)
    return Duplicate(session_id=session.session_id, interruption=interruption_of(events, seq))


async def noting_interruption(session: SessionHandle, seq: int, result: TurnResult) -> TurnResult:
    """``result`` of a turn run for a copy of message ``seq``, with the cut it went on from.

    The copy of a message whose turn was cut (recorded, not answered) runs that turn on: its
    reply is the answer, and its sender learns which calls were interrupted on the way.
    """
    if not isinstance(result, Complete):
        return result
    found = interruption_of(await session.events(after_seq=seq), seq)
    return result if found is None else dataclasses.replace(result, interruption=found)


def _outcome(result: ToolResultData) -> str:
    if result.content.startswith(INTERRUPTED_RESULTS):
        return "interrupted"
    return "failed" if result.success is False else "ran"


def _cut(
    seq: int, names: dict[str, str], outcomes: dict[str, str], reply: Event | None
) -> Interruption:
    order = [*names, *(call_id for call_id in outcomes if call_id not in names)]
    calls = tuple(
        CallOutcome(call_id, names.get(call_id, ""), outcomes.get(call_id, "interrupted"))
        for call_id in order
    )
    if reply is None:
        return Interruption(message_seq=seq, calls=calls)
    response = AssistantResponseData.of(reply.data)
    return Interruption(
        message_seq=seq,
        calls=calls,
        reply=response.content,
        message_id=response.message_id,
        reply_seq=reply.seq,
    )
