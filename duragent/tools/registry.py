"""The tools one agent offers: builtins from ``agent.yaml``, CLI tools, discovered scripts.

Order of precedence, first of a name wins: the ``spec.tools`` entries in their order (builtins
and declared CLI tools), then ``memory`` when ``spec.memory`` is set, then scripts discovered
in ``<agent_dir>/tools/`` and then ``<workspace>/tools/``. Tools the runtime injects
(``extra``) come last and replace a tool of the same name, because the runtime wires them
to services the YAML cannot describe. ``tool_output`` (reads outputs Layer 3a cut and saved)
may be listed; the turn loop also offers it on its own once a session has a saved output.

Builtins that need runtime services this module does not have (``schedule``,
``background_process``; ``record_decision`` and ``send_file``, which the turn builds with its
session's summaries and reply: ``turns.context``) are left to the runtime to inject; unknown
builtin names are skipped (the loader has already warned about them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from duragent.agents.loader import Agent
from duragent.agents.spec import BuiltinToolSpec, CliToolSpec
from duragent.tools.base import Tool
from duragent.tools.bash import BashTool
from duragent.tools.cli_tool import CliTool, discover_tools, tool_description
from duragent.tools.memory import MemoryTool
from duragent.tools.reload import ReloadToolsTool
from duragent.tools.session_tool import SessionTool
from duragent.tools.tool_output import ToolOutputTool
from duragent.tools.web import WebTool

__all__ = ["BUILTIN_FACTORIES", "RUNTIME_BUILTINS", "build_tools", "lookup"]

log = logging.getLogger(__name__)

BUILTIN_FACTORIES: Mapping[str, Callable[[], Tool]] = {
    "bash": BashTool,
    "web": WebTool,
    "session": SessionTool,
    "memory": MemoryTool,
    "reload_tools": ReloadToolsTool,
    "tool_output": ToolOutputTool,
}
"""Builtins this module builds itself, by the name used in ``agent.yaml``."""

RUNTIME_BUILTINS = frozenset({"schedule", "background_process", "record_decision", "send_file"})
"""Builtins that need runtime services; the runtime passes them in ``extra``."""


def _read_readme(agent_dir: Path, spec: CliToolSpec) -> str | None:
    if spec.readme is None:
        return None
    path = agent_dir / spec.readme
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("tool %s: cannot read README %s: %s", spec.name, path, exc)
        return None


def _web_tool(spec: BuiltinToolSpec) -> WebTool:
    if spec.max_body_bytes is None:
        return WebTool(allow_private=spec.allow_private)
    return WebTool(allow_private=spec.allow_private, max_body=spec.max_body_bytes)


def build_tools(
    agent: Agent,
    *,
    workspace_dir: Path,
    world_memory_dir: Path,
    extra: Sequence[Tool] = (),
) -> dict[str, Tool]:
    """Every tool ``agent`` may call, by name, in the order they are offered to the model.

    Args:
        agent: the loaded agent (its ``spec.tools``, ``spec.memory`` and directory).
        workspace_dir: the ``.duragent`` folder, whose ``tools/`` holds shared scripts.
        world_memory_dir: shared world memory. Tools read it from ``ToolContext`` at call
            time; it is accepted here so a tool needing it at build time adds no new argument.
        extra: tools the runtime built (e.g. ``schedule``); they replace same-named tools.
    """
    del world_memory_dir  # see Args: no tool needs it at build time today
    tools: dict[str, Tool] = {}

    def add(tool: Tool) -> None:
        if tool.name in tools:
            log.warning("agent %s: duplicate tool %r ignored", agent.name, tool.name)
        else:
            tools[tool.name] = tool

    for spec in agent.spec.tools:
        if isinstance(spec, CliToolSpec):
            description = tool_description(
                spec.name, spec.description, _read_readme(agent.directory, spec)
            )
            add(CliTool(spec.name, (agent.directory / spec.command).resolve(), description))
        elif spec.name == "web":  # the one builtin with options in agent.yaml
            add(_web_tool(spec))
        elif spec.name in BUILTIN_FACTORIES:
            add(BUILTIN_FACTORIES[spec.name]())
        elif spec.name not in RUNTIME_BUILTINS:
            log.debug("agent %s: unknown builtin tool %r skipped", agent.name, spec.name)
    if agent.spec.memory is not None and "memory" not in tools:
        add(MemoryTool())
    for found in discover_tools(agent.directory / "tools", workspace_dir / "tools"):
        if found.name not in tools:  # declared tools win over discovered ones, silently
            add(CliTool(found.name, found.script, tool_description(found.name, None, found.readme)))
    for tool in extra:
        tools[tool.name] = tool
    return tools


def lookup(tools: Mapping[str, Tool], name: str) -> Tool | None:
    """The tool called ``name``, else the one whose name matches ignoring case, else ``None``.

    Models sometimes capitalise tool names (``Bash``); an exact match always wins so two tools
    differing only in case stay reachable.
    """
    tool = tools.get(name)
    if tool is not None:
        return tool
    folded = name.casefold()
    return next((t for n, t in tools.items() if n.casefold() == folded), None)
