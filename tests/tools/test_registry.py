"""build_tools turns a loaded agent into the tools it offers; lookup finds them by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from duragent.agents.loader import load_agent
from duragent.core.caller import OPERATOR
from duragent.core.messages import ToolDefinition
from duragent.tools.base import PolicyType, Tool, ToolContext, ToolOutcome
from duragent.tools.bash import BashTool
from duragent.tools.cli_tool import CliTool
from duragent.tools.memory import MemoryTool
from duragent.tools.registry import build_tools, lookup
from duragent.tools.session_tool import SessionTool
from duragent.tools.web import WebTool

HEADER = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: assistant
spec:
  model:
    provider: offline
    name: duragent-offline
"""


def put(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)


class ScheduleTool:
    """Stands in for a tool the runtime injects."""

    name: str = "schedule"
    policy_type: PolicyType = "builtin"

    def definition(self) -> ToolDefinition:
        return ToolDefinition(name=self.name, description="Schedules.")

    def invocation(self, args: Mapping[str, Any]) -> str:
        return self.name

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome(True, "scheduled")


def test_builtins_are_built_in_the_order_the_yaml_lists_them(
    write_agent: Callable[..., Path],
) -> None:
    folder = write_agent(
        yaml_text=HEADER
        + """\
  tools:
    - {type: builtin, name: web}
    - {type: builtin, name: bash}
    - {type: builtin, name: session}
    - {type: builtin, name: teleport}
    - {type: builtin, name: schedule}
    - {type: builtin, name: reload_tools}
    - {type: builtin, name: background_process}
"""
    )
    tools = build_tools(
        load_agent(folder), workspace_dir=folder.parents[1], world_memory_dir=folder / "w"
    )
    # schedule and background_process need runtime services: the runtime adds them
    assert list(tools) == ["web", "bash", "session", "reload_tools"]
    assert isinstance(tools["web"], WebTool)
    assert isinstance(tools["bash"], BashTool)
    assert isinstance(tools["session"], SessionTool)


def test_memory_is_enabled_by_spec_memory(write_agent: Callable[..., Path]) -> None:
    folder = write_agent(yaml_text=HEADER + "  memory: {backend: filesystem}\n")
    tools = build_tools(
        load_agent(folder), workspace_dir=folder.parents[1], world_memory_dir=folder
    )
    assert list(tools) == ["memory"]
    assert isinstance(tools["memory"], MemoryTool)


def test_an_agent_without_tools_gets_none(write_agent: Callable[..., Path]) -> None:
    folder = write_agent()
    assert (
        build_tools(load_agent(folder), workspace_dir=folder.parents[1], world_memory_dir=folder)
        == {}
    )


def test_declared_cli_tools_win_over_discovered_ones(write_agent: Callable[..., Path]) -> None:
    folder = write_agent(
        yaml_text=HEADER
        + """\
  tools:
    - type: cli
      name: deploy
      command: scripts/deploy.sh
      description: Deploys the site.
      readme: scripts/DEPLOY.md
"""
    )
    put(
        folder,
        {
            "scripts/deploy.sh": "echo declared",
            "scripts/DEPLOY.md": "Usage: deploy <env>",
            "tools/deploy/run": "echo discovered",
            "tools/lint/run.py": "print('lint')",
            "tools/lint/README.md": "Lints the code.",
        },
    )
    workspace = folder.parents[1]
    put(workspace, {"tools/lint/run": "echo workspace lint", "tools/fmt/run": "echo fmt"})

    tools = build_tools(load_agent(folder), workspace_dir=workspace, world_memory_dir=folder)

    assert list(tools) == ["deploy", "lint", "fmt"]
    deploy, lint, fmt = (tools[n] for n in ("deploy", "lint", "fmt"))
    assert isinstance(deploy, CliTool)
    assert deploy.script == folder / "scripts" / "deploy.sh"
    assert deploy.definition().description == "Deploys the site.\n\nUsage: deploy <env>"
    assert isinstance(lint, CliTool)
    assert lint.script == folder / "tools" / "lint" / "run.py"
    assert lint.definition().description == "Lints the code."
    assert fmt.definition().description == "CLI tool: fmt"


async def test_a_built_cli_tool_runs_its_script(write_agent: Callable[..., Path]) -> None:
    folder = write_agent()
    put(folder, {"tools/hello/run.sh": 'echo "hello $1"'})
    tools = build_tools(
        load_agent(folder), workspace_dir=folder.parents[1], world_memory_dir=folder
    )
    ctx = ToolContext(
        caller=OPERATOR,
        session_id="s",
        agent_name="assistant",
        agent_dir=folder,
        workspace_dir=folder.parents[1],
        world_memory_dir=folder,
    )
    outcome = await tools["hello"].run({"args": "world"}, ctx)
    assert outcome.content == "hello world\n"


def test_runtime_tools_are_added_and_replace_same_named_ones(
    write_agent: Callable[..., Path],
) -> None:
    folder = write_agent(
        yaml_text=HEADER + "  tools:\n    - {type: builtin, name: bash}\n",
    )
    put(folder, {"tools/schedule/run": "echo not the real one"})
    schedule = ScheduleTool()
    tools = build_tools(
        load_agent(folder),
        workspace_dir=folder.parents[1],
        world_memory_dir=folder,
        extra=[schedule],
    )
    assert list(tools) == ["bash", "schedule"]
    assert tools["schedule"] is schedule


def test_lookup_prefers_the_exact_name_then_ignores_case() -> None:
    bash, memory = BashTool(), MemoryTool()
    tools: dict[str, Tool] = {"bash": bash, "Memory": memory}
    assert lookup(tools, "bash") is bash
    assert lookup(tools, "BASH") is bash
    assert lookup(tools, "memory") is memory
    assert lookup(tools, "web") is None
