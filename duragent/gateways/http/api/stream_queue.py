"""The queue a streamed turn's events go through, and the streams a stopping server tells.

``QueueSink`` is the ``TurnSink`` of both streams (``api.stream``'s named events, and
``openai.stream``'s chunks, which subclass it): the turn's task puts events on its queue and
the response writes them. It also keeps what the stream learnt when it opened (the
session's agent and disconnect policy, from the round trip that recorded the message) and
what a cut turn reports (its partial reply, the calls it saw). ``OpenStreams`` puts the
server-stopping marker on every open stream's queue. Kept apart from ``stream``, which owns
the lifecycle of one stream (its task, a client that leaves, a server that stops).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sse_starlette import ServerSentEvent

from duragent.core.messages import ToolCall
from duragent.turns import CallOutcome

__all__ = ["STOPPING", "OpenStreams", "QueueSink", "Stopping"]


class Stopping:
    """The marker a stopping server puts in each open stream's queue."""


STOPPING = Stopping()


class QueueSink:
    """A TurnSink that turns progress into SSE events on a queue."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[ServerSentEvent | Stopping | None] = asyncio.Queue()
        self.partial: list[str] = []
        self.calls: dict[str, CallOutcome] = {}
        """The turn's calls as this node saw them: ``ran``/``failed`` once their result came,
        ``interrupted`` until then (what a stream cut by a take-over reports)."""
        self.agent = ""
        """The session's agent, once ``opened`` said it (empty: not known)."""
        self.on_disconnect = ""
        """What a client that leaves does: ``pause``, ``continue``, or (empty) only stop
        waiting, when the request runs no loop of its own (``TurnSink.opened``)."""
        self.is_open = asyncio.Event()
        """Set once the turn's message is recorded: the response may open."""

    def _put(self, event: str, data: dict[str, Any]) -> None:
        self.queue.put_nowait(ServerSentEvent(data=json.dumps(data), event=event))

    async def opened(self, agent: str, on_disconnect: str) -> None:
        """The message is recorded: keep the session's agent and policy, let the stream open.

        Told again when a steered message gets its own turn: the latest policy holds.
        """
        self.agent = agent or self.agent
        self.on_disconnect = on_disconnect
        self.is_open.set()

    async def token(self, text: str) -> None:
        """Forward a text delta."""
        self.partial.append(text)
        self._put("token", {"content": text})

    async def tool_call(self, call: ToolCall) -> None:
        """Forward a tool call."""
        self.partial.clear()  # text before a tool call is not the final reply
        self.calls[call.id] = CallOutcome(call.id, call.name, "interrupted")
        self._put("tool_call", {"call_id": call.id, "name": call.name, "arguments": call.arguments})

    async def tool_result(self, call_id: str, success: bool, content: str) -> None:
        """Forward a tool result."""
        if (seen := self.calls.get(call_id)) is not None:
            self.calls[call_id] = CallOutcome(call_id, seen.name, "ran" if success else "failed")
        self._put("tool_result", {"call_id": call_id, "success": success, "content": content})

    async def approval_required(self, call_id: str, command: str) -> None:
        """Forward an approval request."""
        self._put("approval_required", {"call_id": call_id, "command": command})

    async def summary(self, round_: int, through_seq: int, messages: int) -> None:
        """Forward the marker of a summary written during this turn."""
        self._put("summary", {"round": round_, "through_seq": through_seq, "messages": messages})


class OpenStreams:
    """The streams being written, told when the server stops (no cost per event)."""

    def __init__(self) -> None:
        self._sinks: set[QueueSink] = set()
        self.stopping = False

    def add(self, sink: QueueSink) -> None:
        """Track ``sink`` (told at once if the server is already stopping)."""
        self._sinks.add(sink)
        if self.stopping:
            sink.queue.put_nowait(STOPPING)

    def discard(self, sink: QueueSink) -> None:
        """Stop tracking ``sink``."""
        self._sinks.discard(sink)

    def server_stopping(self) -> None:
        """Tell every open stream that the server is stopping."""
        self.stopping = True
        for sink in self._sinks:
            sink.queue.put_nowait(STOPPING)
