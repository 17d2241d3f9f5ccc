"""The ``tool_output`` tool reads a saved output by head, tail, line range and substring."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duragent.core.caller import OPERATOR
from duragent.store.session_store import SessionStore
from duragent.tools.base import ToolContext, ToolOutcome
from duragent.tools.tool_output import MAX_LINES, ToolOutputTool

TEXT = "\n".join(f"line {n}: {'ERROR disk' if n % 250 == 0 else 'ok'}" for n in range(1, 1001))


@pytest.fixture
def saved(tmp_path: Path) -> tuple[ToolContext, str]:
    store = SessionStore(tmp_path / "sessions")
    store.open()
    store.create("s1")
    outputs = store.saved_outputs("s1")
    output_id = outputs.new_id()
    outputs.save(output_id, TEXT)
    ctx = ToolContext(
        caller=OPERATOR,
        session_id="s1",
        agent_name="bot",
        agent_dir=tmp_path,
        workspace_dir=tmp_path,
        world_memory_dir=tmp_path,
        outputs=outputs,
    )
    return ctx, output_id


async def read(ctx: ToolContext, **args: Any) -> ToolOutcome:
    return await ToolOutputTool().run(args, ctx)


async def test_head_reads_the_first_lines_and_says_how_to_go_on(
    saved: tuple[ToolContext, str],
) -> None:
    ctx, output_id = saved
    got = await read(ctx, id=output_id, lines=3)
    assert got.success
    assert got.content.splitlines() == [
        f"{output_id}: lines 1–3 of 1000",
        "line 1: ok",
        "line 2: ok",
        "line 3: ok",
        "[more: mode=range start=4]",
    ]


async def test_tail_reads_the_last_lines(saved: tuple[ToolContext, str]) -> None:
    ctx, output_id = saved
    got = await read(ctx, id=output_id, mode="tail", lines=2)
    assert got.content.splitlines()[1:3] == ["line 999: ok", "line 1000: ERROR disk"]


async def test_range_reads_the_lines_asked_for(saved: tuple[ToolContext, str]) -> None:
    ctx, output_id = saved
    got = await read(ctx, id=output_id, mode="range", start=249, end=251)
    assert got.content.splitlines()[1:] == [
        "line 249: ok",
        "line 250: ERROR disk",
        "line 251: ok",
        "[more: mode=range start=252]",
    ]


async def test_grep_finds_numbered_lines_case_insensitively(
    saved: tuple[ToolContext, str],
) -> None:
    ctx, output_id = saved
    got = await read(ctx, id=output_id, mode="grep", pattern="error", ignore_case=True)
    assert got.content.splitlines() == [
        f"{output_id}: 4 lines contain 'error'",
        "250: line 250: ERROR disk",
        "500: line 500: ERROR disk",
        "750: line 750: ERROR disk",
        "1000: line 1000: ERROR disk",
    ]


async def test_a_pattern_is_plain_text_not_a_regular_expression(
    saved: tuple[ToolContext, str],
) -> None:
    ctx, output_id = saved
    got = await read(ctx, id=output_id, mode="grep", pattern="(a+)+$")
    assert got.success
    assert "no line contains" in got.content


async def test_answers_are_bounded(saved: tuple[ToolContext, str]) -> None:
    ctx, output_id = saved
    got = await read(ctx, id=output_id, mode="range", start=1, end=1000)
    assert len(got.content.splitlines()) <= MAX_LINES + 2


async def test_an_unknown_or_foreign_id_and_bad_arguments_are_correctable_errors(
    saved: tuple[ToolContext, str],
) -> None:
    ctx, _ = saved
    missing = await read(ctx, id="out_01JABCDEFGHJKMNPQRSTVWXYZ0")
    traversal = await read(ctx, id="../../s2/outputs/x")
    bad_mode = await read(ctx, id="out_01JABCDEFGHJKMNPQRSTVWXYZ0", mode="cat")
    assert not missing.success
    assert "no saved output" in missing.content
    assert not traversal.success
    assert "no saved output" in traversal.content
    assert not bad_mode.success
    assert "mode must be one of" in bad_mode.content


async def test_without_saved_outputs_the_tool_says_so(tmp_path: Path) -> None:
    ctx = ToolContext(
        caller=OPERATOR,
        session_id="s1",
        agent_name="bot",
        agent_dir=tmp_path,
        workspace_dir=tmp_path,
        world_memory_dir=tmp_path,
    )
    got = await read(ctx, id="out_01JABCDEFGHJKMNPQRSTVWXYZ0")
    assert not got.success
    assert "turned off" in got.content
