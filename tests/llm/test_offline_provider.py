"""OfflineProvider: the deterministic, network-free model behind ``provider: offline``."""

from __future__ import annotations

from duragent.core.messages import Message, ToolCall, ToolDefinition
from duragent.llm.offline import OFFLINE_MODEL_NAME, OfflineProvider, parse_call_lines
from duragent.llm.types import ChatRequest, TextDelta
from tests.llm.helpers import collect, final

BASH = ToolDefinition(name="bash", description="Run a command")


def ask(text: str, *, tools: tuple[ToolDefinition, ...] = (BASH,)) -> ChatRequest:
    return ChatRequest(messages=[Message.system("sys"), Message.user(text)], tools=tools)


async def test_the_same_request_always_gets_the_same_reply() -> None:
    request = ask('hello\n!call bash {"command": "date"}')
    first = await OfflineProvider().complete(request)
    second = await OfflineProvider().complete(request)
    again = await OfflineProvider().complete(ask('hello\n!call bash {"command": "date"}'))
    assert first == second == again


async def test_a_reply_is_labelled_and_quotes_the_latest_user_message() -> None:
    response = await OfflineProvider().complete(ask("What is the weather?"))
    assert response.content.startswith("[offline model]")
    assert "What is the weather?" in response.content
    assert response.tool_calls == ()
    assert response.finish_reason == "stop"
    assert response.model == OFFLINE_MODEL_NAME
    assert response.usage is not None
    assert response.usage.prompt_tokens > 0
    assert response.usage.completion_tokens > 0


async def test_a_long_message_is_quoted_only_in_part() -> None:
    response = await OfflineProvider().complete(ask("x" * 1000))
    assert "x" * 200 + "…" in response.content
    assert "x" * 201 not in response.content


async def test_a_call_line_becomes_a_tool_call() -> None:
    response = await OfflineProvider().complete(ask('please\n!call bash {"command": "date"}'))
    assert len(response.tool_calls) == 1
    call = response.tool_calls[0]
    assert (call.name, call.arguments) == ("bash", '{"command": "date"}')
    assert call.id.startswith("call_")
    assert response.finish_reason == "tool_calls"
    assert response.content.startswith("[offline model]")


async def test_several_call_lines_become_several_calls_in_order() -> None:
    text = '!call bash {"command": "date"}\nsome prose\n  !call bash {"command": "ls"}\n!call fetch'
    response = await OfflineProvider().complete(ask(text))
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("bash", '{"command": "date"}'),
        ("bash", '{"command": "ls"}'),
        ("fetch", "{}"),
    ]
    assert len({c.id for c in response.tool_calls}) == 3
    assert "not all are offered" in response.content


async def test_malformed_arguments_are_passed_through_verbatim() -> None:
    response = await OfflineProvider().complete(ask('!call bash {"command": "da'))
    assert response.tool_calls[0].arguments == '{"command": "da'


def test_call_lines_are_parsed_with_optional_arguments() -> None:
    assert parse_call_lines("!call a\n!call b [1]\n!call   \nno !call c") == [
        ("a", "{}"),
        ("b", "[1]"),
    ]


async def test_after_trailing_tool_results_it_summarises_and_calls_nothing() -> None:
    call = ToolCall(id="c1", name="bash", arguments='{"command": "date"}')
    other = ToolCall(id="c2", name="fetch", arguments="{}")
    request = ChatRequest(
        messages=[
            Message.user('!call bash {"command": "date"}\n!call fetch'),
            Message.assistant("calling", (call, other)),
            Message.tool("c1", "Mon Jan 1"),
            Message.tool("c2", "y" * 400),
        ],
        tools=[BASH],
    )
    response = await OfflineProvider().complete(request)
    assert response.tool_calls == ()
    assert response.finish_reason == "stop"
    assert response.content.startswith("[offline model] Tool results:")
    assert "- bash: Mon Jan 1" in response.content
    assert "- fetch: " + "y" * 300 + "…" in response.content


async def test_streaming_yields_the_words_then_one_response_done() -> None:
    provider = OfflineProvider()
    request = ask("stream me")
    events = await collect(provider.stream(request))
    pieces = [e.text for e in events if isinstance(e, TextDelta)]
    response = final(events)
    assert len(pieces) > 5
    assert all(p.count(" ") <= 1 for p in pieces)
    assert "".join(pieces) == response.content
    assert response == await provider.complete(request)


async def test_streaming_a_tool_call_carries_the_calls_in_the_final_event() -> None:
    events = await collect(OfflineProvider().stream(ask("!call bash")))
    assert [c.name for c in final(events).tool_calls] == ["bash"]


async def test_closing_is_harmless() -> None:
    provider = OfflineProvider()
    await provider.aclose()
    assert (await provider.complete(ask("still works"))).content
