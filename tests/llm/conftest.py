"""Fixtures for provider tests: a fake LLM server on a real socket and providers pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from duragent.llm.anthropic_provider import AnthropicProvider
from duragent.llm.base import LLMProvider
from duragent.llm.openai_compat import OpenAICompatibleProvider
from duragent.testing import ScriptedLLMServer
from tests.llm.helpers import ANTHROPIC_MODEL, OPENAI_MODEL


@pytest.fixture
async def server() -> AsyncIterator[ScriptedLLMServer]:
    async with ScriptedLLMServer() as fake:
        yield fake


@pytest.fixture
async def openai_provider(server: ScriptedLLMServer) -> AsyncIterator[OpenAICompatibleProvider]:
    provider = OpenAICompatibleProvider(
        name="openai",
        model=OPENAI_MODEL,
        base_url=server.openai_base_url,
        api_key="sk-test",
        timeout_seconds=5,
    )
    yield provider
    await provider.aclose()


@pytest.fixture
async def anthropic_provider(server: ScriptedLLMServer) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(
        model=ANTHROPIC_MODEL,
        api_key="sk-ant-test",
        base_url=server.anthropic_base_url,
        timeout_seconds=5,
    )
    yield provider
    await provider.aclose()


@pytest.fixture(params=["openai", "anthropic"])
def wire(request: pytest.FixtureRequest) -> str:
    """Which API the test runs against; tests using it run once per wire format."""
    value: str = request.param
    return value


@pytest.fixture
async def make_provider(
    server: ScriptedLLMServer, wire: str
) -> AsyncIterator[Callable[..., LLMProvider]]:
    """Build the ``wire`` provider with a given SDK timeout; every one is closed afterwards."""
    made: list[LLMProvider] = []

    def make(timeout_seconds: float = 5) -> LLMProvider:
        provider: LLMProvider
        if wire == "openai":
            provider = OpenAICompatibleProvider(
                name="openai",
                model=OPENAI_MODEL,
                base_url=server.openai_base_url,
                api_key="sk-test",
                timeout_seconds=timeout_seconds,
            )
        else:
            provider = AnthropicProvider(
                model=ANTHROPIC_MODEL,
                api_key="sk-ant-test",
                base_url=server.anthropic_base_url,
                timeout_seconds=timeout_seconds,
            )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()
