"""One LLM provider per agent model setting, created on first use and closed at shutdown."""

from __future__ import annotations

from collections.abc import Mapping

from duragent.agents import Agent
from duragent.llm import LLMProvider, RetryPolicy, build_provider

__all__ = ["ProviderPool"]


class ProviderPool:
    """Providers keyed by (provider, model, base_url, timeout); shared by an agent's sessions."""

    def __init__(
        self, *, policy: RetryPolicy | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self._providers: dict[tuple[str, str, str | None, int], LLMProvider] = {}
        self._policy = policy
        self._env = env

    def for_agent(self, agent: Agent) -> LLMProvider:
        """The provider answering for ``agent`` (raises LLMError when it cannot be built)."""
        model = agent.model
        timeout = agent.spec.session.llm_timeout_seconds
        key = (model.provider, model.name, model.base_url, timeout)
        provider = self._providers.get(key)
        if provider is None:
            provider = build_provider(
                provider=model.provider,
                model=model.name,
                base_url=model.base_url,
                timeout_seconds=timeout,
                policy=self._policy,
                env=self._env,
            )
            self._providers[key] = provider
        return provider

    async def aclose(self) -> None:
        """Close every provider's connections."""
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            await provider.aclose()
