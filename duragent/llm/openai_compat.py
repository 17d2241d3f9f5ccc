"""OpenAI-compatible chat completions: OpenAI, OpenRouter, Ollama and any ``base_url``.

Built on the official ``openai`` async SDK (its HTTP client, SSE parsing and types); this module
only translates messages and tools, assembles streamed tool calls, and maps the SDK's errors to
``duragent.errors``. SDK retries are off: ``ResilientProvider`` owns retries so that backoff,
jitter and Retry-After behave the same for every provider.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from duragent.core.messages import Message, Role, ToolCall, Usage
from duragent.errors import (
    LLMConnectionError,
    LLMError,
    LLMResponseError,
)
from duragent.llm._http_errors import (
    connection_failure,
    error_for_status,
    status_for_error_type,
    timeout_or_connection,
    transport_failure,
)
from duragent.llm._json_fields import integer, items, obj, text
from duragent.llm._sse import LeanStream
from duragent.llm._wire_body import FragmentCache, dumps, json_array, json_object
from duragent.llm.limits import ReplyGuard, checked_calls, repair_text
from duragent.llm.types import (
    ChatRequest,
    ChatResponse,
    ResponseDone,
    StreamEvent,
    StreamProgress,
    TextDelta,
)

__all__ = ["OpenAICompatibleProvider", "to_openai_messages"]

_PROGRESS = StreamProgress()
_MAX_NAME = 256
"""A tool name or call id longer than this is not taken (a name is looked up, never run)."""


def _openai_message(m: Message) -> dict[str, Any]:
    if m.role is Role.TOOL:
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text}
    if m.role is Role.ASSISTANT and m.tool_calls:
        return {
            "role": "assistant",
            "content": m.content or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments or "{}"},
                }
                for c in m.tool_calls
            ],
        }
    return {"role": m.role.value, "content": m.text}


def to_openai_messages(messages: list[Message] | tuple[Message, ...]) -> list[dict[str, Any]]:
    """Messages in the chat-completions wire format."""
    return [_openai_message(m) for m in messages]


_FRAGMENTS: FragmentCache[bytes] = FragmentCache(lambda m: dumps(_openai_message(m)))
"""Each message's serialised wire form, kept while the message lives (see ``_wire_body``)."""


def _map_error(exc: Exception, provider: str) -> LLMError:
    if isinstance(exc, openai.APITimeoutError):
        return timeout_or_connection(exc, provider)
    if isinstance(exc, openai.APIConnectionError):
        return connection_failure(exc, provider)
    if isinstance(exc, openai.APIResponseValidationError):
        return LLMResponseError(f"{provider}: unreadable response: {exc}", provider=provider)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        headers = dict(exc.response.headers) if exc.response is not None else {}
        body = exc.body if isinstance(exc.body, dict) else {}
        return error_for_status(
            status,
            f"{provider} answered {status}: {exc.message}",
            provider=provider,
            headers=headers,
            details=(str(body.get("code") or ""),),
        )
    if isinstance(exc, openai.APIError) and isinstance(exc.body, dict):
        # ``data: {"error": {...}}`` inside a stream that had already answered 200: classify
        # it by its type/code as the same failure would have been as a plain answer.
        code = str(exc.body.get("code") or "")
        status = status_for_error_type(code, str(exc.body.get("type") or ""))
        return error_for_status(
            status,
            f"{provider} stream error: {exc.message}",
            provider=provider,
            details=(code,),
            http_status=0,
        )
    transport = transport_failure(exc, provider)
    if transport is not None:
        return transport
    return LLMResponseError(f"{provider}: unreadable response: {exc}", provider=provider)


def _usage_of(raw: dict[str, Any]) -> Usage:
    """Usage from a streamed chunk's plain JSON."""
    return Usage(
        prompt_tokens=integer(raw, "prompt_tokens"),
        completion_tokens=integer(raw, "completion_tokens"),
    )


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    return Usage(
        prompt_tokens=int(getattr(raw, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(raw, "completion_tokens", 0) or 0),
    )


class OpenAICompatibleProvider:
    """A chat-completions endpoint reached through ``openai.AsyncOpenAI``."""

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str,
        api_key: str,
        timeout_seconds: float = 300,
        default_headers: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_seconds,
            max_retries=0,
            default_headers=default_headers,
            http_client=openai.DefaultAioHttpClient(timeout=timeout_seconds),
        )

    async def _body(self, request: ChatRequest, *, stream: bool) -> bytes:
        """The request body as the SDK's ``create()`` would send it, byte for byte.

        Same keys in the same order as the SDK's transform leaves them; the messages are
        joined from cached per-message fragments instead of being transformed on every call.
        """
        fragments = await _FRAGMENTS.fragments(request.messages)
        fields: list[tuple[str, bytes | list[bytes]]] = [("model", dumps(self.model))]
        if stream:
            fields.append(("stream", b"true"))
        fields.append(("messages", json_array(fragments)))
        if request.max_output_tokens is not None:
            fields.append(("max_tokens", dumps(request.max_output_tokens)))
        if stream:
            fields.append(("stream_options", b'{"include_usage":true}'))
        if request.temperature is not None:
            fields.append(("temperature", dumps(request.temperature)))
        if request.tools:
            fields.append(("tools", dumps([t.to_openai() for t in request.tools])))
        return json_object(fields)

    async def _post(self, request: ChatRequest, *, stream: bool) -> Any:
        """``POST /chat/completions`` through the SDK's client with a pre-built body."""
        return await self._client.post(
            "/chat/completions",
            content=await self._body(request, stream=stream),
            cast_to=ChatCompletion,
            options={"security": {"bearer_auth": True}},
            stream=stream,
            # plain JSON per chunk: the SDK's typed chunk models cost more than the rest of
            # the call (see ``_json_fields``)
            stream_cls=LeanStream,
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """One non-streaming chat completion."""
        try:
            raw = await self._post(request, stream=False)
        except LLMError:
            raise
        except Exception as exc:
            raise _map_error(exc, self.name) from exc
        try:
            choice = raw.choices[0]
            msg = choice.message
            calls = tuple(
                ToolCall(
                    id=c.id,
                    name=c.function.name,
                    arguments=c.function.arguments or "{}",
                )
                for c in (msg.tool_calls or [])
                if getattr(c, "function", None) is not None
            )
            return ChatResponse(
                content=repair_text(msg.content or ""),
                tool_calls=checked_calls(calls, request.limits),
                usage=_usage(raw.usage),
                finish_reason=choice.finish_reason,
                model=raw.model,
            )
        except (AttributeError, IndexError, TypeError) as exc:
            raise LLMResponseError(
                f"{self.name}: response has no usable choice: {exc}", provider=self.name
            ) from exc

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream text deltas; tool-call fragments are assembled into the final response."""
        guard = ReplyGuard(request.limits)
        calls: dict[int, dict[str, str]] = {}
        usage: Usage | None = None
        finish: str | None = None
        model: str | None = None
        received = 0
        try:
            chunks = await self._post(request, stream=True)
            async for data in chunks:
                received += 1
                chunk = obj(data)
                model = text(chunk, "model") or model
                if chunk.get("usage") is not None:
                    usage = _usage_of(obj(chunk["usage"], "usage"))
                shown = False
                for raw_choice in items(chunk, "choices"):
                    choice = obj(raw_choice, "choice")
                    finish = text(choice, "finish_reason") or finish
                    delta = obj(choice.get("delta"), "delta")
                    content = text(delta, "content")
                    if content:
                        piece = guard.text(content)
                        if piece:
                            shown = True
                            yield TextDelta(piece)
                    for raw_frag in items(delta, "tool_calls"):
                        frag = obj(raw_frag, "tool_call")
                        index = integer(frag, "index")
                        slot = calls.get(index)
                        if slot is None:
                            slot = calls[index] = {"id": "", "name": ""}
                            guard.new_call()
                        call_id = text(frag, "id")
                        if call_id and len(call_id) <= _MAX_NAME:
                            slot["id"] = call_id
                        if frag.get("function") is not None:
                            function = obj(frag["function"], "function")
                            name = text(function, "name") or ""
                            # OpenAI sends the name once; some compatible servers repeat it
                            # in every fragment, which must not double it.
                            if name != slot["name"] and len(slot["name"]) < _MAX_NAME:
                                slot["name"] += name
                            guard.argument(index, text(function, "arguments") or "")
                if not shown:
                    yield _PROGRESS
                if guard.stopped:  # past a limit: stop reading (closing drops the connection)
                    await chunks.close()
                    finish = "length"
                    break
        except LLMError:
            raise
        except (json.JSONDecodeError, ValueError) as exc:
            raise LLMResponseError(
                f"{self.name}: malformed stream data: {exc}", provider=self.name
            ) from exc
        except Exception as exc:
            raise _map_error(exc, self.name) from exc
        if finish is None:
            # Every complete stream ends with a chunk carrying finish_reason; without it the
            # answer was cut short (a proxy closed the stream, or the body was not SSE at all).
            if not received:
                raise LLMResponseError(
                    f"{self.name}: the streamed answer carried no chunks", provider=self.name
                )
            raise LLMConnectionError(
                f"{self.name}: the stream ended before its final chunk", provider=self.name
            )
        if guard.note:
            yield TextDelta(guard.note)
        heads = ((i, c["id"] or f"call_{i}", c["name"]) for i, c in sorted(calls.items()))
        yield ResponseDone(
            ChatResponse(
                content=guard.content,
                tool_calls=guard.calls(heads),
                usage=usage,
                finish_reason=finish,
                model=model,
            )
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
