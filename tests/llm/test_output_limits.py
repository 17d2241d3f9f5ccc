"""Both providers bound and repair what a model streams, where it enters (``llm.limits``)."""

from __future__ import annotations

import json
from collections.abc import Callable

from duragent.core.messages import Message
from duragent.llm import REJECTED_KEY, OutputLimits
from duragent.llm.base import LLMProvider
from duragent.llm.types import ChatRequest
from duragent.testing import Reply, ScriptedLLMServer, ToolCallReply
from duragent.testing.hostile import (
    endless_reply,
    huge_argument,
    invalid_unicode_call,
    nested_arguments,
)
from tests.llm.helpers import collect, deltas, final

LIMITS = OutputLimits(max_reply_bytes=64 << 10, max_tool_argument_bytes=16 << 10)


def _request(limits: OutputLimits = LIMITS) -> ChatRequest:
    return ChatRequest(messages=[Message.user("hello")], limits=limits)


async def test_a_reply_past_max_reply_bytes_is_cut_with_a_note_and_runs_no_call(
    server: ScriptedLLMServer, make_provider: Callable[..., LLMProvider]
) -> None:
    server.enqueue(
        Reply(text="start ", filler_bytes=1 << 20, tool_calls=[ToolCallReply(name="bash")])
    )
    events = await collect(make_provider().stream(_request()))
    response = final(events)
    assert "".join(deltas(events)) == response.content  # the note is streamed too
    assert response.content.startswith("start xxx")
    assert "max_reply_bytes" in response.content
    assert len(response.content) < LIMITS.max_reply_bytes + 512
    assert response.tool_calls == ()


async def test_an_endless_reply_is_cut_at_max_reply_bytes(
    server: ScriptedLLMServer, make_provider: Callable[..., LLMProvider]
) -> None:
    server.enqueue(*endless_reply())
    response = final(await collect(make_provider().stream(_request())))
    assert "max_reply_bytes" in response.content


async def test_an_argument_past_max_tool_argument_bytes_is_refused_with_its_call_kept(
    server: ScriptedLLMServer, make_provider: Callable[..., LLMProvider]
) -> None:
    server.enqueue(*huge_argument(1 << 20))
    response = final(await collect(make_provider().stream(_request())))
    (call,) = response.tool_calls
    assert call.name == "bash"
    reason = json.loads(call.arguments)[REJECTED_KEY]
    assert "max_tool_argument_bytes" in reason


async def test_arguments_nested_past_the_depth_limit_are_refused(
    server: ScriptedLLMServer, make_provider: Callable[..., LLMProvider]
) -> None:
    server.enqueue(*nested_arguments(5000))
    limits = OutputLimits(max_tool_argument_bytes=64 << 10)
    response = final(await collect(make_provider().stream(_request(limits))))
    (call,) = response.tool_calls
    assert "max_tool_argument_depth" in call.parsed_arguments()[REJECTED_KEY]


async def test_lone_surrogates_in_text_and_arguments_become_replacement_characters(
    server: ScriptedLLMServer, make_provider: Callable[..., LLMProvider]
) -> None:
    server.enqueue(*invalid_unicode_call())
    events = await collect(make_provider().stream(_request()))
    response = final(events)
    for text in [*deltas(events), response.content, response.tool_calls[0].arguments]:
        text.encode("utf-8")  # raises on a lone surrogate
    assert response.content == "Running \ufffd it"
    assert response.tool_calls[0].parsed_arguments() == {"command": "echo \ufffd \ufffd end"}


async def test_a_valid_surrogate_pair_escape_is_kept_as_its_character(
    server: ScriptedLLMServer, make_provider: Callable[..., LLMProvider]
) -> None:
    call = ToolCallReply(name="bash", arguments='{"command":"echo \\ud83d\\ude00"}')
    server.enqueue(Reply(tool_calls=[call]))
    response = final(await collect(make_provider().stream(_request())))
    assert response.tool_calls[0].parsed_arguments() == {"command": "echo \U0001f600"}


async def test_each_call_counts_against_max_reply_bytes_even_with_empty_arguments(
    server: ScriptedLLMServer, make_provider: Callable[..., LLMProvider]
) -> None:
    calls = [ToolCallReply(name="bash", arguments="{}", id=f"c{i}") for i in range(2000)]
    server.enqueue(Reply(tool_calls=calls))
    limits = OutputLimits(max_reply_bytes=64 << 10)
    response = final(await collect(make_provider().stream(_request(limits))))
    assert response.tool_calls == ()
    assert "max_reply_bytes" in response.content
