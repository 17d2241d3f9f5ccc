"""``reload_tools``: a tool script written during a turn can be called in the same turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from duragent.core.caller import OPERATOR
from duragent.testing import Reply, ToolCallReply
from duragent.tools.base import ToolContext
from duragent.tools.reload import ReloadToolsTool
from duragent.turns import Complete
from tests.turns.turn_fixtures import FnTool, harness


def write_tool(folder: Path, name: str, output: str) -> None:
    script = folder / name / "run"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f"#!/bin/sh\necho {output}\n")
    script.chmod(0o755)
    (folder / name / "README.md").write_text(f"Says {output}.")


async def test_reload_reports_the_tools_of_both_folders(tmp_path: Path) -> None:
    agent_dir, workspace = tmp_path / "agent", tmp_path / ".duragent"
    write_tool(agent_dir / "tools", "hello", "hi")
    write_tool(workspace / "tools", "shared", "s")
    ctx = ToolContext(
        caller=OPERATOR,
session_id="s", agent_name="a", agent_dir=agent_dir, workspace_dir=workspace,
        world_memory_dir=tmp_path,
    )  # fmt: skip
    outcome = await ReloadToolsTool().run({}, ctx)
    doc = json.loads(outcome.content)
    assert outcome.success
    assert outcome.reload_tools
    assert [t["name"] for t in doc["discovered_tools"]] == ["hello", "shared"]
    assert doc["discovered_tools"][0]["description"].startswith("Says hi.")
    assert doc["count"] == 2
    assert doc["directories_scanned"] == [str(agent_dir / "tools"), str(workspace / "tools")]


async def test_a_tool_written_mid_turn_is_offered_after_reload_and_runs(tmp_path: Path) -> None:
    agent_tools = tmp_path / ".duragent" / "agents" / "bot" / "tools"

    def author(_: Any) -> str:
        write_tool(agent_tools, "greet", "hello-from-new-tool")
        return "written"

    reload = "  tools:\n    - {type: builtin, name: reload_tools}\n"  # beside spec.model
    async with harness(tmp_path, tools=[FnTool("author", author)], model_extra=reload) as h:
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="author", arguments={}, id="c1")]),
            Reply(tool_calls=[ToolCallReply(name="reload_tools", arguments={}, id="c2")]),
            Reply(tool_calls=[ToolCallReply(name="greet", arguments={"args": ""}, id="c3")]),
            Reply(text="done"),
        )
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "make a tool and use it")
        offered = [
            [t["function"]["name"] for t in r.body.get("tools", [])] for r in h.server.requests
        ]
        results = [m.text for m in await h.registry.handle(sid).messages() if m.tool_call_id]
    assert isinstance(result, Complete)
    assert "greet" not in offered[1]
    assert "greet" in offered[2]
    assert results[2].strip() == "hello-from-new-tool"
