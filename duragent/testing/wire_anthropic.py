"""The Anthropic Messages wire format, as ``POST /v1/messages`` answers it.

Mirrors what api.anthropic.com sends, so the real ``anthropic`` SDK parses it unchanged:

- a plain answer is one ``message`` object whose ``content`` holds ``text`` and ``tool_use``
  blocks, with ``stop_reason`` and ``usage.input_tokens`` / ``usage.output_tokens``;
- a stream is named SSE events (``event: <type>`` then ``data: {...}``): ``message_start``,
  then per block ``content_block_start``, its ``content_block_delta`` events (``text_delta``
  or ``input_json_delta`` fragments) and ``content_block_stop``, a ``ping`` after the first
  block starts, then ``message_delta`` (stop reason, output tokens) and ``message_stop``;
- an error is ``{"type": "error", "error": {"type", "message"}}``.
"""

from __future__ import annotations

import json
from typing import Any

from duragent.testing.script import Fault, Frame, Repeat, Reply, filler_frames

__all__ = ["error_body", "error_event", "message_body", "stream_events"]

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}

_MESSAGES = {
    400: "invalid request",
    401: "invalid x-api-key",
    403: "Your API key does not have permission to use the specified resource.",
    404: "model: not found",
    413: "Request exceeds the maximum allowed number of bytes.",
    429: "Number of request tokens has exceeded your per-minute rate limit.",
    529: "Overloaded",
}

_CONTEXT_MESSAGE = "prompt is too long: 210000 tokens > 200000 maximum"


def _stop_reason(reply: Reply) -> str:
    reason = reply.openai_finish_reason()
    return _STOP_REASONS.get(reason, reason)


def _tool_id(request_index: int, position: int, explicit: str | None) -> str:
    return explicit or f"toolu_fake_{request_index}_{position}"


def message_body(reply: Reply, *, request_index: int, model: str) -> dict[str, Any]:
    """The non-streaming ``message`` object."""
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    content.extend(
        {
            "type": "tool_use",
            "id": _tool_id(request_index, i, call.id),
            "name": call.name,
            "input": call.arguments_object,
        }
        for i, call in enumerate(reply.tool_calls)
    )
    return {
        "id": f"msg_fake_{request_index}",
        "type": "message",
        "role": "assistant",
        "model": reply.model or model,
        "content": content,
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.output_tokens()},
    }


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def stream_events(reply: Reply, *, request_index: int, model: str) -> list[Frame]:
    """Every SSE event of a streamed answer, ``message_stop`` included."""
    start: dict[str, Any] = {
        "id": f"msg_fake_{request_index}",
        "type": "message",
        "role": "assistant",
        "model": reply.model or model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": 1},
    }
    events: list[Frame] = [_event("message_start", {"message": start})]
    index = 0
    pieces = reply.text_chunks()
    if pieces or reply.filler_bytes or reply.endless:
        text_block: dict[str, Any] = {"type": "text", "text": ""}
        start_event = {"index": index, "content_block": text_block}
        events.append(_event("content_block_start", start_event))
        events.append(_event("ping", {}))
        events.extend(
            _event(
                "content_block_delta",
                {"index": index, "delta": {"type": "text_delta", "text": piece}},
            )
            for piece in pieces
        )

        def text(piece: str, index: int = index) -> bytes:
            delta = {"type": "text_delta", "text": piece}
            return _event("content_block_delta", {"index": index, "delta": delta})

        events.extend(filler_frames(text, reply.filler_bytes))
        if reply.endless:
            events.append(Repeat(text("x" * 1024), None))
        events.append(_event("content_block_stop", {"index": index}))
        index += 1
    for i, call in enumerate(reply.tool_calls):
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": _tool_id(request_index, i, call.id),
            "name": call.name,
            "input": {},
        }
        events.append(_event("content_block_start", {"index": index, "content_block": block}))

        def fragment(piece: str, index: int = index) -> bytes:
            delta = {"type": "input_json_delta", "partial_json": piece}
            return _event("content_block_delta", {"index": index, "delta": delta})

        if call.filler_bytes:
            args = call.arguments_text
            events.append(fragment(args[:-2]))
            events.extend(filler_frames(fragment, call.filler_bytes))
            events.append(fragment(args[-2:]))
        else:
            events.extend(fragment(frag) for frag in reply.argument_fragments(call))
        events.append(_event("content_block_stop", {"index": index}))
        index += 1
    delta = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
    usage = {"output_tokens": reply.output_tokens()}
    events.append(_event("message_delta", {"delta": delta, "usage": usage}))
    events.append(_event("message_stop", {}))
    return events


def error_body(fault: Fault) -> dict[str, Any]:
    """``{"type": "error", "error": {...}}`` as Anthropic sends it for ``fault.status``."""
    if fault.message is not None:
        message = fault.message
    elif fault.code == "context_length_exceeded":
        message = _CONTEXT_MESSAGE
    else:
        message = _MESSAGES.get(fault.status, "Internal server error")
    kind = fault.error_type or _ERROR_TYPES.get(fault.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def error_event(fault: Fault) -> bytes:
    """An error reported inside a stream: ``event: error`` with the error body."""
    return f"event: error\ndata: {json.dumps(error_body(fault))}\n\n".encode()
