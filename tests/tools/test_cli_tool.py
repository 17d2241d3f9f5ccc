"""CLI tools run real scripts: argument splitting, interpreters, limits, discovery."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from duragent.core.caller import OPERATOR
from duragent.tools.base import ToolContext
from duragent.tools.cli_tool import CliTool, discover_tools, tool_description

ECHO_ARGS_PY = "import sys\nprint(repr(sys.argv[1:]))\n"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(
        caller=OPERATOR,
        session_id="s1",
        agent_name="assistant",
        agent_dir=tmp_path,
        workspace_dir=tmp_path,
        world_memory_dir=tmp_path,
    )


def script(path: Path, text: str, *, executable: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755 if executable else 0o644)
    return path


async def test_args_are_split_like_a_shell_but_never_run_by_one(
    tmp_path: Path, ctx: ToolContext
) -> None:
    tool = CliTool("echo", script(tmp_path / "echo.py", ECHO_ARGS_PY), "Echo.")
    outcome = await tool.run({"args": "one 'two words' ; rm -rf /"}, ctx)
    assert outcome.success
    assert outcome.content == "['one', 'two words', ';', 'rm', '-rf', '/']\n"


async def test_missing_args_mean_no_arguments(tmp_path: Path, ctx: ToolContext) -> None:
    tool = CliTool("echo", script(tmp_path / "echo.py", ECHO_ARGS_PY), "Echo.")
    assert (await tool.run({}, ctx)).content == "[]\n"


async def test_unbalanced_quotes_are_an_unsuccessful_outcome(
    tmp_path: Path, ctx: ToolContext
) -> None:
    tool = CliTool("echo", script(tmp_path / "echo.py", ECHO_ARGS_PY), "Echo.")
    outcome = await tool.run({"args": "'unclosed"}, ctx)
    assert not outcome.success
    assert "cannot split args" in outcome.content


async def test_a_shell_script_runs_with_bash_in_the_agent_directory(
    tmp_path: Path, ctx: ToolContext
) -> None:
    tool = CliTool("where", script(tmp_path / "tools" / "where.sh", 'pwd; echo "$1"'), "Where.")
    outcome = await tool.run({"args": "hello"}, ctx)
    assert outcome.content == f"{tmp_path}\nhello\n"


async def test_an_executable_script_runs_through_its_shebang(
    tmp_path: Path, ctx: ToolContext
) -> None:
    path = script(tmp_path / "run", "#!/bin/sh\necho shebang $#\nexit 4\n", executable=True)
    outcome = await CliTool("sh", path, "Sh.").run({"args": "a b"}, ctx)
    assert not outcome.success
    assert outcome.content == "shebang 2\n\n[exit code 4]"


async def test_a_script_that_cannot_be_started_says_how_to_fix_it(
    tmp_path: Path, ctx: ToolContext
) -> None:
    path = script(tmp_path / "run.rb", "puts 1")
    outcome = await CliTool("ruby", path, "R.").run({}, ctx)
    assert not outcome.success
    assert "chmod +x" in outcome.content
    gone = await CliTool("gone", tmp_path / "missing.sh", "G.").run({}, ctx)
    assert not gone.success
    assert "does not exist" in gone.content


async def test_a_script_shares_the_bash_timeout_and_output_cap(
    tmp_path: Path, ctx: ToolContext
) -> None:
    slow = CliTool(
        "slow", script(tmp_path / "slow.sh", "sleep 1000 & sleep 1000"), "S.", timeout=0.3
    )
    started = time.monotonic()
    outcome = await slow.run({}, ctx)
    assert time.monotonic() - started < 120  # the sleeps run 1,000 s unless killed
    assert "timed out after 0.3 s" in outcome.content
    loud = CliTool(
        "loud", script(tmp_path / "loud.sh", "yes | head -c 100000"), "L.", output_cap=1024
    )
    outcome = await loud.run({}, ctx)
    assert outcome.content.endswith("[output truncated at 1 KB]")


def test_the_definition_offers_one_args_string_and_the_policy_string_is_the_name(
    tmp_path: Path,
) -> None:
    tool = CliTool("deploy", tmp_path / "run", "Deploys.")
    definition = tool.definition()
    assert definition.name == "deploy"
    assert definition.description == "Deploys."
    assert definition.parameters["properties"]["args"]["type"] == "string"
    assert tool.invocation({"args": "prod"}) == "deploy"
    assert tool.policy_type == "cli"


def test_the_description_joins_spec_and_readme_or_falls_back_to_the_name() -> None:
    assert tool_description("x", "Does X.", "# X\nMore.") == "Does X.\n\n# X\nMore."
    assert tool_description("x", None, "Readme only.") == "Readme only."
    assert tool_description("x", "  ", None) == "CLI tool: x"


def test_discovery_prefers_the_agent_folder_and_plain_run(tmp_path: Path) -> None:
    agent_tools, workspace_tools = tmp_path / "agent" / "tools", tmp_path / "ws" / "tools"
    script(agent_tools / "shared" / "run.sh", "echo agent")
    script(agent_tools / "shared" / "README.md", "From the agent.")
    script(workspace_tools / "shared" / "run", "echo workspace")
    script(workspace_tools / "only-ws" / "run.py", "print(1)")
    script(workspace_tools / "only-ws" / "run", "echo plain")
    script(workspace_tools / "no-script" / "README.md", "nothing to run")
    script(workspace_tools / "docs-first" / "run.md", "# how to run")
    script(workspace_tools / "docs-first" / "run.py", "print(1)")
    script(workspace_tools / "bad name" / "run", "echo x")

    found = {t.name: t for t in discover_tools(agent_tools, workspace_tools, tmp_path / "nope")}

    assert sorted(found) == ["docs-first", "only-ws", "shared"]
    assert found["docs-first"].script.name == "run.py"
    assert found["shared"].script == agent_tools / "shared" / "run.sh"
    assert found["shared"].readme == "From the agent."
    assert found["only-ws"].script == workspace_tools / "only-ws" / "run"
    assert found["only-ws"].readme is None
