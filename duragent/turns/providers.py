"""One LLM provider per agent model setting, built off the event loop and closed at shutdown.

Building a provider imports its SDK on first use (``openai`` ~1–2 s, ``anthropic`` as much):
on the loop thread that would freeze every session, health check and stream for that long.
So providers are built in a worker thread, concurrent first messages share one build, and the
runtime warms the pool for its agents at start so the first message rarely waits at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping

from duragent.agents import Agent
from duragent.errors import LLMError
from duragent.llm import LLMProvider, ResilientProvider, RetryPolicy, build_provider
from duragent.observability.metrics import Metrics, error_kind

__all__ = ["ProviderPool"]

log = logging.getLogger(__name__)

_Key = tuple[str, str, str | None, int]


class ProviderPool:
    """Providers keyed by (provider, model, base_url, timeout); shared by an agent's sessions."""

    def __init__(
        self,
        *,
        policy: RetryPolicy | None = None,
        env: Mapping[str, str] | None = None,
        idle_timeout_seconds: float | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._metrics = metrics
        self._providers: dict[_Key, LLMProvider] = {}
        self._building: dict[_Key, asyncio.Future[LLMProvider]] = {}  # builds under way
        self._policy = policy
        self._env = env
        self._idle_timeout = idle_timeout_seconds
        self._warming = 0  # warm() calls under way

    @property
    def warming(self) -> bool:
        """Whether providers are still being built ahead of the first message (``warm``)."""
        return self._warming > 0

    async def for_agent(self, agent: Agent) -> LLMProvider:
        """The provider answering for ``agent`` (raises LLMError when it cannot be built)."""
        return await self.for_model(agent, agent.model.name)

    async def for_model(self, agent: Agent, model_name: str) -> LLMProvider:
        """A provider for ``model_name`` with ``agent``'s provider, base URL and timeout.

        The summaries tier's summariser when ``summaries.model`` names a cheaper model.
        """
        model = agent.model
        timeout = agent.spec.session.llm_timeout_seconds
        key = (model.provider, model_name, model.base_url, timeout)
        provider = self._providers.get(key)
        if provider is not None:
            return provider
        build = self._building.get(key)
        if build is None:  # its own task: a turn cancelled meanwhile does not cancel the build
            build = asyncio.ensure_future(self._build(key, agent))
            build.add_done_callback(_retrieve)
            self._building[key] = build
        return await asyncio.shield(build)

    async def _build(self, key: _Key, agent: Agent) -> LLMProvider:
        try:
            provider = await asyncio.to_thread(
                build_provider,
                provider=agent.model.provider,
                model=key[1],
                base_url=agent.model.base_url,
                timeout_seconds=agent.spec.session.llm_timeout_seconds,
                idle_timeout_seconds=self._idle_timeout,
                policy=self._policy,
                env=self._env,
            )
        finally:
            del self._building[key]
        metrics = self._metrics
        if metrics is not None and isinstance(provider, ResilientProvider):
            model = key[1]
            provider.on_retry = lambda e: metrics.model_retries.labels(model, error_kind(e)).inc()
        self._providers[key] = provider
        return provider

    async def warm(self, agents: Iterable[Agent]) -> None:
        """Build the providers of ``agents`` ahead of their first message.

        A provider that cannot be built (a missing API key, say) is left for the turn that
        needs it, which reports the error to its chat.
        """
        self._warming += 1
        try:
            for agent in agents:
                try:
                    await self.for_agent(agent)
                except LLMError as exc:
                    log.debug("provider for agent '%s' not built ahead: %s", agent.name, exc)
                except Exception:
                    log.exception("provider for agent '%s' could not be built", agent.name)
        finally:
            self._warming -= 1

    async def aclose(self) -> None:
        """Close every provider's connections (builds under way are waited for first).

        After this a turn still running gets a fresh provider, which the next ``aclose``
        closes: nothing built is ever left unclosed by a finished ``aclose``.
        """
        while self._building:
            for build in list(self._building.values()):
                with contextlib.suppress(Exception):
                    await asyncio.shield(build)  # our caller's cancellation is not the build's
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            await provider.aclose()


def _retrieve(build: asyncio.Future[LLMProvider]) -> None:
    """Mark a failed build's error as seen (its waiters got it; there may be none left)."""
    if not build.cancelled():
        build.exception()
