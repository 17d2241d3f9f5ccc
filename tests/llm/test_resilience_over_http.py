"""ResilientProvider around the real SDK providers, against scripted faults on a real socket.

Every test runs once per wire format (``wire`` fixture: OpenAI and Anthropic). Waits between
attempts are recorded by a fake ``sleep`` instead of slept, so the delays can be asserted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from duragent.errors import (
    ContextLengthExceededError,
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
)
from duragent.llm.base import LLMProvider
from duragent.llm.retry import RetryPolicy
from duragent.llm.types import TextDelta
from duragent.testing import Fault, Reply, ScriptedLLMServer, ToolCallReply
from tests.llm.helpers import (
    HELLO,
    RecordedSleeps,
    answer,
    collect,
    deltas,
    drain_into,
    final,
    resilient,
)

MakeProvider = Callable[..., LLMProvider]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_429_with_retry_after_waits_exactly_that_long_then_succeeds(
    server: ScriptedLLMServer, make_provider: MakeProvider, stream: bool
) -> None:
    server.enqueue(Fault.rate_limited(retry_after=2.5), Reply(text="made it"))
    sleeps = RecordedSleeps()
    response = await answer(resilient(make_provider(), sleeps), HELLO, stream=stream)
    assert response.content == "made it"
    assert sleeps.delays == [2.5]
    assert len(server.requests) == 2


async def test_a_huge_retry_after_is_capped_by_the_policy(
    server: ScriptedLLMServer, make_provider: MakeProvider
) -> None:
    server.enqueue(Fault.rate_limited(retry_after=86400), Reply(text="ok"))
    sleeps = RecordedSleeps()
    await resilient(make_provider(), sleeps).complete(HELLO)
    assert sleeps.delays == [RetryPolicy().max_retry_after]


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_a_server_error_is_retried_after_a_backoff_within_the_policy_bounds(
    server: ScriptedLLMServer, make_provider: MakeProvider, status: int
) -> None:
    server.enqueue(Fault.server_error(status), Fault.server_error(status), Reply(text="ok"))
    sleeps = RecordedSleeps()
    response = await resilient(make_provider(), sleeps).complete(HELLO)
    assert response.content == "ok"
    assert len(server.requests) == 3
    policy = RetryPolicy()
    first, second = sleeps.delays
    assert policy.initial_delay / 2 <= first <= policy.initial_delay
    base = policy.initial_delay * policy.multiplier
    assert base / 2 <= second <= base


async def test_a_server_error_with_retry_after_waits_as_told(
    server: ScriptedLLMServer, make_provider: MakeProvider
) -> None:
    server.enqueue(Fault.server_error(503, retry_after=4), Reply(text="ok"))
    sleeps = RecordedSleeps()
    await resilient(make_provider(), sleeps).complete(HELLO)
    assert sleeps.delays == [4]


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (Fault.unauthorized(401), LLMAuthError),
        (Fault.unauthorized(403), LLMAuthError),
        (Fault.bad_request(), LLMBadRequestError),
        (Fault(status=404), LLMBadRequestError),
        (Fault(status=422), LLMBadRequestError),
        (Fault.context_length_exceeded(), ContextLengthExceededError),
    ],
    ids=["401", "403", "400", "404", "422", "context_length"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_errors_only_a_different_request_can_fix_are_not_retried(
    server: ScriptedLLMServer,
    make_provider: MakeProvider,
    fault: Fault,
    error: type[LLMError],
    stream: bool,
) -> None:
    server.enqueue(fault, Reply(text="must not be reached"))
    sleeps = RecordedSleeps()
    with pytest.raises(error) as caught:
        await answer(resilient(make_provider(), sleeps), HELLO, stream=stream)
    assert not caught.value.retryable
    assert len(server.requests) == 1
    assert sleeps.delays == []


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_attempts_are_bounded_by_max_attempts(
    server: ScriptedLLMServer, make_provider: MakeProvider, stream: bool
) -> None:
    server.enqueue(*[Fault.server_error(500)] * 5, Reply(text="too late"))
    sleeps = RecordedSleeps()
    provider = resilient(make_provider(), sleeps, max_attempts=3)
    with pytest.raises(LLMServerError) as caught:
        await answer(provider, HELLO, stream=stream)
    assert caught.value.status == 500
    assert len(server.requests) == 3
    assert len(sleeps.delays) == 2


async def test_the_per_call_timeout_raises_llm_timeout_error(
    server: ScriptedLLMServer, make_provider: MakeProvider
) -> None:
    server.enqueue(Reply(text="too slow", delay=600))  # only a timeout ends the wait
    sleeps = RecordedSleeps()
    provider = resilient(
        make_provider(timeout_seconds=600), sleeps, timeout_seconds=0.3, max_attempts=1
    )
    with pytest.raises(LLMTimeoutError):
        await asyncio.wait_for(provider.complete(HELLO), 60)  # the 0.3 s, not the SDK's 600
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_the_sdk_timeout_alone_also_raises_llm_timeout_error(
    server: ScriptedLLMServer, make_provider: MakeProvider, stream: bool
) -> None:
    server.enqueue(Reply(text="too slow", delay=600))  # only a timeout ends the wait
    with pytest.raises(LLMTimeoutError):
        await asyncio.wait_for(answer(make_provider(timeout_seconds=0.3), HELLO, stream=stream), 60)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_timed_out_attempt_is_retried_and_the_next_one_can_succeed(
    server: ScriptedLLMServer, make_provider: MakeProvider, stream: bool
) -> None:
    server.enqueue(Reply(text="too slow", delay=2), Reply(text="quick"))
    sleeps = RecordedSleeps()
    provider = resilient(make_provider(), sleeps, timeout_seconds=0.3)
    response = await answer(provider, HELLO, stream=stream)
    assert response.content == "quick"
    assert len(server.requests) == 2
    assert len(sleeps.delays) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_malformed_json_raises_llm_response_error_and_is_not_retried(
    server: ScriptedLLMServer, make_provider: MakeProvider, stream: bool
) -> None:
    server.enqueue(Reply(text="garbled", malformed=True), Reply(text="unused"))
    sleeps = RecordedSleeps()
    with pytest.raises(LLMResponseError):
        await answer(resilient(make_provider(), sleeps), HELLO, stream=stream)
    assert len(server.requests) == 1


async def test_a_plain_answer_cut_mid_body_is_a_connection_error_and_is_retried(
    server: ScriptedLLMServer, make_provider: MakeProvider
) -> None:
    server.enqueue(Reply(text="lost", cut_after=10), Reply(text="again"))
    sleeps = RecordedSleeps()
    response = await resilient(make_provider(), sleeps).complete(HELLO)
    assert response.content == "again"
    assert len(server.requests) == 2


async def test_a_stream_failing_before_its_first_event_is_retried(
    server: ScriptedLLMServer, make_provider: MakeProvider
) -> None:
    server.enqueue(Reply(text="never seen", cut_after=0), Reply(text="second attempt"))
    sleeps = RecordedSleeps()
    events = await collect(resilient(make_provider(), sleeps).stream(HELLO))
    assert deltas(events) == ["second ", "attempt"]
    assert final(events).content == "second attempt"
    assert len(server.requests) == 2
    assert len(sleeps.delays) == 1


async def test_a_stream_failing_after_text_was_yielded_is_not_retried(
    server: ScriptedLLMServer, make_provider: MakeProvider, wire: str
) -> None:
    # after two text pieces: OpenAI sends a role chunk first; Anthropic message_start,
    # content_block_start and a ping
    cut = 3 if wire == "openai" else 5
    server.enqueue(Reply(text="one two three", cut_after=cut), Reply(text="must not be sent"))
    sleeps = RecordedSleeps()
    received: list[str] = []
    with pytest.raises(LLMConnectionError):
        await drain_into(resilient(make_provider(), sleeps).stream(HELLO), received)
    assert received == ["one ", "two "]
    assert len(server.requests) == 1
    assert sleeps.delays == []


async def test_a_stream_that_stalls_after_text_times_out_without_a_retry(
    server: ScriptedLLMServer, make_provider: MakeProvider, wire: str
) -> None:
    stall = 2 if wire == "openai" else 4  # right after the first text piece
    server.enqueue(Reply(text="one two three", stall_after=stall), Reply(text="unused"))
    sleeps = RecordedSleeps()
    provider = resilient(make_provider(), sleeps, timeout_seconds=0.3)
    received: list[str] = []
    with pytest.raises(LLMTimeoutError):
        await drain_into(provider.stream(HELLO), received)
    assert received == ["one "]
    assert len(server.requests) == 1


async def test_a_stream_silent_past_the_idle_limit_fails_long_before_the_call_timeout(
    server: ScriptedLLMServer, make_provider: MakeProvider, wire: str
) -> None:
    stall = 2 if wire == "openai" else 4  # right after the first text piece
    server.enqueue(Reply(text="one two three", stall_after=stall), Reply(text="unused"))
    sleeps = RecordedSleeps()
    provider = resilient(make_provider(), sleeps, timeout_seconds=30, idle_seconds=0.2)
    received: list[str] = []
    with pytest.raises(LLMTimeoutError, match=r"Stream idle timeout: .* nothing for 0.2s"):
        await drain_into(provider.stream(HELLO), received)
    assert received == ["one "]
    assert len(server.requests) == 1


async def test_a_slow_but_steady_stream_is_not_cut_by_the_idle_limit(
    server: ScriptedLLMServer, make_provider: MakeProvider
) -> None:
    # six pieces 0.1 s apart: the whole stream takes longer than the idle limit
    server.enqueue(Reply(text="a b c d e f", chunk_delay=0.1))
    provider = resilient(make_provider(), RecordedSleeps(), idle_seconds=0.4)
    events = await collect(provider.stream(HELLO))
    assert final(events).content == "a b c d e f"


async def test_time_the_caller_spends_with_an_item_is_not_counted_as_idle(
    server: ScriptedLLMServer, make_provider: MakeProvider
) -> None:
    server.enqueue(Reply(text="a b c"))
    provider = resilient(make_provider(), RecordedSleeps(), idle_seconds=0.1)
    texts: list[str] = []
    async for event in provider.stream(HELLO):
        if isinstance(event, TextDelta):
            texts.append(event.text)
            await asyncio.sleep(0.25)  # a slow SSE client, say
    assert "".join(texts) == "a b c"


async def test_a_long_tool_call_without_text_is_not_taken_for_an_idle_model(
    server: ScriptedLLMServer, make_provider: MakeProvider
) -> None:
    # argument fragments 0.1 s apart for about a second, never a word of text
    call = ToolCallReply(name="write", arguments={"text": "y" * 80}, id="c1")
    server.enqueue(Reply(tool_calls=[call], chunk_delay=0.1))
    provider = resilient(make_provider(), RecordedSleeps(), idle_seconds=0.4)
    events = await collect(provider.stream(HELLO))
    assert final(events).tool_calls[0].id == "c1"
    assert len(server.requests) == 1
