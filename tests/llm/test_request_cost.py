"""A model call's cost does not grow with the history the way the SDK's transform made it.

The same provider streams an answer for a 10- and a 2,000-message history from the real fake
server over HTTP, and the work each call does is counted: function calls made in the thread
(``tests/work.py``), which a busy machine does not change the way it changes a timing.
Through the SDKs' ``create()`` the 2,000-message call made ~140x (OpenAI) and ~16x
(Anthropic) the calls of the short one (the SDK's typed transform, per message); with
pre-built bodies it makes about as many (~1.05x). The timings are
``bench/components/provider_request.py``.
"""

from __future__ import annotations

import asyncio
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
from tests.work import calls_awaiting

_MAX_RATIO = 3.0


async def _best_calls(provider: LLMProvider, server: ScriptedLLMServer) -> tuple[int, int]:
    """The least work of three calls with 10 messages and of three with 2,000.

    The least: the first call of each size also fills the provider's caches of encoded
    messages (once per session, not per turn).
    """
    requests = {size: ChatRequest(messages=long_history(size)) for size in (10, 2000)}
    least = dict.fromkeys(requests, 1 << 62)
    for _ in range(3):
        for size, request in requests.items():
            server.enqueue(Reply(text="ok"))
            calls, _ = await calls_awaiting(collect(provider.stream(request)))
            least[size] = min(least[size], calls)
    return least[10], least[2000]


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
