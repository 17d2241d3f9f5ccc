"""The issue-12 exploit through a real turn: scripted model, real policy file, real bash.

With ``mode: restrict`` and only ``bash:echo *`` allowed, the model's call must be refused
before bash ever sees it, so the file the payload would create never appears.
"""

from __future__ import annotations

from pathlib import Path

from duragent.testing import Reply, ToolCallReply
from duragent.tools.bash import BashTool
from duragent.turns import Complete
from tests.turns.turn_fixtures import harness

RESTRICT_ECHO = """\
apiVersion: duragent/v1alpha1
kind: Policy
mode: restrict
allow:
  - "bash:echo *"
"""


def bash_call(command: str) -> Reply:
    return Reply(tool_calls=[ToolCallReply(name="bash", arguments={"command": command}, id="c1")])


async def test_the_exploit_is_refused_and_does_not_touch_the_file(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    exploit = f"echo ${{x:='a[$(touch {marker})]'}} $((x))"
    async with harness(tmp_path, tools=[BashTool()], policy=RESTRICT_ECHO) as h:
        h.server.enqueue(bash_call(exploit), Reply(text="done"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "go")
        tool_result = h.server.requests[-1].json["messages"][-1]
    assert isinstance(result, Complete)
    assert result.content == "done"
    assert "denied by policy" in tool_result["content"]
    assert not marker.exists()


async def test_a_plain_echo_still_runs_under_the_same_policy(tmp_path: Path) -> None:
    async with harness(tmp_path, tools=[BashTool()], policy=RESTRICT_ECHO) as h:
        h.server.enqueue(bash_call("echo 'hello there' $HOME"), Reply(text="done"))
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "go")
        tool_result = h.server.requests[-1].json["messages"][-1]
    assert tool_result["content"].startswith("hello there /")
