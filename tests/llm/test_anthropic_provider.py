"""AnthropicProvider against the fake server's ``/v1/messages`` over real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from duragent.core.messages import Message, ToolCall, ToolDefinition, Usage
from duragent.errors import (
    ContextLengthExceededError,
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
)
from duragent.llm.anthropic_provider import DEFAULT_MAX_TOKENS, AnthropicProvider
from duragent.llm.types import ChatRequest
from duragent.testing import Fault, Reply, ScriptedLLMServer, ToolCallReply
from tests.llm.helpers import (
    ANTHROPIC_MODEL,
    HELLO,
    RecordedSleeps,
    answer,
    collect,
    deltas,
    drain_into,
    final,
    resilient,
)

WEATHER = ToolDefinition(
    name="weather",
    description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


async def sent_body(
    server: ScriptedLLMServer, provider: AnthropicProvider, request: ChatRequest
) -> dict[str, Any]:
    """The JSON body the provider sends for ``request``."""
    server.enqueue(Reply(text="ok"))
    await provider.complete(request)
    return server.last_request.json


async def test_a_plain_message_returns_the_text_usage_stop_reason_and_model(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    server.enqueue(Reply(text="Hello, world.", prompt_tokens=11, completion_tokens=4))
    response = await anthropic_provider.complete(HELLO)
    assert response.content == "Hello, world."
    assert response.tool_calls == ()
    assert response.usage == Usage(prompt_tokens=11, completion_tokens=4)
    assert response.finish_reason == "end_turn"
    assert response.model == ANTHROPIC_MODEL
    assert server.last_request.path == "/v1/messages"


async def test_a_stream_yields_several_text_deltas_then_one_response_done_with_text_and_usage(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    server.enqueue(Reply(text="one two three four", prompt_tokens=9, completion_tokens=4))
    events = await collect(anthropic_provider.stream(HELLO))
    assert deltas(events) == ["one ", "two ", "three ", "four"]
    response = final(events)
    assert response.content == "one two three four"
    assert response.usage == Usage(prompt_tokens=9, completion_tokens=4)
    assert response.finish_reason == "end_turn"
    assert server.last_request.json["stream"] is True


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_one_tool_use_block_becomes_a_tool_call_with_json_arguments(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider, stream: bool
) -> None:
    server.enqueue(
        Reply(tool_calls=[ToolCallReply(id="toolu_1", name="weather", arguments={"city": "Oslo"})])
    )
    response = await answer(anthropic_provider, HELLO, stream=stream)
    assert len(response.tool_calls) == 1
    call = response.tool_calls[0]
    assert (call.id, call.name) == ("toolu_1", "weather")
    assert json.loads(call.arguments) == {"city": "Oslo"}
    assert response.finish_reason == "tool_use"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_several_tool_use_blocks_keep_order_and_assembled_arguments(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider, stream: bool
) -> None:
    long_args = {"city": "Rio de Janeiro", "units": "metric", "days": [1, 2, 3]}
    server.enqueue(
        Reply(
            text="Checking both.",
            tool_calls=[
                ToolCallReply(name="weather", arguments=long_args),
                ToolCallReply(name="clock", arguments={"tz": "UTC"}),
            ],
            argument_fragment_size=3,
        )
    )
    response = await answer(anthropic_provider, HELLO, stream=stream)
    assert [c.name for c in response.tool_calls] == ["weather", "clock"]
    assert [c.id for c in response.tool_calls] == ["toolu_fake_0_0", "toolu_fake_0_1"]
    assert json.loads(response.tool_calls[0].arguments) == long_args
    assert json.loads(response.tool_calls[1].arguments) == {"tz": "UTC"}
    assert response.content == "Checking both."


async def test_system_messages_anywhere_are_hoisted_into_the_system_field(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    request = ChatRequest(
        messages=[
            Message.system("You are terse."),
            Message.user("hi"),
            Message.system("[earlier turns were truncated]"),
            Message.assistant("hello"),
            Message.system("   "),
            Message.user("bye"),
        ]
    )
    body = await sent_body(server, anthropic_provider, request)
    assert body["system"] == "You are terse.\n\n[earlier turns were truncated]"
    assert [t["role"] for t in body["messages"]] == ["user", "assistant", "user"]
    assert all(b["type"] != "system" for t in body["messages"] for b in t["content"])


async def test_no_system_field_is_sent_without_system_messages(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    body = await sent_body(server, anthropic_provider, HELLO)
    assert "system" not in body
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


async def test_tool_calls_become_tool_use_blocks_and_results_tool_result_blocks_in_user_turns(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    calls = (
        ToolCall(id="toolu_a", name="weather", arguments='{"city": "Oslo"}'),
        ToolCall(id="toolu_b", name="clock", arguments="{}"),
    )
    request = ChatRequest(
        messages=[
            Message.user("Weather and time?"),
            Message.assistant("Let me check.", calls),
            Message.tool("toolu_a", "sunny"),
            Message.tool("toolu_b", ""),
        ],
        tools=[WEATHER],
    )
    body = await sent_body(server, anthropic_provider, request)
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather and time?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "toolu_b", "name": "clock", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "(empty result)"},
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "weather", "description": "Weather for a city", "input_schema": WEATHER.parameters}
    ]


async def test_consecutive_same_role_turns_are_merged_so_roles_alternate(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    request = ChatRequest(
        messages=[
            Message.user("first"),
            Message.user("second"),
            Message.assistant("a"),
            Message.assistant("b"),
            Message.user("third"),
        ]
    )
    body = await sent_body(server, anthropic_provider, request)
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        },
        {"role": "user", "content": [{"type": "text", "text": "third"}]},
    ]


async def test_tool_results_come_before_text_in_a_merged_user_turn(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    call = ToolCall(id="toolu_a", name="weather", arguments="{}")
    request = ChatRequest(
        messages=[
            Message.user("go"),
            Message.assistant(None, (call,)),
            Message.user("(meanwhile) hurry up"),
            Message.tool("toolu_a", "sunny"),
        ]
    )
    body = await sent_body(server, anthropic_provider, request)
    last = body["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "text"]


async def test_the_first_turn_is_always_a_user_turn(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    request = ChatRequest(messages=[Message.system("sys"), Message.assistant("I start.")])
    body = await sent_body(server, anthropic_provider, request)
    assert [t["role"] for t in body["messages"]] == ["user", "assistant"]
    assert body["messages"][0]["content"][0]["text"]


async def test_unparsable_tool_arguments_are_sent_as_an_empty_input_object(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    calls = (
        ToolCall(id="t1", name="weather", arguments='{"city": "Os'),
        ToolCall(id="t2", name="weather", arguments="[1, 2]"),
    )
    request = ChatRequest(
        messages=[
            Message.user("go"),
            Message.assistant(None, calls),
            Message.tool("t1", "error: bad arguments"),
            Message.tool("t2", "error: bad arguments"),
        ]
    )
    body = await sent_body(server, anthropic_provider, request)
    uses = [b for b in body["messages"][1]["content"] if b["type"] == "tool_use"]
    assert [u["input"] for u in uses] == [{}, {}]


async def test_max_tokens_defaults_to_4096_and_follows_the_request_when_set(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    body = await sent_body(server, anthropic_provider, HELLO)
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS == 4096
    request = ChatRequest(messages=HELLO.messages, max_output_tokens=300)
    assert (await sent_body(server, anthropic_provider, request))["max_tokens"] == 300


async def test_a_temperature_never_breaks_the_call_and_is_capped_at_one_when_sent(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    # anthropic 2.x has no temperature parameter; older SDKs do. Either way the call works.
    assert "temperature" not in await sent_body(server, anthropic_provider, HELLO)
    request = ChatRequest(messages=HELLO.messages, temperature=1.7)
    body = await sent_body(server, anthropic_provider, request)
    assert body.get("temperature", 1.0) == 1.0


async def test_the_model_and_api_key_and_api_version_are_sent(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    body = await sent_body(server, anthropic_provider, HELLO)
    assert body["model"] == ANTHROPIC_MODEL
    headers = server.last_request.headers
    # x-api-key in anthropic 0.x/1.x, a bearer token in 2.x
    assert "sk-ant-test" in (headers.get("x-api-key", ""), headers.get("authorization", "")[7:])
    assert headers["anthropic-version"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_prompt_is_too_long_raises_context_length_exceeded(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider, stream: bool
) -> None:
    server.enqueue(Fault.context_length_exceeded())
    with pytest.raises(ContextLengthExceededError) as caught:
        await answer(anthropic_provider, HELLO, stream=stream)
    assert caught.value.status == 400
    assert caught.value.provider == "anthropic"


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (Fault.bad_request("messages: field required"), LLMBadRequestError),
        (Fault.unauthorized(401), LLMAuthError),
        (Fault.unauthorized(403), LLMAuthError),
        (Fault.rate_limited(retry_after=3), LLMRateLimitError),
        (Fault.overloaded(), LLMServerError),
    ],
    ids=["400", "401", "403", "429", "529"],
)
async def test_http_errors_map_to_the_llm_error_tree(
    server: ScriptedLLMServer,
    anthropic_provider: AnthropicProvider,
    fault: Fault,
    error: type[Exception],
) -> None:
    server.enqueue(fault)
    with pytest.raises(error) as caught:
        await anthropic_provider.complete(HELLO)
    assert not isinstance(caught.value, ContextLengthExceededError)


async def test_529_overloaded_is_retried_until_it_succeeds(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    server.enqueue(Fault.overloaded(), Fault.overloaded(), Reply(text="finally"))
    sleeps = RecordedSleeps()
    response = await resilient(anthropic_provider, sleeps).complete(HELLO)
    assert response.content == "finally"
    assert len(server.requests) == 3
    assert len(sleeps.delays) == 2


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (Fault.overloaded(), LLMServerError),
        (Fault.rate_limited(), LLMRateLimitError),
        (Fault.context_length_exceeded(), ContextLengthExceededError),
    ],
    ids=["overloaded", "rate_limit", "context_length"],
)
async def test_an_error_event_inside_a_stream_maps_as_its_http_status_would(
    server: ScriptedLLMServer,
    anthropic_provider: AnthropicProvider,
    fault: Fault,
    error: type[Exception],
) -> None:
    server.enqueue(Reply(text="x", stream_error=fault, stream_error_after=1))
    with pytest.raises(error) as caught:
        await collect(anthropic_provider.stream(HELLO))
    assert caught.value.__class__ is error


async def test_an_overloaded_event_before_any_text_is_retried(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    server.enqueue(
        Reply(text="lost", stream_error=Fault.overloaded(), stream_error_after=1),
        Reply(text="second try"),
    )
    sleeps = RecordedSleeps()
    events = await collect(resilient(anthropic_provider, sleeps).stream(HELLO))
    assert final(events).content == "second try"
    assert len(server.requests) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_malformed_json_raises_llm_response_error(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider, stream: bool
) -> None:
    server.enqueue(Reply(text="never parsed", malformed=True))
    with pytest.raises(LLMResponseError):
        await answer(anthropic_provider, HELLO, stream=stream)


async def test_a_stream_cut_after_some_text_raises_a_connection_error(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    # message_start, content_block_start, ping, then two text deltas
    server.enqueue(Reply(text="one two three", cut_after=5))
    received: list[str] = []
    with pytest.raises(LLMConnectionError):
        await drain_into(anthropic_provider.stream(HELLO), received)
    assert received == ["one ", "two "]


async def test_a_stream_closed_cleanly_before_message_stop_is_not_taken_as_complete(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider
) -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": ANTHROPIC_MODEL,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }
    body = f"event: message_start\ndata: {json.dumps(start)}\n\n"
    server.enqueue(Fault(status=200, body=body, headers={"content-type": "text/event-stream"}))
    with pytest.raises(LLMConnectionError, match="message_stop"):
        await collect(anthropic_provider.stream(HELLO))


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_200_that_is_not_a_message_raises_llm_response_error(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider, stream: bool
) -> None:
    server.enqueue(Fault(status=200, body="<html>proxy login</html>"))
    with pytest.raises(LLMResponseError):
        await answer(anthropic_provider, HELLO, stream=stream)
