"""build_provider and credential_problem: which provider, which URL, which key."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from duragent.core.messages import Message
from duragent.errors import LLMAuthError, LLMBadRequestError
from duragent.llm import ResilientProvider, RetryPolicy, build_provider, credential_problem
from duragent.llm.anthropic_provider import AnthropicProvider
from duragent.llm.base import LLMProvider
from duragent.llm.offline import OfflineProvider
from duragent.llm.openai_compat import OpenAICompatibleProvider
from duragent.llm.types import ChatRequest
from duragent.testing import Reply, ScriptedLLMServer

HELLO = ChatRequest(messages=[Message.user("hello")])


@pytest.fixture
async def built() -> AsyncIterator[list[LLMProvider]]:
    """Providers built by a test; closed afterwards so no HTTP client leaks."""
    providers: list[LLMProvider] = []
    yield providers
    for provider in providers:
        await provider.aclose()


@pytest.mark.parametrize(
    ("provider", "variable"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
    ],
)
def test_a_missing_key_is_an_auth_error_naming_the_variable(provider: str, variable: str) -> None:
    with pytest.raises(LLMAuthError, match=variable) as caught:
        build_provider(provider=provider, model="m", env={})
    assert caught.value.provider == provider
    problem = credential_problem(provider, None, env={})
    assert problem is not None
    assert variable in problem


def test_an_empty_key_counts_as_missing() -> None:
    with pytest.raises(LLMAuthError, match="OPENAI_API_KEY"):
        build_provider(provider="openai", model="m", env={"OPENAI_API_KEY": ""})


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openrouter"])
def test_a_present_key_is_no_problem(provider: str) -> None:
    env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "OPENROUTER_API_KEY": "k"}
    assert credential_problem(provider, None, env=env) is None


@pytest.mark.parametrize("provider", ["ollama", "offline"])
async def test_local_providers_need_no_key(provider: str, built: list[LLMProvider]) -> None:
    assert credential_problem(provider, None, env={}) is None
    built.append(build_provider(provider=provider, model="m", env={}))


def test_a_custom_provider_without_base_url_is_a_bad_request() -> None:
    with pytest.raises(LLMBadRequestError, match="base_url"):
        build_provider(provider="my-proxy", model="m", env={})


async def test_the_default_url_of_a_known_provider_still_needs_its_key() -> None:
    with pytest.raises(LLMAuthError, match="OPENAI_API_KEY"):
        build_provider(provider="openai", model="m", base_url="https://api.openai.com/v1/", env={})


async def test_openai_with_a_custom_base_url_needs_no_key_and_talks_to_that_url(
    built: list[LLMProvider],
) -> None:
    async with ScriptedLLMServer([Reply(text="via proxy")]) as server:
        provider = build_provider(
            provider="openai", model="gpt-x", base_url=server.openai_base_url, env={}
        )
        built.append(provider)
        assert (await provider.complete(HELLO)).content == "via proxy"
        assert server.last_request.json["model"] == "gpt-x"


async def test_anthropic_with_a_custom_base_url_needs_no_key_and_talks_to_that_url(
    built: list[LLMProvider],
) -> None:
    async with ScriptedLLMServer([Reply(text="via proxy")]) as server:
        provider = build_provider(
            provider="anthropic", model="claude-x", base_url=server.base_url, env={}
        )
        built.append(provider)
        assert (await provider.complete(HELLO)).content == "via proxy"
        assert server.last_request.path == "/v1/messages"


async def test_a_custom_provider_sends_its_own_named_key_when_set_and_none_without_it(
    built: list[LLMProvider],
) -> None:
    async with ScriptedLLMServer([Reply(text="a"), Reply(text="b")]) as server:
        keyed = build_provider(
            provider="my-proxy",
            model="m",
            base_url=server.openai_base_url,
            env={"MY_PROXY_API_KEY": "proxy-secret"},
        )
        keyless = build_provider(
            provider="my-proxy", model="m", base_url=server.openai_base_url, env={}
        )
        built.extend([keyed, keyless])
        await keyed.complete(HELLO)
        await keyless.complete(HELLO)
        first, second = server.requests
        assert first.headers["authorization"] == "Bearer proxy-secret"
        assert "authorization" not in second.headers


@pytest.mark.parametrize(
    ("provider", "env", "inner_type"),
    [
        ("openai", {"OPENAI_API_KEY": "k"}, OpenAICompatibleProvider),
        ("openrouter", {"OPENROUTER_API_KEY": "k"}, OpenAICompatibleProvider),
        ("ollama", {}, OpenAICompatibleProvider),
        ("anthropic", {"ANTHROPIC_API_KEY": "k"}, AnthropicProvider),
        ("offline", {}, OfflineProvider),
    ],
)
async def test_every_provider_comes_wrapped_in_a_resilient_provider(
    provider: str,
    env: dict[str, str],
    inner_type: type[object],
    built: list[LLMProvider],
) -> None:
    policy = RetryPolicy(max_attempts=2)
    result = build_provider(
        provider=provider, model="the-model", timeout_seconds=42, policy=policy, env=env
    )
    built.append(result)
    assert isinstance(result, ResilientProvider)
    assert isinstance(result.inner, inner_type)
    assert result.timeout_seconds == 42
    assert result.policy is policy
    assert (result.name, result.model) == (provider, "the-model")
