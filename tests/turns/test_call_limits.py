"""Tool calls per response and per turn are bounded; calls refused at the boundary never run."""

from __future__ import annotations

from pathlib import Path

from duragent.core.events import EventType
from duragent.testing import Reply, ToolCallReply
from duragent.turns import AwaitingApproval, Complete
from tests.turns.turn_fixtures import FnTool, harness


def _calls(count: int, start: int = 0) -> Reply:
    return Reply(
        tool_calls=[
            ToolCallReply(name="echo", arguments={"x": str(i)}, id=f"c{i}")
            for i in range(start, start + count)
        ]
    )


async def test_calls_beyond_max_tool_calls_per_response_are_skipped_and_the_model_is_told(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda a: a.get("x"))
    async with harness(tmp_path, tools=[echo], max_tool_calls_per_response=2) as h:
        h.server.enqueue(_calls(5), Reply(text="fewer then"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "go")
        events = await h.registry.handle(sid).events(include_archive=True)
    assert isinstance(result, Complete)
    assert result.content == "fewer then"
    assert [c["x"] for c in echo.calls] == ["0", "1"]
    skipped = [e for e in events if e.type == EventType.TOOLS_SKIPPED]
    assert [list(e.data["call_ids"]) for e in skipped] == [["c2", "c3", "c4"]]
    assert "max_tool_calls_per_response" in skipped[0].data["reason"]
    sent = h.server.requests[-1].json["messages"]
    assistant = next(m for m in sent if m.get("tool_calls"))
    assert [c["id"] for c in assistant["tool_calls"]] == ["c0", "c1", "c2"]
    told = next(m for m in sent if m.get("tool_call_id") == "c2")["content"]
    assert "2 more calls" in told


async def test_max_tool_calls_per_turn_counts_the_calls_of_every_response(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda a: a.get("x"))
    async with harness(tmp_path, tools=[echo], max_tool_calls_per_turn=3) as h:
        h.server.enqueue(_calls(2), _calls(2, start=2), _calls(2, start=4), Reply(text="ok"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "go")
        events = await h.registry.handle(sid).events(include_archive=True)
    assert isinstance(result, Complete)
    assert result.content == "ok"
    assert [c["x"] for c in echo.calls] == ["0", "1", "2"]
    skipped = [e for e in events if e.type == EventType.TOOLS_SKIPPED]
    assert [list(e.data["call_ids"]) for e in skipped] == [["c3"], ["c4", "c5"]]
    assert all("max_tool_calls_per_turn" in e.data["reason"] for e in skipped)


async def test_a_call_refused_at_the_boundary_gets_the_reason_and_never_runs(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda a: a.get("x"))
    big = ToolCallReply(name="echo", arguments='{"x":""}', filler_bytes=8192, id="big")
    async with harness(tmp_path, tools=[echo], max_tool_argument_bytes=2048) as h:
        h.server.enqueue(Reply(tool_calls=[big]), Reply(text="smaller then"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "go")
    assert isinstance(result, Complete)
    assert result.content == "smaller then"
    assert echo.calls == []
    told = next(m for m in h.server.requests[-1].json["messages"] if m.get("tool_call_id"))
    assert "max_tool_argument_bytes (2,048)" in told["content"]


async def test_arguments_too_deep_for_the_parser_are_refused_recorded_and_answered(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda a: a.get("x"))
    deep = '{"x":' + "[" * 50_000 + "]" * 50_000 + "}"
    async with harness(tmp_path, tools=[echo], max_tool_argument_bytes=1 << 20) as h:
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="echo", arguments=deep, id="deep")]),
            Reply(text="flat then"),
        )
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "go")
        events = await h.registry.handle(sid).events(include_archive=True)
    assert isinstance(result, Complete)
    assert result.content == "flat then"
    assert echo.calls == []
    assert any(e.type == EventType.ASSISTANT_RESPONSE and e.data.get("tool_calls") for e in events)
    told = next(m for m in h.server.requests[-1].json["messages"] if m.get("tool_call_id"))
    assert "max_tool_argument_depth" in told["content"]


ASK = 'apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\nallow:\n  - "builtin:echo:safe"\n'


async def test_calls_made_before_an_approval_count_against_the_turn_after_it(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda a: a.get("x"))
    safe = [ToolCallReply(name="echo", arguments={"x": "safe"}, id=f"s{i}") for i in range(2)]
    risky = ToolCallReply(name="echo", arguments={"x": "risky"}, id="r")
    async with harness(tmp_path, tools=[echo], policy=ASK, max_tool_calls_per_turn=3) as h:
        h.server.enqueue(
            Reply(tool_calls=[*safe, risky]), _calls(2, start=10), Reply(text="stopped there")
        )
        sid = await h.runner.start_session("bot")
        paused = await h.runner.run(sid, "go")
        assert isinstance(paused, AwaitingApproval)
        result = await h.runner.approve(sid, "r", "allow_once")
    assert isinstance(result, Complete)
    assert result.content == "stopped there"
    assert [c["x"] for c in echo.calls] == ["safe", "safe", "risky"]  # c10, c11: over the limit
