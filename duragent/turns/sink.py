"""Where a running turn reports progress (tokens, tool calls, results, approvals).

Front ends that stream (SSE, the CLI) implement ``TurnSink``; the others pass ``None``.
"""

from __future__ import annotations

from typing import Protocol

from duragent.core.messages import ToolCall

__all__ = ["TurnSink"]


class TurnSink(Protocol):
    """Receives a turn's progress as it happens."""

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
