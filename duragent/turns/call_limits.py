"""Tool calls per response and per turn: which calls of a response may run.

``max_tool_iterations`` counts model responses; a single response can hold thousands of calls
(a prompt-injected model asked for 2,000 ``bash`` calls and all of them ran). These limits count
calls; the loop runs only those ``within_limits`` returns.
"""

from __future__ import annotations

from typing import Protocol

from duragent.core.messages import Message, ToolCall
from duragent.llm import ChatResponse

__all__ = ["within_limits"]


class _Skipper(Protocol):
    async def skipped(self, call_ids: list[str], reason: str) -> None: ...


async def within_limits(
    recorder: _Skipper,
    turn: list[Message],
    response: ChatResponse,
    *,
    max_per_response: int,
    room: int,
) -> tuple[ToolCall, ...]:
    """The calls of ``response`` that may run (``room``: calls the turn may still make).

    The response goes into ``turn``. The rest are recorded as skipped at once, before any call
    runs, so every call has a recorded result whatever happens next (the history stays valid).
    The model is sent only the first skipped one, whose result counts the others: 2,000 calls
    and their 2,000 results would not fit the current turn into the context window, and the
    current turn cannot be cut.
    """
    calls = response.tool_calls
    allowed = min(len(calls), max_per_response, max(0, room))
    if allowed == len(calls):
        turn.append(response.to_message())
        return calls
    if allowed < max_per_response:
        reason = "limit: max_tool_calls_per_turn reached; this turn made that many calls already"
    else:
        reason = (
            f"limit: max_tool_calls_per_response is {max_per_response}; make fewer calls in "
            "one response"
        )
    skipped = calls[allowed:]
    await recorder.skipped([c.id for c in skipped], reason)
    turn.append(Message.assistant(response.content or None, calls[: allowed + 1]))
    more = f" ({len(skipped) - 1} more calls of this response were skipped too)"
    turn.append(Message.tool(skipped[0].id, f"Skipped: {reason}{more if len(skipped) > 1 else ''}"))
    return calls[:allowed]
