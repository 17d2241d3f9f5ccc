"""The OpenAI chat-completions wire format, as ``POST /v1/chat/completions`` answers it.

Mirrors what api.openai.com sends, so the real ``openai`` SDK parses it unchanged:

- a plain answer is one ``chat.completion`` object with ``choices[0].message`` and ``usage``;
- a stream is ``data: <chat.completion.chunk>`` events: a first chunk carrying the role, one
  chunk per text piece, tool calls as per-``index`` fragments (the first fragment of a call
  carries ``id``, ``type`` and ``function.name``; later ones only argument text), a chunk with
  ``finish_reason``, then, when ``stream_options.include_usage`` was requested, a chunk with
  empty ``choices`` and the usage, and finally ``data: [DONE]``;
- an error is ``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from duragent.testing.script import Fault, Frame, Repeat, Reply, filler_frames

__all__ = ["completion_body", "error_body", "error_event", "stream_events"]

_CREATED = 1_700_000_000  # fixed, so recorded answers are reproducible

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_exceeded",
}

_MESSAGES = {
    400: "Invalid request.",
    401: "Incorrect API key provided: sk-fake. You can find your API key at "
    "https://platform.openai.com/account/api-keys.",
    403: "You are not allowed to access this model.",
    404: "The model does not exist or you do not have access to it.",
    429: "Rate limit reached for requests. Please try again later.",
}

_SERVER_MESSAGE = "The server had an error while processing your request. Sorry about that!"

_CONTEXT_MESSAGE = (
    "This model's maximum context length is 128000 tokens. However, your messages resulted "
    "in 130000 tokens. Please reduce the length of the messages."
)


def _call_id(request_index: int, position: int, explicit: str | None) -> str:
    return explicit or f"call_fake_{request_index}_{position}"


def _usage(reply: Reply) -> dict[str, int]:
    completion = reply.output_tokens()
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": reply.prompt_tokens + completion,
    }


def completion_body(reply: Reply, *, request_index: int, model: str) -> dict[str, Any]:
    """The non-streaming ``chat.completion`` object."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text if (reply.text or not reply.tool_calls) else None,
        "refusal": None,
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(request_index, i, call.id),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_text},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-fake-{request_index}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": reply.model or model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.openai_finish_reason(),
            }
        ],
        "usage": _usage(reply),
    }


def _frame(data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return f"data: {text}\n\n".encode()


_PIECE = "\ue000piece\ue000"
_PIECE_JSON = json.dumps(_PIECE)


def _content_frames(chunk: Callable[[dict[str, Any]], bytes]) -> Callable[[str], bytes]:
    """``piece -> chunk({"content": piece})``: the same bytes, one ``json.dumps`` of the piece.

    A reply streams one chunk per word and a year's benchmark sends millions: encoding the
    whole chunk each time was a tenth of the benchmark's CPU.
    """
    before, sep, after = chunk({"content": _PIECE}).partition(_PIECE_JSON.encode())
    if not sep or _PIECE_JSON.encode() in after:
        return lambda piece: chunk({"content": piece})

    def content(piece: str) -> bytes:
        return before + json.dumps(piece).encode() + after

    return content


def stream_events(
    reply: Reply, *, request_index: int, model: str, include_usage: bool
) -> list[Frame]:
    """Every SSE event of a streamed answer, ``[DONE]`` included."""
    base: dict[str, Any] = {
        "id": f"chatcmpl-fake-{request_index}",
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": reply.model or model,
    }
    if include_usage:
        base["usage"] = None

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _frame({**base, "choices": [choice]})

    content = _content_frames(chunk)
    events: list[Frame] = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events.extend(content(piece) for piece in reply.text_chunks())
    events.extend(filler_frames(content, reply.filler_bytes))
    if reply.endless:
        events.append(Repeat(chunk({"content": "x" * 1024}), None))
    for i, call in enumerate(reply.tool_calls):

        def fragment(piece: str, i: int = i) -> bytes:
            return chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})

        fragments = reply.argument_fragments(call)
        head = {
            "index": i,
            "id": _call_id(request_index, i, call.id),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [head]}))
        if call.filler_bytes:
            text = call.arguments_text
            events.append(fragment(text[:-2]))
            events.extend(filler_frames(fragment, call.filler_bytes))
            events.append(fragment(text[-2:]))
            continue
        events.extend(fragment(frag) for frag in fragments if frag)
    events.append(chunk({}, reply.openai_finish_reason()))
    if include_usage:
        events.append(_frame({**base, "choices": [], "usage": _usage(reply)}))
    events.append(_frame("[DONE]"))
    return events


def error_body(fault: Fault) -> dict[str, Any]:
    """``{"error": {...}}`` as OpenAI sends it for ``fault.status``."""
    overflow = fault.code == "context_length_exceeded"
    if fault.message is not None:
        message = fault.message
    elif overflow:
        message = _CONTEXT_MESSAGE
    else:
        message = _MESSAGES.get(
            fault.status, "The server had an error while processing your request."
        )
    default_type = _ERROR_TYPES.get(fault.status, "server_error")
    code = fault.code or ("invalid_api_key" if fault.status == 401 else None)
    return {
        "error": {
            "message": message,
            "type": fault.error_type or default_type,
            "param": "messages" if overflow else None,
            "code": code,
        }
    }


def error_event(fault: Fault) -> bytes:
    """An error reported inside a stream: ``data: {"error": {...}}``."""
    return _frame(error_body(fault))
