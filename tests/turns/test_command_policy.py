"""A command another tool runs (``background_process`` spawn) is checked as a bash command."""

from __future__ import annotations

from pathlib import Path

from duragent.testing import Reply, ToolCallReply
from duragent.tools.processes import BackgroundProcessTool, ProcessRegistry, Tmux
from duragent.turns import AwaitingApproval, Complete
from tests.turns.turn_fixtures import harness

DENY_RM = """\
apiVersion: duragent/v1alpha1
kind: Policy
mode: dangerous
deny:
  - "bash:rm *"
"""

ASK_EXCEPT_BUILTINS = """\
apiVersion: duragent/v1alpha1
kind: Policy
mode: ask
allow:
  - "builtin:background_process:*"
"""


def spawn(command: str) -> Reply:
    args = {"action": "spawn", "command": command}
    return Reply(tool_calls=[ToolCallReply(name="background_process", arguments=args, id="c1")])


async def test_a_spawn_whose_command_bash_policy_denies_never_runs(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.write_text("keep")
    registry = ProcessRegistry(tmp_path / "processes", tmux=Tmux("unused"))
    async with harness(tmp_path, tools=[BackgroundProcessTool(registry)], policy=DENY_RM) as h:
        h.server.enqueue(spawn(f"rm -f {precious}"), Reply(text="could not"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "delete it")
        results = [m.text for m in await h.registry.handle(sid).messages() if m.tool_call_id]
    await registry.stop()
    assert isinstance(result, Complete)
    assert results == [
        f"Command 'rm -f {precious}' was denied by policy. This command is not allowed."
    ]
    assert precious.read_text() == "keep"
    assert not (tmp_path / "processes").exists() or not list((tmp_path / "processes").iterdir())


async def test_a_spawn_asks_with_its_command_when_bash_policy_asks(tmp_path: Path) -> None:
    registry = ProcessRegistry(tmp_path / "processes", tmux=Tmux("unused"))
    tools = [BackgroundProcessTool(registry)]
    async with harness(tmp_path, tools=tools, policy=ASK_EXCEPT_BUILTINS) as h:
        h.server.enqueue(spawn("make deploy"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "deploy")
    await registry.stop()
    assert isinstance(result, AwaitingApproval)
    assert result.command == "make deploy"


async def test_other_actions_are_checked_as_the_builtin_only(tmp_path: Path) -> None:
    registry = ProcessRegistry(tmp_path / "processes", tmux=Tmux("unused"))
    tools = [BackgroundProcessTool(registry)]
    async with harness(tmp_path, tools=tools, policy=ASK_EXCEPT_BUILTINS) as h:
        listing = {"action": "list"}
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="background_process", arguments=listing)]),
            Reply(text="none"),
        )
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "list")
    await registry.stop()
    assert isinstance(result, Complete)
    assert result.content == "none"
