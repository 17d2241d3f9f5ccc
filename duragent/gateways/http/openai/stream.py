"""A turn streamed as OpenAI's ``chat.completion.chunk`` events, ending with ``data: [DONE]``.

The lifecycle (the turn's task, a client that leaves, a server that stops) is
``api.stream.stream_turn``'s, shared with duragent's own stream; this is only the wire:

- first chunk: ``delta: {"role": "assistant", "content": ""}``;
- each text delta of the model: a chunk with ``delta.content``;
- tool calls and results are not sent (tools run on the server; a client that saw
  ``tool_calls`` would try to run them). Text the model wrote *before* a tool call has been
  streamed already, so the streamed text can be longer than the stored reply, which keeps
  only the last answer (as the non-streaming response does);
- a pending approval: the words of ``wire.approval_text`` as content;
- the last chunk: empty delta, ``finish_reason: "stop"`` and the ``duragent`` extension;
- with ``stream_options.include_usage``: one more chunk with ``choices: []`` and ``usage``
  (every other chunk carries ``usage: null``), as OpenAI does;
- a failed turn: ``data: {"error": {...}}`` (the SDK raises ``APIError``), then ``[DONE]``;
- a turn cancelled because the server stops: ``finish_reason: "length"`` is not right and
  no reason means "still going", so an error chunk says so, then ``[DONE]``.
"""

from __future__ import annotations

from typing import Any

from sse_starlette import ServerSentEvent

from duragent.core.clock import now_seconds
from duragent.core.messages import ToolCall
from duragent.gateways.http.api.stream import SERVER_STOPPING, QueueSink, StreamWire
from duragent.gateways.http.openai.wire import (
    approval_text,
    completion_id,
    dumps,
    error_body,
    extension,
    finish_reason,
    usage_body,
)
from duragent.gateways.http.server.problem import failed_turn_status
from duragent.turns import AwaitingApproval, Complete, Duplicate, Failed, TurnResult

__all__ = ["ChunkSink", "ChunkWire"]

_DONE = ServerSentEvent(data="[DONE]")


class _Chunks:
    """Makes the chunk objects of one completion (same id, created and model in each)."""

    def __init__(self, model: str, turn_id: str, include_usage: bool) -> None:
        self.id = completion_id(turn_id)
        self.created = int(now_seconds())
        self.model = model
        self.turn_id = turn_id
        self.include_usage = include_usage

    def chunk(
        self, delta: dict[str, Any], finish: str | None = None, **extra: Any
    ) -> ServerSentEvent:
        body: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if self.include_usage:
            body["usage"] = None
        body.update(extra)
        return ServerSentEvent(data=dumps(body))

    def usage(self, result: TurnResult) -> ServerSentEvent:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "choices": [],
            "usage": usage_body(result),
        }
        return ServerSentEvent(data=dumps(body))


class ChunkSink(QueueSink):
    """A TurnSink writing text deltas as chunks; tool progress stays on the server."""

    def __init__(self, chunks: _Chunks) -> None:
        super().__init__()
        self._chunks = chunks

    async def token(self, text: str) -> None:
        """A content delta."""
        self.partial.append(text)
        self.queue.put_nowait(self._chunks.chunk({"content": text}))

    async def tool_call(self, call: ToolCall) -> None:
        """Not sent (see the module docstring); the stored reply starts afresh."""
        self.partial.clear()

    async def tool_result(self, call_id: str, success: bool, content: str) -> None:
        """Not sent."""

    async def approval_required(self, call_id: str, command: str) -> None:
        """Sent at the end, as the reply's words (``ending``)."""


class ChunkWire(StreamWire):
    """``StreamWire`` for OpenAI's chunk stream (see the module docstring)."""

    def __init__(self, model: str, turn_id: str, *, include_usage: bool) -> None:
        self._chunks = _Chunks(model, turn_id, include_usage)

    def sink(self) -> QueueSink:
        """A :class:`ChunkSink`."""
        return ChunkSink(self._chunks)

    def opening(self, turn_id: str) -> list[ServerSentEvent]:
        """The role chunk."""
        return [self._chunks.chunk({"role": "assistant", "content": ""})]

    def ending(self, result: TurnResult) -> list[ServerSentEvent]:
        """The last content (a pending approval's words), the finish chunk, usage, [DONE]."""
        match result:
            case Failed(content=content, code=code):
                return self.failure(content, failed_turn_status(code))
            case AwaitingApproval():
                events = [self._chunks.chunk({"content": approval_text(result)})]
            case Complete() | Duplicate():
                events = []
        ext = extension(result, self._chunks.turn_id)
        events.append(self._chunks.chunk({}, finish_reason(result), duragent=ext))
        if self._chunks.include_usage:
            events.append(self._chunks.usage(result))
        events.append(_DONE)
        return events

    def failure(self, message: str, status: int = 502) -> list[ServerSentEvent]:
        """An error chunk (the SDK raises it), then [DONE]."""
        body = error_body(status, message, code="turn_failed")
        body["error"]["turn_id"] = self._chunks.turn_id
        return [ServerSentEvent(data=dumps(body)), _DONE]

    def taken_over(self, message: str, fields: dict[str, Any]) -> list[ServerSentEvent]:
        """An error chunk (code ``turn_interrupted``): another node took the session over."""
        body = error_body(409, message, code=str(fields.get("code", "turn_interrupted")))
        body["error"]["turn_id"] = self._chunks.turn_id
        return [ServerSentEvent(data=dumps(body)), _DONE]

    def cancelled(self) -> list[ServerSentEvent]:
        """An error chunk saying the server stopped the turn, then [DONE]."""
        message = (
            f"{SERVER_STOPPING}: the turn was cancelled; its partial reply is kept in the "
            "session, and the next message continues from it"
        )
        return [
            ServerSentEvent(data=dumps(error_body(503, message, code="server_stopping"))),
            _DONE,
        ]
