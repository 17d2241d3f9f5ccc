"""The ``bash`` tool: run a shell command in the agent's directory.

The command runs as ``bash -c <command>`` with the agent directory as working directory, a
hard timeout (120 s by default) after which its whole process group is killed, and an output
cap of 256 KiB enforced while reading (see ``_process``). Policy patterns match the command
text itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from duragent.core.messages import ToolDefinition
from duragent.tools._process import OUTPUT_CAP, child_env, format_result, run_process
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome

__all__ = ["DEFAULT_TIMEOUT_SECONDS", "BashTool"]

DEFAULT_TIMEOUT_SECONDS = 120.0


class BashTool:
    """Runs shell commands for the model.

    Args:
        timeout: seconds before the command's process group is killed.
        output_cap: bytes of stdout and stderr kept (together); the rest is discarded.
    """

    name: str = "bash"
    policy_type: PolicyType = "bash"

    def __init__(
        self, timeout: float = DEFAULT_TIMEOUT_SECONDS, *, output_cap: int = OUTPUT_CAP
    ) -> None:
        self.timeout = timeout
        self.output_cap = output_cap

    def definition(self) -> ToolDefinition:
        """A single required ``command`` string; the limits are stated so the model plans."""
        return ToolDefinition(
            name=self.name,
            description=(
                "Run a shell command with `bash -c` in the agent's directory. Returns stdout, "
                "then stderr after a `--- stderr ---` line, and the exit code when it is not 0. "
                f"The command is killed after {self.timeout:g} s and output is cut at 256 KB. "
                "Background processes started by the command are killed when it ends."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The bash command to run."}
                },
                "required": ["command"],
            },
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        """The command text, which is what ``bash:…`` policy patterns match."""
        command = args.get("command")
        return command if isinstance(command, str) else ""

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Run the command; a non-zero exit or a timeout is an unsuccessful outcome."""
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return ToolOutcome(False, "bash needs a non-empty `command` string argument")
        try:
            result = await run_process(
                ["bash", "-c", command],
                cwd=ctx.agent_dir,
                time_limit=self.timeout,
                env=child_env(ctx.env),
                cap=self.output_cap,
                confine=ctx.sandbox.confine(ctx.agent_dir, ctx.session_id),
            )
        except OSError as exc:
            return ToolOutcome(False, f"Could not start bash in {ctx.agent_dir}: {exc}")
        return format_result(result)
