"""Where each agent's model calls go, and what a reload changed about it.

An agent's ``spec.model`` decides which server receives every conversation *and the
provider key*. A reload that moves it (a new ``base_url``, another provider, so another key
variable) is what an edited ``agent.yaml`` would do to steal both, so the runtime compares
each reload with what the server started with and says so loudly: a WARNING in the log
naming the agent, the field and the old → new host (never a key's value), and the same
sentences in the reload's JSON answer (``endpoint_changes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from duragent.agents import Agent
from duragent.llm.factory import PROVIDERS, key_env_of

__all__ = ["Endpoint", "endpoint_changes", "endpoint_of"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An agent's model endpoint: provider, the host its calls reach and the key's variable."""

    provider: str
    host: str
    key_env: str | None


def _host(url: str | None) -> str:
    if not url:
        return "(none)"
    parts = urlsplit(url)
    return parts.netloc.rpartition("@")[2] or url  # never a user:password@ in a URL


def endpoint_of(agent: Agent) -> Endpoint:
    """Where ``agent``'s model calls go (its ``base_url`` or the provider's default)."""
    model = agent.model
    info = PROVIDERS.get(model.provider)
    url = model.base_url or (info.base_url if info else None)
    if model.provider == "offline" and not model.base_url:
        url = "(in process)"
    host = url if url == "(in process)" else _host(url)
    return Endpoint(model.provider, host, key_env_of(model.provider))


def endpoint_changes(
    before: Mapping[str, Endpoint], agents: Mapping[str, Agent]
) -> tuple[str, ...]:
    """One sentence per field whose value differs from ``before`` (agents new since: none)."""
    said = []
    for name in sorted(agents):
        old = before.get(name)
        if old is None:
            continue
        new = endpoint_of(agents[name])
        where = f"agent {name!r} (spec.model in {agents[name].directory.name}/agent.yaml)"
        if new.provider != old.provider:
            said.append(
                f"{where}: spec.model.provider changed since the server started: "
                f"{old.provider} → {new.provider}"
            )
        if new.host != old.host:
            said.append(
                f"{where}: spec.model.base_url changed since the server started: its model "
                f"calls and provider key now go to {new.host} (was {old.host})"
            )
        if new.key_env != old.key_env:
            said.append(
                f"{where}: the key source changed since the server started: "
                f"{old.key_env or '(no key)'} → {new.key_env or '(no key)'}"
            )
    return tuple(said)
