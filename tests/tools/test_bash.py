"""The bash tool runs real commands: output shape, exit codes, timeouts, orphans, output cap."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import tracemalloc
from pathlib import Path

import pytest

from duragent.core.caller import OPERATOR
from duragent.tools._process import TRUNCATION_MARKER
from duragent.tools.base import Tool, ToolContext
from duragent.tools.bash import BashTool
from tests.polling import eventually


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(
        caller=OPERATOR,
        session_id="s1",
        agent_name="assistant",
        agent_dir=tmp_path,
        workspace_dir=tmp_path,
        world_memory_dir=tmp_path / "world",
    )


def living_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are not zombies (PID 1 here may never reap them)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            found.append(int(stat.parent.name))
    return found


def survivors(pgid: int, grace: float = 5.0) -> list[int]:
    """Members of ``pgid`` still alive after ``grace`` seconds.

    SIGKILL is delivered asynchronously: a process killed a moment ago may still be listed as
    running until the kernel tears it down, so a kill is judged by what is left after a grace.
    """
    deadline = time.monotonic() + grace
    while (found := living_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


async def test_the_tool_is_offered_with_a_required_command_string() -> None:
    tool: Tool = BashTool()
    definition = tool.definition()
    assert definition.name == "bash"
    assert definition.parameters["required"] == ["command"]
    assert definition.parameters["properties"]["command"]["type"] == "string"
    assert tool.policy_type == "bash"
    assert tool.invocation({"command": "ls -la"}) == "ls -la"


async def test_a_command_runs_in_the_agent_directory(ctx: ToolContext) -> None:
    outcome = await BashTool().run({"command": "pwd"}, ctx)
    assert outcome.success
    assert outcome.content.strip() == str(ctx.agent_dir)


async def test_stderr_follows_stdout_and_a_failing_exit_code_is_reported(
    ctx: ToolContext,
) -> None:
    outcome = await BashTool().run({"command": "echo out; echo err >&2; exit 3"}, ctx)
    assert not outcome.success
    assert outcome.content.startswith("out\n\n--- stderr ---\nerr\n")
    assert outcome.content.endswith("exit code 3]")


async def test_an_empty_output_still_says_how_the_command_ended(ctx: ToolContext) -> None:
    assert (await BashTool().run({"command": "true"}, ctx)).content == (
        "Command completed with exit code 0"
    )
    failed = await BashTool().run({"command": "exit 7"}, ctx)
    assert not failed.success
    assert failed.content == "Command completed with exit code 7"


async def test_a_missing_command_is_an_unsuccessful_outcome(ctx: ToolContext) -> None:
    outcome = await BashTool().run({"command": "  "}, ctx)
    assert not outcome.success
    assert "command" in outcome.content


async def test_invalid_utf8_is_replaced_not_fatal(ctx: ToolContext) -> None:
    outcome = await BashTool().run({"command": r"printf 'a\377b'"}, ctx)
    assert outcome.success
    assert outcome.content == "a\ufffdb"


async def test_workspace_variables_reach_the_command(ctx: ToolContext) -> None:
    ctx = ToolContext(
        caller=OPERATOR,
        session_id="s1",
        agent_name="assistant",
        agent_dir=ctx.agent_dir,
        workspace_dir=ctx.workspace_dir,
        world_memory_dir=ctx.world_memory_dir,
        env={"DURAGENT_TEST_VALUE": "42"},
    )
    outcome = await BashTool().run({"command": "echo $DURAGENT_TEST_VALUE"}, ctx)
    assert outcome.content == "42\n"


async def test_a_timeout_kills_the_whole_process_group_and_says_so(ctx: ToolContext) -> None:
    command = "echo $$; sleep 1000 & sleep 1000 & (sleep 1000; echo never) & wait"
    started = time.monotonic()
    outcome = await BashTool(timeout=0.5).run({"command": command}, ctx)
    assert time.monotonic() - started < 120  # the sleeps run 1,000 s unless killed
    assert not outcome.success
    assert "timed out after 0.5 s" in outcome.content
    pgid = int(outcome.content.splitlines()[0])
    assert survivors(pgid) == []


async def test_background_children_do_not_outlive_a_finished_command(ctx: ToolContext) -> None:
    started = time.monotonic()
    outcome = await BashTool().run({"command": "echo $$; sleep 1000 &"}, ctx)
    assert time.monotonic() - started < 120, "a child holding stdout must not hold us 1,000 s"
    assert outcome.success
    assert survivors(int(outcome.content.split()[0])) == []


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie PID 1 never reaps is not running)."""
    try:
        text = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


async def test_a_process_that_escaped_the_group_ends_with_the_call(ctx: ToolContext) -> None:
    started = time.monotonic()
    # The sleep gives setsid time to leave the group before the command ends.
    outcome = await BashTool().run({"command": "setsid sleep 1000 & echo $!; sleep 0.3"}, ctx)
    elapsed = time.monotonic() - started
    escaped = int(outcome.content.split()[0])
    try:
        assert outcome.success
        assert elapsed < 120, "the escaped process holds stdout: it must not hold the call"
        gone = await eventually(lambda: not alive(escaped))
        assert gone, "a process that left the group outlived its call"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(escaped, signal.SIGKILL)


async def test_a_cancelled_call_kills_the_command(ctx: ToolContext) -> None:
    marker = ctx.agent_dir / "pgid"
    task = asyncio.create_task(
        BashTool().run({"command": f"echo $$ > {marker}; sleep 1000 & sleep 1000"}, ctx)
    )
    assert await eventually(lambda: marker.exists() and bool(marker.read_text().strip()))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pgid = int(marker.read_text())
    assert await eventually(lambda: not living_members(pgid))


async def test_ten_megabytes_of_output_are_capped_while_reading(ctx: ToolContext) -> None:
    tracemalloc.start()
    try:
        started = time.monotonic()
        outcome = await BashTool().run({"command": "head -c 10000000 /dev/zero | tr '\\0' x"}, ctx)
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome.success
    assert outcome.content.endswith(TRUNCATION_MARKER)
    assert len(outcome.content) == 256 * 1024 + len(TRUNCATION_MARKER)
    assert peak < 3 * 1024 * 1024, f"peak Python memory {peak} bytes"
    assert elapsed < 120  # capped while reading: never a wait for all 10 MB to be kept


async def test_the_cap_is_shared_by_stdout_and_stderr(ctx: ToolContext) -> None:
    outcome = await BashTool(output_cap=1024).run(
        {"command": "head -c 5000 /dev/zero | tr '\\0' o; head -c 5000 /dev/zero | tr '\\0' e >&2"},
        ctx,
    )
    body = outcome.content.replace("\n--- stderr ---\n", "")
    assert body.endswith("\n\n[output truncated at 1 KB]")
    assert len(body) == 1024 + len("\n\n[output truncated at 1 KB]")
