"""A real turn runner over a real session store, talking to the scripted LLM over HTTP."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duragent.agents import Agent, AgentCatalog, load_catalog
from duragent.core.messages import ToolDefinition
from duragent.llm import RetryPolicy
from duragent.session import RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.testing import ScriptedLLMServer
from duragent.tools.base import PolicyType, Tool, ToolContext, ToolOutcome
from duragent.turns import TurnRunner
from duragent.turns.providers import ProviderPool


def agent_yaml(
    base_url: str,
    *,
    max_input_tokens: int = 32000,
    model_extra: str = "",
    builtins: Sequence[str] = (),
    provider: str = "fake",
    **session: Any,
) -> str:
    """The test agent ``bot``: ``model_extra`` is more of its ``spec.model`` (YAML at its
    indentation), ``builtins`` builtin tools it lists, ``provider`` its model's provider
    (``fake``: an OpenAI-compatible one), ``session`` its ``spec.session`` fields."""
    lines = "\n".join(f"    {k}: {v}" for k, v in session.items())
    listed = "".join(f"    - {{type: builtin, name: {name}}}\n" for name in builtins)
    return (
        textwrap.dedent(
            f"""\
        apiVersion: duragent/v1alpha1
        kind: Agent
        metadata:
          name: bot
        spec:
          model:
            provider: {provider}
            name: gpt-4o
            base_url: {base_url}
            max_input_tokens: {max_input_tokens}
            max_output_tokens: 1000
        """
        )
        + model_extra
        + ("  tools:\n" + listed if listed else "")
        + "  session:\n"
        + (lines or "    on_disconnect: pause")
        + "\n"
    )


@dataclass
class FnTool:
    """A test tool whose behaviour is a coroutine function of its arguments."""

    name: str
    fn: Callable[[Mapping[str, Any]], Any]
    policy_type: PolicyType = "builtin"
    calls: list[dict[str, Any]] = field(default_factory=list)

    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            name=self.name,
            description=f"test tool {self.name}",
            parameters={"type": "object", "properties": {"x": {"type": "string"}}},
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        return f"{self.name}:{args.get('x', '')}"

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        self.calls.append(dict(args))
        value = self.fn(args)
        if asyncio.iscoroutine(value):
            value = await value
        return value if isinstance(value, ToolOutcome) else ToolOutcome(True, str(value))


@dataclass
class Harness:
    root: Path
    server: ScriptedLLMServer
    registry: SessionRegistry
    runner: TurnRunner
    catalog: AgentCatalog
    providers: ProviderPool

    @property
    def agent(self) -> Agent:
        return self.catalog.get("bot")


@asynccontextmanager
async def harness(
    tmp_path: Path,
    *,
    tools: Sequence[Tool] = (),
    policy: str | None = None,
    retry: RetryPolicy | None = None,
    responder: Any = None,
    max_input_tokens: int = 32000,
    model_extra: str = "",
    builtins: Sequence[str] = (),
    provider: str = "fake",
    **session: Any,
) -> AsyncIterator[Harness]:
    async with ScriptedLLMServer(responder=responder) as server:
        base_url = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
        agent_dir = tmp_path / ".duragent" / "agents" / "bot"
        agent_dir.mkdir(parents=True, exist_ok=True)
        (agent_dir / "agent.yaml").write_text(
            agent_yaml(
                base_url,
                max_input_tokens=max_input_tokens,
                model_extra=model_extra,
                builtins=builtins,
                provider=provider,
                **session,
            )
        )
        if policy is not None:
            (agent_dir / "policy.yaml").write_text(textwrap.dedent(policy))
        catalog = load_catalog(tmp_path / ".duragent" / "agents")
        assert not catalog.broken, catalog.broken
        registry = SessionRegistry(
            SessionStore(tmp_path / ".duragent" / "sessions"), RegistrySettings(ask_timeout=20)
        )
        await registry.open()
        providers = ProviderPool(policy=retry or RetryPolicy(initial_delay=0.01, max_delay=0.05))
        runner = TurnRunner(
            registry,
            agents=lambda: catalog,
            providers=providers,
            workspace_dir=tmp_path / ".duragent",
            world_memory_dir=tmp_path / ".duragent" / "memory" / "world",
            policy_file=tmp_path / ".duragent" / "policy.yaml",
            extra_tools=lambda agent, sid: tools,
        )
        try:
            yield Harness(tmp_path, server, registry, runner, catalog, providers)
        finally:
            await registry.aclose()
            await providers.aclose()
