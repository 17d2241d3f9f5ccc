"""CLI tools: scripts an agent author drops in, offered to the model as tools.

A CLI tool is declared in ``agent.yaml`` (``{type: cli, name, command, readme?, description?}``)
or discovered as ``<agent_dir>/tools/<name>/run[.*]`` and then ``<workspace>/tools/<name>/run[.*]``
(with ``README.md`` beside it as the description). The model passes one string, ``args``,
which is split like a shell would (``shlex``) but never given to a shell, so quoting works
and ``; rm -rf /`` is just two more arguments.

How a script is started: an **executable** file runs directly, so its shebang line chooses
the interpreter; a non-executable ``.py`` runs with this Python (``sys.executable``) and a
non-executable ``.sh``/``.bash`` with ``bash``; anything else must be made executable. Scripts
run in the agent directory with the same timeout, process-group kill and output cap as
``bash``.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duragent.core.messages import ToolDefinition
from duragent.tools._process import OUTPUT_CAP, child_env, format_result, run_process
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome
from duragent.tools.bash import DEFAULT_TIMEOUT_SECONDS

__all__ = ["CliTool", "DiscoveredTool", "discover_tools", "interpreter_for", "tool_description"]

log = logging.getLogger(__name__)

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""Names every provider accepts for a function; other folder names are skipped."""

_INTERPRETERS: dict[str, tuple[str, ...]] = {
    ".py": (sys.executable,),
    ".sh": ("bash",),
    ".bash": ("bash",),
}


def interpreter_for(script: Path) -> tuple[str, ...] | None:
    """The argv prefix that starts ``script``; ``None`` when it cannot be started.

    An executable file is trusted to start itself (shebang); otherwise the extension picks an
    interpreter, so authors need not remember ``chmod +x`` for the common cases.
    """
    if os.access(script, os.X_OK):
        return ()
    return _INTERPRETERS.get(script.suffix.lower())


def tool_description(name: str, description: str | None, readme: str | None) -> str:
    """The description and README joined; ``CLI tool: <name>`` when both are empty."""
    parts = [p.strip() for p in (description, readme) if p and p.strip()]
    return "\n\n".join(parts) if parts else f"CLI tool: {name}"


class CliTool:
    """Runs one script with the model's ``args`` string split into arguments.

    Args:
        name: the tool name the model calls (and policy patterns ``cli:<name>`` match).
        script: absolute path of the script.
        description: what the model reads about the tool (description + README).
        timeout: seconds before the script's process group is killed.
        output_cap: bytes of stdout and stderr kept (together).
    """

    policy_type: PolicyType = "cli"

    def __init__(
        self,
        name: str,
        script: Path,
        description: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        output_cap: int = OUTPUT_CAP,
    ) -> None:
        self.name: str = name
        self.script = script
        self.description = description
        self.timeout = timeout
        self.output_cap = output_cap

    def definition(self) -> ToolDefinition:
        """One optional ``args`` string."""
        return ToolDefinition(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {
                    "args": {
                        "type": "string",
                        "description": "Arguments for the tool, quoted as in a shell.",
                    }
                },
            },
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        """The tool name: CLI tools are allowed or denied as a whole."""
        return self.name

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Run the script; bad quoting or an unstartable script is an unsuccessful outcome."""
        raw = args.get("args", "")
        if raw is None:
            raw = ""
        if not isinstance(raw, str):
            return ToolOutcome(False, f"{self.name}: `args` must be a string")
        try:
            argv = shlex.split(raw)
        except ValueError as exc:
            return ToolOutcome(False, f"{self.name}: cannot split args ({exc}): {raw}")
        if not self.script.is_file():
            return ToolOutcome(False, f"{self.name}: script {self.script} does not exist")
        prefix = interpreter_for(self.script)
        if prefix is None:
            return ToolOutcome(
                False,
                f"{self.name}: {self.script} is not executable; run `chmod +x` on it "
                "or give it a .py or .sh extension",
            )
        try:
            result = await run_process(
                [*prefix, str(self.script), *argv],
                cwd=ctx.agent_dir,
                time_limit=self.timeout,
                env=child_env(ctx.env),
                cap=self.output_cap,
                confine=ctx.sandbox.confine(ctx.agent_dir, ctx.session_id, self.script),
            )
        except OSError as exc:
            return ToolOutcome(False, f"{self.name}: could not start {self.script}: {exc}")
        return format_result(result)


@dataclass(frozen=True, slots=True)
class DiscoveredTool:
    """A ``tools/<name>/run[.*]`` script found on disk."""

    name: str
    script: Path
    readme: str | None


def _find_run_script(folder: Path) -> Path | None:
    # `run` itself first, then `run.<ext>` files we can start (so a `run.md` beside a
    # `run.py` is not picked), then the rest; name order within each, so the choice is stable.
    candidates = sorted(
        (p for p in folder.iterdir() if p.name == "run" or p.name.startswith("run.")),
        key=lambda p: (p.name != "run", interpreter_for(p) is None, p.name),
    )
    return next((p for p in candidates if p.is_file()), None)


def _read_optional(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def discover_tools(*roots: Path) -> list[DiscoveredTool]:
    """Scripts in ``<root>/<name>/run[.*]`` for each root in order; the first of a name wins."""
    found: dict[str, DiscoveredTool] = {}
    for root in roots:
        try:
            folders = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:  # no tools folder: nothing to discover
            continue
        for folder in folders:
            if folder.name in found:
                continue
            if not TOOL_NAME.match(folder.name):
                log.warning("skipping tool folder %s: names may use only A-Z a-z 0-9 _ -", folder)
                continue
            try:
                script = _find_run_script(folder)
            except OSError:
                continue
            if script is not None:
                found[folder.name] = DiscoveredTool(
                    folder.name, script, _read_optional(folder / "README.md")
                )
    return list(found.values())
