"""Helpers shared by the provider tests (fixtures live in conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from duragent.core.messages import Message
from duragent.llm.base import LLMProvider
from duragent.llm.retry import ResilientProvider, RetryPolicy
from duragent.llm.types import ChatRequest, ChatResponse, ResponseDone, StreamEvent, TextDelta

OPENAI_MODEL = "gpt-test"
ANTHROPIC_MODEL = "claude-test"
HELLO = ChatRequest(messages=[Message.user("hello")])


class RecordedSleeps:
    """A ``sleep`` for ResilientProvider that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def resilient(
    inner: LLMProvider,
    sleeps: RecordedSleeps,
    *,
    timeout_seconds: float = 5,
    idle_seconds: float | None = None,
    max_attempts: int = 4,
) -> ResilientProvider:
    """``inner`` with retries whose waits are recorded, not slept."""
    return ResilientProvider(
        inner,
        timeout_seconds=timeout_seconds,
        idle_seconds=idle_seconds,
        policy=RetryPolicy(max_attempts=max_attempts),
        sleep=sleeps,
    )


async def collect(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    """Every event of a stream."""
    return [event async for event in stream]


def deltas(events: list[StreamEvent]) -> list[str]:
    """The text pieces of a stream, in order."""
    return [e.text for e in events if isinstance(e, TextDelta)]


def final(events: list[StreamEvent]) -> ChatResponse:
    """The response of the single ResponseDone, which must be the last event."""
    done = [e for e in events if isinstance(e, ResponseDone)]
    assert len(done) == 1, events
    assert events[-1] is done[0]
    return done[0].response


async def answer(provider: LLMProvider, request: ChatRequest, *, stream: bool) -> ChatResponse:
    """The response through ``complete`` or assembled from ``stream``."""
    if stream:
        return final(await collect(provider.stream(request)))
    return await provider.complete(request)


async def drain_into(stream: AsyncIterator[StreamEvent], texts: list[str]) -> None:
    """Read a stream, appending each text delta to ``texts`` as it arrives (kept on error)."""
    async for event in stream:
        if isinstance(event, TextDelta):
            texts.append(event.text)  # noqa: PERF401 - keep pieces read before an error
