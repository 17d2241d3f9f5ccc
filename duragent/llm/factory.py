"""Build a provider from an agent's model settings: name → provider, URL and credentials.

| provider     | default base_url                 | key from            |
|--------------|----------------------------------|---------------------|
| openai       | https://api.openai.com/v1        | OPENAI_API_KEY      |
| openrouter   | https://openrouter.ai/api/v1     | OPENROUTER_API_KEY  |
| ollama       | http://localhost:11434/v1        | none needed         |
| anthropic    | https://api.anthropic.com        | ANTHROPIC_API_KEY   |
| offline      | (in process)                     | none                |
| other names  | ``base_url`` required            | ``<NAME>_API_KEY`` if set, else none |

Every provider returned is wrapped in ``ResilientProvider`` (timeout + retries).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from duragent.errors import LLMAuthError, LLMBadRequestError
from duragent.llm.base import LLMProvider
from duragent.llm.offline import OfflineProvider
from duragent.llm.retry import ResilientProvider, RetryPolicy

__all__ = ["PROVIDERS", "ProviderInfo", "build_provider", "credential_problem", "key_env_of"]


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """Where a known provider lives and which variable holds its key."""

    base_url: str | None
    key_env: str | None


PROVIDERS: dict[str, ProviderInfo] = {
    "openai": ProviderInfo("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openrouter": ProviderInfo("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "ollama": ProviderInfo("http://localhost:11434/v1", None),
    "anthropic": ProviderInfo("https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "offline": ProviderInfo(None, None),
}


def _custom_key_env(provider: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", provider.upper()).strip("_") + "_API_KEY"


def key_env_of(provider: str) -> str | None:
    """The variable ``provider``'s key is read from (the table above), None when it needs none."""
    info = PROVIDERS.get(provider)
    return _custom_key_env(provider) if info is None else info.key_env


def credential_problem(
    provider: str, base_url: str | None, env: Mapping[str, str] | None = None
) -> str | None:
    """A sentence saying which credential is missing, or None when the provider can be called.

    A custom ``base_url`` on a known provider (e.g. a local proxy) does not require the key.
    """
    environ = os.environ if env is None else env
    info = PROVIDERS.get(provider)
    if info is None or info.key_env is None:
        return None
    if base_url and base_url.rstrip("/") != (info.base_url or "").rstrip("/"):
        return None
    if environ.get(info.key_env):
        return None
    return f"{info.key_env} is not set; export it to use provider '{provider}'"


def build_provider(
    *,
    provider: str,
    model: str,
    base_url: str | None = None,
    timeout_seconds: float = 300,
    idle_timeout_seconds: float | None = None,
    policy: RetryPolicy | None = None,
    env: Mapping[str, str] | None = None,
) -> LLMProvider:
    """The provider for these settings, with timeout and retries applied."""
    environ = os.environ if env is None else env
    inner: LLMProvider
    if provider == "offline":
        inner = OfflineProvider(model=model)
    else:
        info = PROVIDERS.get(provider)
        url = base_url or (info.base_url if info else None)
        if url is None:
            raise LLMBadRequestError(
                f"provider '{provider}' needs spec.model.base_url", provider=provider
            )
        problem = credential_problem(provider, base_url, environ)
        if problem:
            raise LLMAuthError(problem, provider=provider)
        key_env = info.key_env if info else _custom_key_env(provider)
        key = (environ.get(key_env) if key_env else None) or None
        # The providers are imported on first use: their imports (the Anthropic SDK, aiohttp)
        # cost start-up time that every CLI command and crash-recovery restart would pay.
        if provider == "anthropic":
            from duragent.llm.anthropic_provider import AnthropicProvider

            # the SDK refuses to send a request without some key
            inner = AnthropicProvider(
                model=model,
                api_key=key or "not-needed",
                base_url=url,
                timeout_seconds=timeout_seconds,
            )
        else:
            from duragent.llm.openai_compat import OpenAICompatibleProvider

            inner = OpenAICompatibleProvider(
                name=provider,
                model=model,
                base_url=url,
                api_key=key,  # none: no Authorization header at all (e.g. Ollama)
                timeout_seconds=timeout_seconds,
            )
    return ResilientProvider(
        inner, timeout_seconds=timeout_seconds, idle_seconds=idle_timeout_seconds, policy=policy
    )
