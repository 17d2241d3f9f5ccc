"""Where a running turn reports progress (its opening, tokens, tool calls, results, approvals).

Front ends that stream (SSE, the CLI) implement ``TurnSink``; the others pass ``None``. A
stream opens only once its message is recorded (``opened``): the same round trip to the
session that records it says which agent answers and what a client that leaves does, so a
streamed turn asks its session no more than a plain one does (issue 35).
"""

from __future__ import annotations

from typing import Protocol

from duragent.core.messages import ToolCall

__all__ = ["TurnSink"]


class TurnSink(Protocol):
    """Receives a turn's progress as it happens."""

    async def opened(self, agent: str, on_disconnect: str) -> None:
        """The turn's message is on disk: the stream may open (told before any progress).

        A stream opens once its message is recorded, and learns from that same round trip
        the session's ``agent`` and its disconnect policy (``pause`` or ``continue``), so no
        read of the session comes first. Both are empty when the request runs no loop of its
        own: its message was steered into the loop already running (which cancelling this
        request never cancels: its caller owns it), or it was a copy of a message already
        answered. A client that leaves such a request only stops waiting. A steered message
        the loop left unread gets its own turn afterwards, which tells ``opened`` again, with
        the session's values.
        """
        ...

    async def token(self, text: str) -> None:
        """A piece of reply text."""
        ...

    async def tool_call(self, call: ToolCall) -> None:
        """The model asked for a tool."""
        ...

    async def tool_result(self, call_id: str, success: bool, content: str) -> None:
        """A tool finished (content as the model will see it)."""
        ...

    async def approval_required(self, call_id: str, command: str) -> None:
        """A tool call waits for a person's approval; the turn stops here."""
        ...

    async def summary(self, round_: int, through_seq: int, messages: int) -> None:
        """A summary (round ``round_``) replaced ``messages`` old messages.

        They came from events up to ``through_seq``; the history API shows the summary text.
        """
        ...
