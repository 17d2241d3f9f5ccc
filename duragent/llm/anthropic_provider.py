"""Anthropic Messages API through the official ``anthropic`` async SDK.

Translation rules (the API rejects anything else):
- every system-role message, wherever it sits (prompt, truncation notice, group context), is
  hoisted into the ``system`` field, joined by blank lines;
- tool results travel in *user* turns as ``tool_result`` blocks; assistant tool calls are
  ``tool_use`` blocks whose ``input`` is the parsed arguments (``{}`` when unparsable);
- consecutive same-role turns are merged and empty text blocks dropped, so roles alternate;
- the first turn is a user turn (a placeholder is inserted when history starts otherwise);
- ``max_tokens`` is required by the API: 4096 when the agent does not set it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic

from duragent.core.messages import Message, Role, ToolCall, ToolDefinition, Usage
from duragent.errors import (
    ContextLengthExceededError,
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
)
from duragent.llm._http_errors import looks_like_context_overflow, parse_retry_after
from duragent.llm.types import ChatRequest, ChatResponse, ResponseDone, StreamEvent, TextDelta

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider", "to_anthropic_request"]

DEFAULT_MAX_TOKENS = 4096
_PLACEHOLDER_FIRST_USER = "(conversation continues)"


def _parse_input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


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
            turns[-1]["content"].extend(blocks)
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
                    "input": _parse_input(c.arguments),
                }
                for c in m.tool_calls
            )
            add("assistant", blocks)
        else:
            add("user", [{"type": "text", "text": m.text if m.text.strip() else "(empty)"}])
    if not turns or turns[0]["role"] != "user":
        placeholder = [{"type": "text", "text": _PLACEHOLDER_FIRST_USER}]
        turns.insert(0, {"role": "user", "content": placeholder})
    wire_tools = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]
    return "\n\n".join(system_parts), turns, wire_tools


def _map_error(exc: Exception, provider: str) -> LLMError:
    if isinstance(exc, anthropic.APITimeoutError):
        return LLMTimeoutError(f"{provider}: request timed out", provider=provider)
    if isinstance(exc, anthropic.APIConnectionError):
        return LLMConnectionError(f"{provider}: connection failed: {exc}", provider=provider)
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        headers = dict(exc.response.headers) if exc.response is not None else {}
        message = f"{provider} answered {status}: {exc.message}"
        if status == 429:
            return LLMRateLimitError(
                message, provider=provider, retry_after=parse_retry_after(headers)
            )
        if status in (401, 403):
            return LLMAuthError(message, status=status, provider=provider)
        if status == 413 or (status in (400, 422) and looks_like_context_overflow(exc.message)):
            return ContextLengthExceededError(message, status=status, provider=provider)
        if status >= 500:  # includes 529 overloaded
            return LLMServerError(
                message, status=status, provider=provider, retry_after=parse_retry_after(headers)
            )
        return LLMBadRequestError(message, status=status, provider=provider)
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
            api_key=api_key, base_url=base_url, timeout=timeout_seconds, max_retries=0
        )

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        system, turns, tools = to_anthropic_request(request.messages, request.tools)
        params: dict[str, Any] = {
            "model": self.model,
            "messages": turns,
            "max_tokens": request.max_output_tokens or DEFAULT_MAX_TOKENS,
        }
        if system:
            params["system"] = system
        if tools:
            params["tools"] = tools
        if request.temperature is not None:
            params["temperature"] = min(request.temperature, 1.0)
        return params

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """One non-streaming Messages call."""
        try:
            raw = await self._client.messages.create(**self._params(request))
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
                content="".join(text),
                tool_calls=tuple(calls),
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
        params = self._params(request)
        params["stream"] = True
        text: list[str] = []
        blocks: dict[int, dict[str, str]] = {}
        prompt_tokens = 0
        completion_tokens = 0
        finish: str | None = None
        model: str | None = None
        try:
            events = await self._client.messages.create(**params)
            async for event in events:
                kind = event.type
                if kind == "message_start":
                    model = event.message.model
                    prompt_tokens = int(event.message.usage.input_tokens or 0)
                elif kind == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        blocks[event.index] = {"id": block.id, "name": block.name, "args": ""}
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        text.append(delta.text)
                        yield TextDelta(delta.text)
                    elif delta.type == "input_json_delta" and event.index in blocks:
                        blocks[event.index]["args"] += delta.partial_json
                elif kind == "message_delta":
                    finish = event.delta.stop_reason or finish
                    completion_tokens = int(event.usage.output_tokens or 0)
                elif kind == "error":  # pragma: no cover - SDK raises for error events
                    raise LLMServerError(f"{self.name}: stream error", provider=self.name)
        except LLMError:
            raise
        except (json.JSONDecodeError, ValueError) as exc:
            raise LLMResponseError(
                f"{self.name}: malformed stream data: {exc}", provider=self.name
            ) from exc
        except Exception as exc:
            raise _map_error(exc, self.name) from exc
        calls = tuple(
            ToolCall(id=b["id"], name=b["name"], arguments=b["args"] or "{}")
            for _, b in sorted(blocks.items())
        )
        yield ResponseDone(
            ChatResponse(
                content="".join(text),
                tool_calls=calls,
                usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
                finish_reason=finish,
                model=model,
            )
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
