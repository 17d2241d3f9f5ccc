"""Anthropic Messages API through the official ``anthropic`` async SDK.

Translation rules (the API rejects anything else):
- every system-role message, wherever it sits (prompt, truncation notice, group context), is
  hoisted into the ``system`` field, joined by blank lines;
- tool results travel in *user* turns as ``tool_result`` blocks, placed before any text of
  that turn; assistant tool calls are ``tool_use`` blocks whose ``input`` is the parsed
  arguments (``{}`` when unparsable);
- consecutive same-role turns are merged and empty text blocks dropped, so roles alternate;
- the first turn is a user turn (a placeholder is inserted when history starts otherwise);
- ``max_tokens`` is required by the API: 4096 when the agent does not set it;
- ``temperature`` (capped at 1.0) is sent only when the installed SDK's ``messages.create``
  still takes it: anthropic 2.x dropped the parameter, and passing it anyway made every call
  fail with a ``TypeError`` before reaching the network.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic
from anthropic.types import Message as AnthropicMessage

from duragent.core.messages import Message, Role, ToolCall, ToolDefinition, Usage
from duragent.errors import (
    LLMConnectionError,
    LLMError,
    LLMResponseError,
    LLMServerError,
)
from duragent.llm._anthropic_wire import FRAGMENTS, PLACEHOLDER_FIRST_USER, parse_input, turns_body
from duragent.llm._http_errors import (
    connection_failure,
    error_for_status,
    status_for_error_type,
    timeout_or_connection,
    transport_failure,
)
from duragent.llm._json_fields import integer, obj, text
from duragent.llm._wire_body import dumps, json_object
from duragent.llm.image_parts import anthropic_user_content
from duragent.llm.limits import ReplyGuard, checked_calls, repair_text
from duragent.llm.types import (
    ChatRequest,
    ChatResponse,
    ImageMessage,
    ResponseDone,
    StreamEvent,
    StreamProgress,
    TextDelta,
)

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider", "to_anthropic_request"]

_PROGRESS = StreamProgress()

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 4096


def to_anthropic_request(
    messages: Sequence[Message], tools: Sequence[ToolDefinition] = ()
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(system, messages, tools) in the Messages API wire format."""
    system_parts: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            content = turns[-1]["content"]
            content.extend(blocks)
            # The API requires a user turn's tool_result blocks before any text in it.
            content.sort(key=lambda block: block["type"] != "tool_result")
        else:
            turns.append({"role": role, "content": blocks})

    for m in messages:
        if m.role is Role.SYSTEM:
            if m.text.strip():
                system_parts.append(m.text)
        elif m.role is Role.TOOL:
            add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": m.tool_call_id or "",
                        "content": m.text or "(empty result)",
                    }
                ],
            )
        elif m.role is Role.ASSISTANT:
            blocks: list[dict[str, Any]] = []
            if m.text.strip():
                blocks.append({"type": "text", "text": m.text})
            blocks.extend(
                {
                    "type": "tool_use",
                    "id": c.id,
                    "name": c.name,
                    "input": parse_input(c.arguments),
                }
                for c in m.tool_calls
            )
            add("assistant", blocks)
        elif type(m) is ImageMessage:
            add("user", anthropic_user_content(m.text if m.text.strip() else "", m.images))
        else:
            add("user", [{"type": "text", "text": m.text if m.text.strip() else "(empty)"}])
    if not turns or turns[0]["role"] != "user":
        placeholder = [{"type": "text", "text": PLACEHOLDER_FIRST_USER}]
        turns.insert(0, {"role": "user", "content": placeholder})
    wire_tools = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]
    return "\n\n".join(system_parts), turns, wire_tools


def _error_type(body: object) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    return str(error.get("type") or "") if isinstance(error, dict) else ""


def _map_error(exc: Exception, provider: str) -> LLMError:
    if isinstance(exc, anthropic.APITimeoutError):
        return timeout_or_connection(exc, provider)
    if isinstance(exc, anthropic.APIConnectionError):
        return connection_failure(exc, provider)
    if isinstance(exc, anthropic.APIResponseValidationError):
        return LLMResponseError(f"{provider}: unreadable response: {exc}", provider=provider)
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        if status < 400:
            # ``event: error`` inside a stream that had already answered 200 (typically
            # ``overloaded_error``): the SDK reports the 200, so classify by the error type.
            return error_for_status(
                status_for_error_type(_error_type(exc.body)),
                f"{provider} stream error: {exc.message}",
                provider=provider,
                http_status=0,
            )
        headers = dict(exc.response.headers) if exc.response is not None else {}
        return error_for_status(
            status,
            f"{provider} answered {status}: {exc.message}",
            provider=provider,
            headers=headers,
        )
    transport = transport_failure(exc, provider)
    if transport is not None:
        return transport
    return LLMResponseError(f"{provider}: unreadable response: {exc}", provider=provider)


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    return Usage(
        prompt_tokens=int(getattr(raw, "input_tokens", 0) or 0),
        completion_tokens=int(getattr(raw, "output_tokens", 0) or 0),
    )


class AnthropicProvider:
    """Claude models through ``anthropic.AsyncAnthropic``."""

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str | None = None,
        timeout_seconds: float = 300,
        name: str = "anthropic",
    ) -> None:
        self.name = name
        self.model = model
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_seconds,
            max_retries=0,
            http_client=anthropic.DefaultAioHttpClient(timeout=timeout_seconds),
        )
        self._takes_temperature = (
            "temperature" in inspect.signature(self._client.messages.create).parameters
        )

    async def _body(self, request: ChatRequest, *, stream: bool) -> bytes:
        """The request body as the SDK's ``messages.create()`` would send it, byte for byte.

        Same keys in the same order as the SDK sends them; the turns are joined from cached
        per-message fragments instead of being rebuilt and re-serialised on every call.
        """
        system, turns = await turns_body(await FRAGMENTS.fragments(request.messages))
        fields: list[tuple[str, bytes | list[bytes]]] = [
            ("max_tokens", dumps(request.max_output_tokens or DEFAULT_MAX_TOKENS)),
            ("messages", turns),
            ("model", dumps(self.model)),
        ]
        if stream:
            fields.append(("stream", b"true"))
        if system:
            fields.append(("system", dumps(system)))
        if request.temperature is not None:
            if self._takes_temperature:
                fields.append(("temperature", dumps(min(request.temperature, 1.0))))
            else:
                log.debug("%s: this anthropic SDK has no temperature; not sent", self.name)
        if request.tools:
            _, _, tools = to_anthropic_request((), request.tools)
            fields.append(("tools", dumps(tools)))
        return json_object(fields)

    async def _post(self, request: ChatRequest, *, stream: bool) -> Any:
        """``POST /v1/messages`` through the SDK's client with a pre-built body."""
        return await self._client.post(
            "/v1/messages",
            content=await self._body(request, stream=stream),
            cast_to=AnthropicMessage,
            stream=stream,
            # plain JSON per event: the SDK's typed event models cost more than the rest of
            # the call (see ``_json_fields``)
            stream_cls=anthropic.AsyncStream[object],
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """One non-streaming Messages call."""
        try:
            raw = await self._post(request, stream=False)
        except LLMError:
            raise
        except Exception as exc:
            raise _map_error(exc, self.name) from exc
        try:
            text: list[str] = []
            calls: list[ToolCall] = []
            for block in raw.content:
                if block.type == "text":
                    text.append(block.text)
                elif block.type == "tool_use":
                    calls.append(
                        ToolCall(id=block.id, name=block.name, arguments=json.dumps(block.input))
                    )
            return ChatResponse(
                content=repair_text("".join(text)),
                tool_calls=checked_calls(calls, request.limits),
                usage=_usage(raw.usage),
                finish_reason=raw.stop_reason,
                model=raw.model,
            )
        except (AttributeError, TypeError) as exc:
            raise LLMResponseError(
                f"{self.name}: response has no usable content: {exc}", provider=self.name
            ) from exc

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream text deltas; tool_use blocks are assembled into the final response."""
        guard = ReplyGuard(request.limits)
        blocks: dict[int, dict[str, str]] = {}
        prompt_tokens = 0
        completion_tokens = 0
        finish: str | None = None
        model: str | None = None
        received = 0
        stopped = False
        try:
            events = await self._post(request, stream=True)
            async for data in events:
                received += 1
                event = obj(data, "event")
                kind = text(event, "type")
                shown = False
                if kind == "message_stop":
                    stopped = True
                elif kind == "message_start":
                    message = obj(event.get("message"), "message")
                    model = text(message, "model")
                    prompt_tokens = integer(obj(message.get("usage"), "usage"), "input_tokens")
                elif kind == "content_block_start":
                    block = obj(event.get("content_block"), "content_block")
                    if text(block, "type") == "tool_use":
                        blocks[integer(event, "index")] = {
                            "id": (text(block, "id") or "")[:256],
                            "name": (text(block, "name") or "")[:256],
                        }
                        guard.new_call()
                elif kind == "content_block_delta":
                    delta = obj(event.get("delta"), "delta")
                    delta_kind = text(delta, "type")
                    if delta_kind == "text_delta":
                        piece = guard.text(text(delta, "text") or "")
                        if piece:
                            shown = True
                            yield TextDelta(piece)
                    elif delta_kind == "input_json_delta":
                        index = integer(event, "index")
                        if index in blocks:
                            guard.argument(index, text(delta, "partial_json") or "")
                elif kind == "message_delta":
                    finish = text(obj(event.get("delta"), "delta"), "stop_reason") or finish
                    completion_tokens = integer(obj(event.get("usage"), "usage"), "output_tokens")
                elif kind == "error":  # pragma: no cover - SDK raises for error events
                    raise LLMServerError(f"{self.name}: stream error", provider=self.name)
                if guard.stopped:  # past a limit: stop reading (closing drops the connection)
                    await events.close()
                    stopped = True
                    finish = "max_tokens"
                    break
                if not shown:
                    yield _PROGRESS  # anything but text (tool arguments, thinking, pings)
        except LLMError:
            raise
        except (json.JSONDecodeError, ValueError) as exc:
            raise LLMResponseError(
                f"{self.name}: malformed stream data: {exc}", provider=self.name
            ) from exc
        except Exception as exc:
            raise _map_error(exc, self.name) from exc
        if not stopped:
            # A complete stream always ends with message_stop; without it the answer was cut
            # short (a proxy closed the stream) or the body was not an event stream at all.
            if not received:
                raise LLMResponseError(
                    f"{self.name}: the streamed answer carried no events", provider=self.name
                )
            raise LLMConnectionError(
                f"{self.name}: the stream ended before message_stop", provider=self.name
            )
        if guard.note:
            yield TextDelta(guard.note)
        heads = ((i, b["id"], b["name"]) for i, b in sorted(blocks.items()))
        yield ResponseDone(
            ChatResponse(
                content=guard.content,
                tool_calls=guard.calls(heads),
                usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
                finish_reason=finish,
                model=model,
            )
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
