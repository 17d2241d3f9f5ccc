"""The real turn runner over a temporary workspace with one agent: no server, no gateway.

The context benchmarks (``bench/context/turns.py``, ``bench/context/summary_cadence.py``) and the
real-model summaries check (``growing_session``) drive whole conversations through the
``TurnRunner``, its ``SessionRegistry`` on a real file store and the ``ProviderPool``, wired as
``duragent serve`` wires them, and read the session's events afterwards. This is that set-up,
once::

    async with local_runner(agent_yaml, agent="bench") as local:
        sid = await local.runner.start_session("bench")
        await local.runner.run(sid, "hello")
        tokens = request_tokens(await local.events(sid))
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from duragent.agents import Agent, AgentCatalog, load_catalog
from duragent.core.events import Event
from duragent.core.payloads import AssistantResponseData, EventType
from duragent.llm import RetryPolicy
from duragent.session import RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.tools.base import Tool
from duragent.turns import TurnRunner
from duragent.turns.agent_budget import budget_settings
from duragent.turns.providers import ProviderPool

__all__ = ["FAST_RETRY", "LocalRunner", "local_runner", "request_tokens", "workspace_runner"]

FAST_RETRY = RetryPolicy(initial_delay=0.01, max_delay=0.05)
"""Retries against a scripted model on loopback: no reason to wait long."""


@dataclass(frozen=True)
class LocalRunner:
    """What ``local_runner`` set up (module docstring)."""

    root: Path
    """The workspace folder (``.duragent``), removed on exit."""
    agent: str
    catalog: AgentCatalog
    registry: SessionRegistry
    runner: TurnRunner

    @property
    def limit(self) -> int:
        """The agent's request limit (tokens): what no request may exceed."""
        return budget_settings(self.catalog.get(self.agent)).limit

    async def events(self, session_id: str) -> list[Event]:
        """Every event of the session, archived ones first."""
        return await self.registry.handle(session_id).events(include_archive=True)


@asynccontextmanager
async def local_runner(
    agent_yaml: str,
    *,
    agent: str,
    ask_timeout: float = 60,
    retry: RetryPolicy = FAST_RETRY,
    extra_tools: Callable[[Agent, str], Sequence[Tool]] | None = None,
    prefix: str = "duragent-local-",
) -> AsyncIterator[LocalRunner]:
    """A runner for the one agent ``agent_yaml`` declares as ``agent`` (module docstring)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp) / ".duragent"
        (root / "agents" / agent).mkdir(parents=True)
        (root / "agents" / agent / "agent.yaml").write_text(agent_yaml)
        catalog = load_catalog(root / "agents")
        if catalog.broken:
            raise RuntimeError(f"the agent does not load: {catalog.broken}")
        registry = SessionRegistry(
            SessionStore(root / "sessions"), RegistrySettings(ask_timeout=ask_timeout)
        )
        await registry.open()
        providers = ProviderPool(policy=retry)
        runner = workspace_runner(root, catalog, registry, providers, extra_tools=extra_tools)
        try:
            yield LocalRunner(root, agent, catalog, registry, runner)
        finally:
            await registry.aclose()
            await providers.aclose()


def workspace_runner(
    root: Path,
    catalog: AgentCatalog,
    registry: SessionRegistry,
    providers: ProviderPool,
    *,
    extra_tools: Callable[[Agent, str], Sequence[Tool]] | None = None,
) -> TurnRunner:
    """A ``TurnRunner`` over the workspace folder ``root`` (``.duragent``), wired as serve does.

    Its world memory and policy file live in ``root``, as under ``duragent serve``.
    """
    return TurnRunner(
        registry,
        agents=lambda: catalog,
        providers=providers,
        workspace_dir=root,
        world_memory_dir=root / "memory" / "world",
        policy_file=root / "policy.yaml",
        extra_tools=extra_tools,
    )


def request_tokens(events: Sequence[Event]) -> list[int]:
    """The tokens of each model request the session made, as its replies recorded them."""
    budgets = [
        AssistantResponseData.of(e.data).budget
        for e in events
        if e.type == EventType.ASSISTANT_RESPONSE
    ]
    return [int(budget["request_tokens"]) for budget in budgets if budget]
