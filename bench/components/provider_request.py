"""Cost of one model call as the history grows: long sessions through both providers.

For 1, 100, 1,000 and 2,000 messages, each provider streams an answer from the scripted fake
server (``duragent.testing``, real HTTP on 127.0.0.1, run in its own thread). Columns, in ms
(best of a few calls):

- ``call``: the whole streamed call through the provider (pre-built body, cached fragments);
- ``sdk create``: the same request through the SDK's own ``create()`` (the OpenAI SDK's own
  client for OpenAI, which the provider no longer uses: specs/202612050800.openai-transport.md;
  the Anthropic provider's SDK client);
- ``build``: building the body alone, warm cache (the per-turn cost in a long session);
- ``block``: the longest CPU stretch the event loop was held while building a cold body.

Target: ``call`` flat in the history (2,000 messages ≤ a few ms above 1), ``block`` ≤ 1 ms.

    .venv/bin/python -m bench.components.provider_request
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import openai

from duragent.llm.anthropic_provider import (
    DEFAULT_MAX_TOKENS,
    AnthropicProvider,
    to_anthropic_request,
)
from duragent.llm.openai_compat import OpenAICompatibleProvider, to_openai_messages
from duragent.llm.types import ChatRequest
from duragent.testing import ScriptedLLMServer
from duragent.testing.conversations import long_history
from duragent.testing.script import Reply

SIZES = (1, 100, 1000, 2000)
CALLS = 5


async def best(server: ScriptedLLMServer, call: Callable[[], Awaitable[None]]) -> float:
    """The fastest of ``CALLS`` calls, in ms."""
    times = []
    for _ in range(CALLS):
        server.enqueue(Reply(text="ok"))
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return min(times) * 1000


async def longest_block(work: Awaitable[Any]) -> float:
    """The longest CPU stretch (ms) between two turns of a heartbeat task while ``work`` runs."""
    done = False
    gaps: list[float] = []

    async def beat() -> None:
        last = time.thread_time()
        while not done:
            await asyncio.sleep(0)
            now = time.thread_time()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(beat())
    await asyncio.sleep(0)
    await work
    done = True
    await task
    return max(gaps) * 1000


async def row(
    server: ScriptedLLMServer,
    provider: OpenAICompatibleProvider | AnthropicProvider,
    size: int,
    sdk: openai.AsyncOpenAI,
) -> str:
    """One line of the table for one provider and history size (``sdk``: the OpenAI SDK's
    own client, the path the provider took before it posted through aiohttp)."""
    request = ChatRequest(messages=long_history(size))
    block = await longest_block(provider._body(request, stream=True))  # cold cache

    async def through_provider() -> None:
        async for _ in provider.stream(request):
            pass

    async def through_sdk() -> None:
        stream: Any
        if isinstance(provider, OpenAICompatibleProvider):
            openai_params: dict[str, Any] = {
                "model": provider.model,
                "messages": to_openai_messages(list(request.messages)),
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            stream = await sdk.chat.completions.create(**openai_params)
        else:
            system, turns, _ = to_anthropic_request(request.messages)
            anthropic_params: dict[str, Any] = {
                "model": provider.model,
                "messages": turns,
                "max_tokens": DEFAULT_MAX_TOKENS,
                "system": system,
                "stream": True,
            }
            stream = await provider._client.messages.create(**anthropic_params)
        async for _ in stream:
            pass

    call = await best(server, through_provider)
    by_sdk = await best(server, through_sdk)
    builds = []
    for _ in range(CALLS):
        started = time.perf_counter()
        await provider._body(request, stream=True)
        builds.append(time.perf_counter() - started)
    build = min(builds) * 1000
    name = "openai" if isinstance(provider, OpenAICompatibleProvider) else "anthropic"
    return f"{name:<10}{size:>9}{call:>10.2f}{by_sdk:>13.2f}{build:>9.3f}{block:>9.3f}"


async def main() -> None:
    server = ScriptedLLMServer().start_in_thread()
    try:
        providers: list[OpenAICompatibleProvider | AnthropicProvider] = [
            OpenAICompatibleProvider(
                name="openai", model="gpt-test", base_url=server.openai_base_url, api_key="k"
            ),
            AnthropicProvider(model="claude-test", api_key="k", base_url=server.anthropic_base_url),
        ]
        print(
            f"{'provider':<10}{'messages':>9}{'call':>10}{'sdk create':>13}{'build':>9}{'block':>9}"
        )
        sdk = openai.AsyncOpenAI(api_key="k", base_url=server.openai_base_url, max_retries=0)
        for provider in providers:
            for size in SIZES:
                print(await row(server, provider, size, sdk), flush=True)
            await provider.aclose()
        await sdk.close()
    finally:
        server.stop_thread()


if __name__ == "__main__":
    asyncio.run(main())
