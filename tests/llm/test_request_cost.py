"""A model call's cost does not grow with the history the way the SDK's transform made it.

Ratios within one run (no absolute times): the same provider streams an answer for a 10- and a
2,000-message history from the real fake server over HTTP. Through ``chat.completions.create``
the 2,000-message call cost ~60x the short one (the SDK's typed transform, ~0.2-0.5 ms per
message); with pre-built bodies it is a few times (the fake server parsing 2,000 messages
in the same process dominates what is left).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable

import pytest

from duragent.llm.anthropic_provider import AnthropicProvider
from duragent.llm.base import LLMProvider
from duragent.llm.openai_compat import OpenAICompatibleProvider
from duragent.llm.types import ChatRequest
from duragent.testing import ScriptedLLMServer
from duragent.testing.conversations import long_history
from duragent.testing.script import Reply
from tests.llm.helpers import collect

_MAX_RATIO = 10.0


async def _best_calls(provider: LLMProvider, server: ScriptedLLMServer) -> tuple[float, float]:
    """The best of six calls with 10 messages and of six with 2,000, interleaved.

    Interleaved so that whatever else the machine is doing weighs on both alike (a ratio
    measured in one run, not a timed assertion).
    """
    requests = {size: ChatRequest(messages=long_history(size)) for size in (10, 2000)}
    best = dict.fromkeys(requests, float("inf"))
    for _ in range(6):
        for size, request in requests.items():
            server.enqueue(Reply(text="ok"))
            started = time.perf_counter()
            await collect(provider.stream(request))
            best[size] = min(best[size], time.perf_counter() - started)
    return best[10], best[2000]


async def test_an_openai_call_with_2000_messages_costs_a_few_short_calls_not_sixty(
    server: ScriptedLLMServer, openai_provider: LLMProvider
) -> None:
    short, long = await _best_calls(openai_provider, server)
    assert long <= _MAX_RATIO * short, (long, short)


async def test_an_anthropic_call_with_2000_messages_costs_a_few_short_calls(
    server: ScriptedLLMServer, anthropic_provider: LLMProvider
) -> None:
    short, long = await _best_calls(anthropic_provider, server)
    assert long <= _MAX_RATIO * short, (long, short)


async def _beats_while(work: Awaitable[object]) -> int:
    """How often another task got the event loop while ``work`` ran."""
    beats = 0
    done = False

    async def beat() -> None:
        nonlocal beats
        while not done:
            beats += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(beat())
    await asyncio.sleep(0)
    before = beats
    await work
    during = beats - before
    done = True
    await task
    return during


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_building_a_cold_2000_message_body_lets_other_tasks_run_in_between(
    openai_provider: OpenAICompatibleProvider, anthropic_provider: AnthropicProvider, wire: str
) -> None:
    provider = openai_provider if wire == "openai" else anthropic_provider
    request = ChatRequest(messages=long_history(2000))
    # ~10 ms of serialisation in 0.5 ms slices, plus the yield before the final join.
    assert await _beats_while(provider._body(request, stream=True)) >= 2
