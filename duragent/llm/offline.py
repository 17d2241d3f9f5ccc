"""The offline model: a deterministic stand-in that needs no network, key or server.

It exists so that ``duragent serve`` works on a fresh machine and so examples and tests can
drive the whole tool loop. It does not understand language and says so in every reply.

Behaviour (documented in README, "The offline model"):

- A reply starts with ``[offline model]``, states that no language model is connected, and
  quotes the start of the latest user message.
- Tool calls: each line of the latest user message written as ``!call <tool> <json-object>``
  (the JSON is optional and defaults to ``{}``) becomes one tool call; several lines give
  several calls in one response. The text after the tool name is passed through verbatim, so
  malformed arguments reach the loop as malformed arguments.
- When the conversation ends with tool results, it answers with a summary of those results
  and calls nothing more, so a turn always terminates.
- Usage is reported with a byte-length estimate (it is not a real model's count).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Sequence

from duragent.core.messages import Message, Role, ToolCall, Usage
from duragent.llm.types import ChatRequest, ChatResponse, ResponseDone, StreamEvent, TextDelta

__all__ = ["OFFLINE_MODEL_NAME", "OfflineProvider", "parse_call_lines"]

OFFLINE_MODEL_NAME = "duragent-offline"
_CALL_PREFIX = "!call "
_QUOTE_CHARS = 200
_RESULT_CHARS = 300


def parse_call_lines(text: str) -> list[tuple[str, str]]:
    """``(tool, raw_arguments)`` for every ``!call`` line of ``text``."""
    calls = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith(_CALL_PREFIX):
            continue
        rest = stripped[len(_CALL_PREFIX) :].strip()
        name, _, args = rest.partition(" ")
        if name:
            calls.append((name, args.strip() or "{}"))
    return calls


def _estimate(text: str) -> int:
    return max(1, len(text.encode()) // 4)


def _latest_user(messages: Sequence[Message]) -> Message | None:
    for m in reversed(messages):
        if m.role is Role.USER:
            return m
    return None


def _trailing_tool_results(messages: Sequence[Message]) -> list[Message]:
    results: list[Message] = []
    for m in reversed(messages):
        if m.role is not Role.TOOL:
            break
        results.append(m)
    return list(reversed(results))


def _tool_names(messages: Sequence[Message]) -> dict[str, str]:
    return {c.id: c.name for m in messages for c in m.tool_calls}


class OfflineProvider:
    """A deterministic, network-free provider (see module docstring)."""

    def __init__(self, *, model: str = OFFLINE_MODEL_NAME, name: str = "offline") -> None:
        self.name = name
        self.model = model

    def _respond(self, request: ChatRequest) -> ChatResponse:
        messages = list(request.messages)
        prompt = "".join(m.text for m in messages)
        results = _trailing_tool_results(messages)
        if results:
            names = _tool_names(messages)
            lines = ["[offline model] Tool results:"]
            for r in results:
                snippet = r.text[:_RESULT_CHARS] + ("…" if len(r.text) > _RESULT_CHARS else "")
                lines.append(f"- {names.get(r.tool_call_id or '', 'tool')}: {snippet}")
            text = "\n".join(lines)
            return self._response(text, (), prompt)
        user = _latest_user(messages)
        said = user.text if user else ""
        offered = {t.name for t in request.tools}
        calls = []
        for i, (name, args) in enumerate(parse_call_lines(said)):
            seed = f"{len(messages)}:{i}:{name}:{args}:{said}".encode()
            call_id = "call_" + hashlib.sha256(seed).hexdigest()[:16]
            calls.append(ToolCall(id=call_id, name=name, arguments=args))
        if calls:
            listed = ", ".join(c.name for c in calls)
            note = "" if all(c.name in offered for c in calls) else " (not all are offered)"
            return self._response(
                f"[offline model] Calling {listed}{note} as the message asked.",
                tuple(calls),
                prompt,
            )
        quote = said[:_QUOTE_CHARS] + ("…" if len(said) > _QUOTE_CHARS else "")
        text = (
            "[offline model] No language model is connected, so this is a fixed reply, not an "
            f'answer. You said: "{quote}". To call a tool, send a line like '
            '`!call bash {"command": "date"}`. To talk to a real model, set spec.model in '
            "agent.yaml (see README: Using a real model)."
        )
        return self._response(text, (), prompt)

    def _response(self, text: str, calls: tuple[ToolCall, ...], prompt: str) -> ChatResponse:
        return ChatResponse(
            content=text,
            tool_calls=calls,
            usage=Usage(prompt_tokens=_estimate(prompt), completion_tokens=_estimate(text)),
            finish_reason="tool_calls" if calls else "stop",
            model=self.model,
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """The deterministic reply."""
        return self._respond(request)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """The same reply, word by word."""
        response = self._respond(request)
        words = response.content.split(" ")
        for i, word in enumerate(words):
            yield TextDelta(word if i == len(words) - 1 else word + " ")
        yield ResponseDone(response)

    async def aclose(self) -> None:
        """Nothing to release."""
