"""A turn streamed as OpenAI's ``chat.completion.chunk`` events, ending with ``data: [DONE]``.

The lifecycle (the turn's task, a client that leaves, a server that stops) is
``api.stream.stream_turn``'s, shared with duragent's own stream; this is only the wire:

- first chunk: ``delta: {"role": "assistant", "content": ""}``;
- each text delta of the model: a chunk with ``delta.content``; the first delta of a model
  call after a tool call starts with a blank line. The deltas join into exactly the content
  of the plain answer for the same turn (``text``: every model call's words, in order);
- tool calls and results are not sent (tools run on the server; a client that saw
  ``tool_calls`` would try to run them);
- a pending approval: the words of ``wire.approval_text`` as content, after a blank line;
  a request that ran no loop of its own: the reply of the turn that answered it;
- the last chunk: empty delta, ``finish_reason: "stop"`` and the ``duragent`` extension;
- with ``stream_options.include_usage``: one more chunk with ``choices: []`` and ``usage``
  (every other chunk carries ``usage: null``), as OpenAI does;
- a failed turn: ``data: {"error": {...}}`` (the SDK raises ``APIError``), then ``[DONE]``;
- a turn cancelled because the server stops: ``finish_reason: "length"`` is not right and
  no reason means "still going", so an error chunk says so, then ``[DONE]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sse_starlette import ServerSentEvent

from duragent.core.clock import now_seconds
from duragent.core.messages import ToolCall
from duragent.gateways.http.api.stream import SERVER_STOPPING, QueueSink, StreamWire
from duragent.gateways.http.openai.text import TurnText
from duragent.gateways.http.openai.wire import (
    completion_id,
    dumps,
    error_body,
    extension,
    finish_reason,
    usage_body,
)
from duragent.gateways.http.server.problem import failed_turn_status
from duragent.turns import Failed, TurnResult

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

    def __init__(self, chunks: _Chunks, text: TurnText) -> None:
        super().__init__()
        self._chunks = chunks
        self._text = text

    async def token(self, text: str) -> None:
        """A content delta (after a blank line when a new model call's words begin)."""
        self.partial.append(text)
        delta = self._text.add(text)
        if delta:
            self.queue.put_nowait(self._chunks.chunk({"content": delta}))

    async def tool_call(self, call: ToolCall) -> None:
        """Not sent (see the module docstring); the next words begin after a blank line.

        The partial reply a cut turn keeps starts afresh (it is the text after the call).
        """
        self.partial.clear()
        self._text.tool_call()

    async def tool_result(self, call_id: str, success: bool, content: str) -> None:
        """Not sent."""

    async def approval_required(self, call_id: str, command: str) -> None:
        """Sent at the end, as the reply's words (``ending``)."""


class ChunkWire(StreamWire):
    """``StreamWire`` for OpenAI's chunk stream (see the module docstring)."""

    def __init__(self, model: str, turn_id: str, *, include_usage: bool) -> None:
        self._chunks = _Chunks(model, turn_id, include_usage)
        self._text = TurnText()

    def sink(self) -> QueueSink:
        """A :class:`ChunkSink`."""
        return ChunkSink(self._chunks, self._text)

    def opening(
        self, turn_id: str, attachments: Sequence[dict[str, Any]] = ()
    ) -> list[ServerSentEvent]:
        """The role chunk (OpenAI's chunks have no place for the message's attachments)."""
        return [self._chunks.chunk({"role": "assistant", "content": ""})]

    def ending(self, result: TurnResult) -> list[ServerSentEvent]:
        """The last content (``TurnText.ending``), the finish chunk, usage, [DONE]."""
        if isinstance(result, Failed):
            return self.failure(result.content, failed_turn_status(result.code))
        last = self._text.ending(result)
        events = [self._chunks.chunk({"content": last})] if last else []
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
