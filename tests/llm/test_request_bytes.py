"""The providers send the very bytes the SDKs' ``create()`` would, without its per-message cost.

Each test sends one rich request (system prompt, user text with non-ASCII, an assistant turn with
tool calls, tool results, tools, temperature, max tokens, streaming) twice to the real fake
server over HTTP: once through the SDK's own ``create()`` with the classic parameters, once
through the provider. The recorded bodies must be byte-identical, and so must the headers that
do not vary per request (for the OpenAI-compatible provider, which no longer sends the SDK's
``X-Stainless-*`` telemetry nor its User-Agent, the headers a server acts on).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duragent.core.messages import Message, ToolCall, ToolDefinition
from duragent.llm._wire_body import dumps
from duragent.llm.anthropic_provider import (
    DEFAULT_MAX_TOKENS,
    AnthropicProvider,
    to_anthropic_request,
)
from duragent.llm.openai_compat import OpenAICompatibleProvider, to_openai_messages
from duragent.llm.types import ChatRequest
from duragent.testing import ScriptedLLMServer
from duragent.testing.script import RecordedRequest, Reply
from tests.llm.helpers import collect

_VARYING_HEADERS = {"idempotency-key", "x-stainless-retry-count", "x-stainless-read-timeout"}


def rich_request(*, streamed_tools: bool = True) -> ChatRequest:
    """A request exercising every field and message kind the providers translate."""
    read = ToolCall(id="call_1", name="read_file", arguments='{"path": "notes/é.txt"}')
    grep = ToolCall(id="call_2", name="grep", arguments="")
    return ChatRequest(
        messages=[
            Message.system('You are helpful. Ünïcode ✓ and "quotes" and \\ backslash.'),
            Message.user("Read my notes, please — 日本語 too.\n\ttabbed"),
            Message.assistant("Reading both.", (read, grep)),
            Message.tool("call_1", "line one\nline two 🚀"),
            Message.tool("call_2", ""),
            Message.system("[context note]"),
            Message.assistant("Done: 2 files."),
            Message.user("Thanks! </script> & <b>"),
        ],
        tools=[
            ToolDefinition(
                name="read_file",
                description="Read a file.",
                parameters={
                    "type": "object",
                    "properties": {"path": {"type": "string", "description": "relative"}},
                    "required": ["path"],
                },
            ),
            ToolDefinition(name="grep", description="Search ✓."),
        ]
        if streamed_tools
        else [],
        max_output_tokens=321,
        temperature=0.25,
    )


def _stable_headers(recorded: RecordedRequest) -> dict[str, str]:
    return {k: v for k, v in recorded.headers.items() if k not in _VARYING_HEADERS}


_SERVED_HEADERS = ("authorization", "content-type", "accept")
"""What an OpenAI-compatible server reads of the headers the SDK sent."""


def _assert_same_request(by_sdk: RecordedRequest, by_provider: RecordedRequest) -> None:
    assert by_provider.path == by_sdk.path
    assert by_provider.raw == by_sdk.raw
    assert _stable_headers(by_provider) == _stable_headers(by_sdk)


def _assert_same_openai_request(by_sdk: RecordedRequest, by_provider: RecordedRequest) -> None:
    assert by_provider.path == by_sdk.path
    assert by_provider.raw == by_sdk.raw
    served = {k: by_sdk.headers[k] for k in _SERVED_HEADERS}
    assert {k: by_provider.headers.get(k) for k in _SERVED_HEADERS} == served


@pytest.fixture
async def openai_sdk(server: ScriptedLLMServer) -> AsyncIterator[openai.AsyncOpenAI]:
    """The SDK's own client, as the provider was built on it (the reference)."""
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url=server.openai_base_url, max_retries=0, timeout=5
    )
    yield client
    await client.close()


def _openai_sdk_params(provider: OpenAICompatibleProvider, request: ChatRequest) -> dict[str, Any]:
    """The parameters the provider used to hand ``chat.completions.create()``."""
    params: dict[str, Any] = {
        "model": provider.model,
        "messages": to_openai_messages(list(request.messages)),
    }
    if request.tools:
        params["tools"] = [t.to_openai() for t in request.tools]
    if request.max_output_tokens is not None:
        params["max_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    return params


@pytest.mark.parametrize("with_tools", [True, False])
async def test_the_openai_provider_streams_the_bytes_the_sdk_would_send(
    server: ScriptedLLMServer,
    openai_provider: OpenAICompatibleProvider,
    openai_sdk: openai.AsyncOpenAI,
    with_tools: bool,
) -> None:
    request = rich_request(streamed_tools=with_tools)
    server.enqueue(Reply(text="a"), Reply(text="b"))
    params = _openai_sdk_params(openai_provider, request)
    chunks = await openai_sdk.chat.completions.create(
        **params, stream=True, stream_options={"include_usage": True}
    )
    async for _ in chunks:
        pass
    await collect(openai_provider.stream(request))
    by_sdk, by_provider = server.requests
    _assert_same_openai_request(by_sdk, by_provider)


async def test_the_openai_provider_completes_with_the_bytes_the_sdk_would_send(
    server: ScriptedLLMServer,
    openai_provider: OpenAICompatibleProvider,
    openai_sdk: openai.AsyncOpenAI,
) -> None:
    request = rich_request()
    server.enqueue(Reply(text="a"), Reply(text="b"))
    await openai_sdk.chat.completions.create(**_openai_sdk_params(openai_provider, request))
    await openai_provider.complete(request)
    by_sdk, by_provider = server.requests
    _assert_same_openai_request(by_sdk, by_provider)


def _anthropic_sdk_params(provider: AnthropicProvider, request: ChatRequest) -> dict[str, Any]:
    """The parameters the provider used to hand ``messages.create()``."""
    system, turns, tools = to_anthropic_request(request.messages, request.tools)
    params: dict[str, Any] = {
        "model": provider.model,
        "messages": turns,
        "max_tokens": request.max_output_tokens or DEFAULT_MAX_TOKENS,
    }
    if system:
        params["system"] = system
    if tools:
        params["tools"] = tools
    return params


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("with_tools", [True, False])
async def test_the_anthropic_provider_sends_the_bytes_the_sdk_would_send(
    server: ScriptedLLMServer,
    anthropic_provider: AnthropicProvider,
    stream: bool,
    with_tools: bool,
) -> None:
    request = rich_request(streamed_tools=with_tools)
    server.enqueue(Reply(text="a"), Reply(text="b"))
    params = _anthropic_sdk_params(anthropic_provider, request)
    if stream:
        events = await anthropic_provider._client.messages.create(**params, stream=True)
        async for _ in events:
            pass
        await collect(anthropic_provider.stream(request))
    else:
        await anthropic_provider._client.messages.create(**params)
        await anthropic_provider.complete(request)
    by_sdk, by_provider = server.requests
    _assert_same_request(by_sdk, by_provider)


_CALL = ToolCall(id="c1", name="read", arguments="not json")
_AWKWARD_HISTORIES = {
    "starts with the assistant": [Message.assistant("hi"), Message.user("yo")],
    "only a system prompt": [Message.system("be brief")],
    "nothing at all": [],
    "text before a tool result in one user turn": [
        Message.user("first"),
        Message.assistant(None, (_CALL,)),
        Message.user("interjection"),
        Message.tool("c1", "result"),
        Message.tool("c1", ""),
        Message.user("   "),
    ],
    "blank assistant and blank system between turns": [
        Message.user("a"),
        Message.assistant("  "),
        Message.system(" "),
        Message.user("b"),
        Message.assistant(""),
    ],
}


@pytest.mark.parametrize("name", sorted(_AWKWARD_HISTORIES))
async def test_anthropic_turns_are_merged_exactly_as_the_dict_translation_merges_them(
    anthropic_provider: AnthropicProvider, name: str
) -> None:
    messages = _AWKWARD_HISTORIES[name]
    request = ChatRequest(messages=messages)
    system, turns, _ = to_anthropic_request(messages)
    expected: dict[str, Any] = {"max_tokens": DEFAULT_MAX_TOKENS, "messages": turns}
    expected["model"] = anthropic_provider.model
    if system:
        expected["system"] = system
    assert await anthropic_provider._body(request, stream=False) == dumps(expected)


_KINDS = st.sampled_from(
    ["system", "blank-system", "user", "blank-user", "said", "silent", "calls", "result"]
)


def _message_of(kind: str, i: int) -> Message:
    """One message of a kind the Anthropic merge treats differently."""
    call = ToolCall(id=f"c{i}", name="t", arguments=f'{{"n": {i}}}')
    return {
        "system": lambda: Message.system(f"note {i}"),
        "blank-system": lambda: Message.system(" "),
        "user": lambda: Message.user(f"u{i}"),
        "blank-user": lambda: Message.user(""),
        "said": lambda: Message.assistant(f"a{i}"),
        "silent": lambda: Message.assistant(""),
        "calls": lambda: Message.assistant(f"a{i}" if i % 2 else "", (call,)),
        "result": lambda: Message.tool(f"c{i - 1}", f"r{i}"),
    }[kind]()


@settings(max_examples=300, deadline=None)
@given(kinds=st.lists(_KINDS, max_size=40))
async def test_anthropic_turns_match_the_dict_translation_for_any_history(
    kinds: list[str],
) -> None:
    provider = AnthropicProvider(model="m", api_key="k", base_url="http://127.0.0.1:9")
    messages = [_message_of(kind, i) for i, kind in enumerate(kinds)]
    system, turns, _ = to_anthropic_request(messages)
    expected: dict[str, Any] = {"max_tokens": DEFAULT_MAX_TOKENS, "messages": turns}
    expected["model"] = provider.model
    if system:
        expected["system"] = system
    assert await provider._body(ChatRequest(messages=messages), stream=False) == dumps(expected)
    await provider.aclose()
