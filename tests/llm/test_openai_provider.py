"""OpenAICompatibleProvider against the fake server's ``/v1/chat/completions`` over real HTTP."""

from __future__ import annotations

import json

import pytest

from duragent.core.messages import Message, ToolCall, ToolDefinition, Usage
from duragent.errors import (
    ContextLengthExceededError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
)
from duragent.llm.openai_compat import OpenAICompatibleProvider
from duragent.llm.types import ChatRequest
from duragent.testing import Fault, Reply, ScriptedLLMServer, ToolCallReply
from tests.llm.helpers import HELLO, OPENAI_MODEL, answer, collect, deltas, drain_into, final

WEATHER = ToolDefinition(
    name="weather",
    description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


async def test_a_plain_completion_returns_the_text_usage_finish_reason_and_model(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(Reply(text="Hello, world.", prompt_tokens=7, completion_tokens=3))
    response = await openai_provider.complete(HELLO)
    assert response.content == "Hello, world."
    assert response.tool_calls == ()
    assert response.usage == Usage(prompt_tokens=7, completion_tokens=3)
    assert response.finish_reason == "stop"
    assert response.model == OPENAI_MODEL
    assert server.last_request.path == "/v1/chat/completions"
    assert "stream" not in server.last_request.json


async def test_a_stream_yields_several_text_deltas_then_one_response_done_with_text_and_usage(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(Reply(text="one two three four", prompt_tokens=5, completion_tokens=4))
    events = await collect(openai_provider.stream(HELLO))
    assert deltas(events) == ["one ", "two ", "three ", "four"]
    response = final(events)
    assert response.content == "one two three four"
    assert response.usage == Usage(prompt_tokens=5, completion_tokens=4)
    assert response.finish_reason == "stop"


async def test_a_stream_request_asks_for_usage_in_a_final_chunk(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(Reply(text="ok"))
    await collect(openai_provider.stream(HELLO))
    body = server.last_request.json
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_one_tool_call_comes_back_with_its_id_name_and_arguments(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider, stream: bool
) -> None:
    server.enqueue(
        Reply(tool_calls=[ToolCallReply(id="call_1", name="weather", arguments={"city": "Oslo"})])
    )
    response = await answer(openai_provider, HELLO, stream=stream)
    assert response.tool_calls == (
        ToolCall(id="call_1", name="weather", arguments='{"city":"Oslo"}'),
    )
    assert response.finish_reason == "tool_calls"
    assert response.content == ""
    assert response.to_message().content is None


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_several_tool_calls_in_one_response_keep_order_and_assembled_arguments(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider, stream: bool
) -> None:
    long_args = {"city": "Rio de Janeiro", "units": "metric", "days": [1, 2, 3]}
    server.enqueue(
        Reply(
            text="Checking both.",
            tool_calls=[
                ToolCallReply(name="weather", arguments=long_args),
                ToolCallReply(name="clock", arguments={"tz": "America/Sao_Paulo"}),
                ToolCallReply(name="noop"),
            ],
            argument_fragment_size=3,  # many fragments per call in the stream
        )
    )
    response = await answer(openai_provider, HELLO, stream=stream)
    assert [c.name for c in response.tool_calls] == ["weather", "clock", "noop"]
    assert [c.id for c in response.tool_calls] == [
        "call_fake_0_0",
        "call_fake_0_1",
        "call_fake_0_2",
    ]
    assert json.loads(response.tool_calls[0].arguments) == long_args
    assert json.loads(response.tool_calls[1].arguments) == {"tz": "America/Sao_Paulo"}
    assert response.tool_calls[2].parsed_arguments() == {}
    assert response.content == "Checking both."


async def test_malformed_tool_arguments_reach_the_caller_verbatim(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(Reply(tool_calls=[ToolCallReply(name="weather", arguments='{"city": "Os')]))
    response = final(await collect(openai_provider.stream(HELLO)))
    assert response.tool_calls[0].arguments == '{"city": "Os'


async def test_a_tool_name_repeated_in_every_fragment_is_not_doubled(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    # Some OpenAI-compatible servers repeat id and name in every tool-call fragment.
    def chunk(delta: dict[str, object], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        return "data: " + json.dumps({**body, "choices": [choice]}) + "\n\n"

    def frag(args: str) -> dict[str, object]:
        call = {"index": 0, "id": "call_9", "type": "function"}
        return {"tool_calls": [{**call, "function": {"name": "weather", "arguments": args}}]}

    stream = chunk(frag('{"city":')) + chunk(frag('"Oslo"}')) + chunk({}, "tool_calls")
    server.enqueue(
        Fault(
            status=200,
            body=stream + "data: [DONE]\n\n",
            headers={"content-type": "text/event-stream"},
        )
    )
    response = final(await collect(openai_provider.stream(HELLO)))
    assert response.tool_calls == (
        ToolCall(id="call_9", name="weather", arguments='{"city":"Oslo"}'),
    )


async def test_the_request_body_carries_model_messages_tools_and_max_tokens(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    call = ToolCall(id="call_a", name="weather", arguments='{"city":"Oslo"}')
    request = ChatRequest(
        messages=[
            Message.system("Be brief."),
            Message.user("Weather in Oslo?"),
            Message.assistant(None, (call,)),
            Message.tool("call_a", "sunny"),
            Message.assistant("It is sunny."),
            Message.user("Thanks"),
        ],
        tools=[WEATHER],
        max_output_tokens=256,
    )
    server.enqueue(Reply(text="ok"))
    await openai_provider.complete(request)
    body = server.last_request.json
    assert body["model"] == OPENAI_MODEL
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": "Thanks"},
    ]
    assert body["tools"] == [WEATHER.to_openai()]
    assert body["max_tokens"] == 256
    assert "temperature" not in body


@pytest.mark.parametrize("temperature", [0.0, 0.7])
async def test_temperature_is_sent_only_when_set(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider, temperature: float
) -> None:
    server.enqueue(Reply(text="a"), Reply(text="b"))
    await openai_provider.complete(HELLO)
    await openai_provider.complete(ChatRequest(messages=HELLO.messages, temperature=temperature))
    first, second = server.requests
    assert "temperature" not in first.json
    assert "max_tokens" not in first.json
    assert "tools" not in first.json
    assert second.json["temperature"] == temperature


async def test_the_api_key_travels_as_a_bearer_token(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(Reply(text="ok"))
    await openai_provider.complete(HELLO)
    assert server.last_request.headers["authorization"] == "Bearer sk-test"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_context_length_400_raises_context_length_exceeded(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider, stream: bool
) -> None:
    server.enqueue(Fault.context_length_exceeded())
    with pytest.raises(ContextLengthExceededError) as caught:
        await answer(openai_provider, HELLO, stream=stream)
    assert caught.value.status == 400
    assert caught.value.provider == "openai"


async def test_a_plain_400_is_a_bad_request_not_a_context_overflow(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(Fault.bad_request("Unknown parameter: 'foo'."))
    with pytest.raises(LLMBadRequestError) as caught:
        await openai_provider.complete(HELLO)
    assert not isinstance(caught.value, ContextLengthExceededError)
    assert "Unknown parameter" in str(caught.value)


async def test_a_429_carries_the_retry_after_hint(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(Fault.rate_limited(retry_after=7))
    with pytest.raises(LLMRateLimitError) as caught:
        await openai_provider.complete(HELLO)
    assert caught.value.retry_after == 7


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_malformed_json_raises_llm_response_error(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider, stream: bool
) -> None:
    server.enqueue(Reply(text="never parsed", malformed=True))
    with pytest.raises(LLMResponseError):
        await answer(openai_provider, HELLO, stream=stream)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_200_that_is_not_a_completion_raises_llm_response_error(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider, stream: bool
) -> None:
    server.enqueue(Fault(status=200, body="<html>proxy login</html>"))
    with pytest.raises(LLMResponseError):
        await answer(openai_provider, HELLO, stream=stream)


async def test_a_stream_cut_after_some_text_raises_a_connection_error(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(Reply(text="one two three", cut_after=3))
    received: list[str] = []
    with pytest.raises(LLMConnectionError):
        await drain_into(openai_provider.stream(HELLO), received)
    assert received == ["one ", "two "]


async def test_a_stream_closed_cleanly_before_its_final_chunk_is_not_taken_as_complete(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    delta = {"index": 0, "delta": {"content": "half an answ"}, "finish_reason": None}
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    body = "data: " + json.dumps({**chunk, "choices": [delta]}) + "\n\n"
    server.enqueue(Fault(status=200, body=body, headers={"content-type": "text/event-stream"}))
    with pytest.raises(LLMConnectionError, match="before its final chunk"):
        await collect(openai_provider.stream(HELLO))


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (Fault.server_error(), LLMServerError),
        (Fault.rate_limited(), LLMRateLimitError),
        (Fault.context_length_exceeded(), ContextLengthExceededError),
    ],
    ids=["server_error", "rate_limit", "context_length"],
)
async def test_an_error_event_inside_a_stream_maps_as_its_http_status_would(
    server: ScriptedLLMServer,
    openai_provider: OpenAICompatibleProvider,
    fault: Fault,
    error: type[Exception],
) -> None:
    server.enqueue(Reply(text="x", stream_error=fault, stream_error_after=1))
    with pytest.raises(error):
        await collect(openai_provider.stream(HELLO))
