"""Create workspace and agent folders without ever overwriting a file."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from duragent.agents.spec import AGENT_NAME_PATTERN
from duragent.cli import templates
from duragent.llm.factory import PROVIDERS

__all__ = [
    "DEFAULT_MODELS",
    "Scaffold",
    "check_agent",
    "scaffold_agent",
    "scaffold_workspace",
]

DEFAULT_MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-4o-mini",
    "openrouter": "openai/gpt-4o-mini",
    "ollama": "llama3.2",
    "offline": "duragent-offline",
}


@dataclass
class Scaffold:
    """What a scaffold step created and what it left alone."""

    created: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)

    def write(self, path: Path, text: str) -> None:
        """Write ``text`` to ``path`` unless the file exists."""
        if path.exists():
            self.kept.append(path)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as fh:  # "x": never clobber, even in a race
            fh.write(text)
        self.created.append(path)


def check_agent(name: str, provider: str) -> None:
    """Raise ValueError when the agent could not be created or would not load.

    Called before anything is written, so a bad name or provider leaves no folder behind;
    the name rule is ``metadata.name``'s, which also keeps the folder inside the agents
    directory (no ``/``, no leading ``.``).
    """
    if not re.fullmatch(AGENT_NAME_PATTERN, name):
        raise ValueError(
            f"invalid agent name {name!r}: use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit (e.g. 'assistant')"
        )
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}")


def scaffold_agent(
    agents_dir: Path, name: str, provider: str, model: str, result: Scaffold | None = None
) -> Scaffold:
    """Write one agent folder (agent.yaml, policy, SOUL.md, SYSTEM_PROMPT.md)."""
    check_agent(name, provider)
    out = result or Scaffold()
    folder = agents_dir / name
    values = {"agent": name, "provider": provider, "model": model}
    out.write(folder / "agent.yaml", templates.render(templates.AGENT_YAML, **values))
    out.write(folder / "policy.yaml", templates.AGENT_POLICY)
    out.write(folder / "SOUL.md", templates.render(templates.SOUL_MD, **values))
    out.write(folder / "SYSTEM_PROMPT.md", templates.render(templates.SYSTEM_PROMPT_MD, **values))
    return out


def scaffold_workspace(root: Path, agent: str, provider: str, model: str) -> Scaffold:
    """Write duragent.yaml, the .duragent tree, the workspace policy and one agent."""
    check_agent(agent, provider)
    out = Scaffold()
    out.write(root / "duragent.yaml", templates.render(templates.DURAGENT_YAML, agent=agent))
    ws = root / ".duragent"
    for sub in ("agents", "sessions", "memory/world", "directives", "schedules", "artifacts"):
        (ws / sub).mkdir(parents=True, exist_ok=True)
    out.write(ws / "policy.yaml", templates.WORKSPACE_POLICY)
    scaffold_agent(ws / "agents", agent, provider, model, out)
    return out
