"""The one turn runner and the agentic loop, against the scripted model over real HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from duragent.core.events import EventType
from duragent.llm import RetryPolicy
from duragent.session.operations import SessionOps
from duragent.session.ops import Op
from duragent.testing import Fault, Reply, ToolCallReply
from duragent.tools.base import ToolOutcome
from duragent.turns import Complete, Failed
from duragent.turns.calls import DOOM_LOOP_REPEATS
from duragent.turns.loop import cancelled_result
from tests.polling import eventually
from tests.turns.turn_fixtures import FnTool, harness


def roles(body: dict[str, Any]) -> list[str]:
    return [m["role"] for m in body["messages"]]


async def events_of(h: Any, sid: str) -> list[Any]:
    return await h.registry.handle(sid).events(include_archive=True)


def on_disk(tmp_path: Path, sid: str) -> list[dict[str, Any]]:
    """The session's log as it is on disk (``events`` would flush queued events first)."""
    log = tmp_path / ".duragent" / "sessions" / sid / "events.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()]


async def cancel(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_plain_reply_is_persisted_and_returned(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="Hello there!"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "hi", sender_id="u1")
        events = await events_of(h, sid)
    assert isinstance(result, Complete)
    assert result.content == "Hello there!"
    assert result.message_id is not None
    assert result.message_id.startswith("msg_")
    kinds = [e.type for e in events]
    assert kinds == ["session_start", "user_message", "assistant_response"]
    assert events[-1].data["message_id"] == result.message_id
    assert events[-1].data["budget"]["request_tokens"] > 0
    body = h.server.requests[-1].json
    assert roles(body)[0] == "system"
    assert body["messages"][-1] == {"role": "user", "content": "hi"}


async def test_a_plain_turn_talks_to_its_session_twice(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="Hello there!"))
        sid = await h.runner.start_session("bot")
        ops: list[Op[Any, ..., Any]] = []
        call = h.registry.call

        async def counting(session_id: str, op: Op[Any, ..., Any], *args: Any, **kw: Any) -> Any:
            ops.append(op)
            return await call(session_id, op, *args, **kw)

        h.registry.call = counting  # type: ignore[method-assign, assignment]
        await h.runner.run(sid, "hi")
    assert ops == [SessionOps.add_user_message, SessionOps.add_assistant_response]


async def test_a_cancelled_turn_keeps_its_tool_results_and_closes_the_call_it_cut_short(
    tmp_path: Path,
) -> None:
    hanging = asyncio.Event()

    async def hang(args: Any) -> str:
        hanging.set()
        await asyncio.Event().wait()
        return "never"

    echo, slow = FnTool("echo", lambda a: "echoed"), FnTool("slow", hang)
    async with harness(tmp_path, tools=[echo, slow]) as h:
        h.server.enqueue(
            Reply(
                tool_calls=[
                    ToolCallReply(name="echo", arguments={"x": "1"}, id="c1"),
                    ToolCallReply(name="slow", arguments={}, id="c2"),
                ]
            )
        )
        sid = await h.runner.start_session("bot")
        task = asyncio.create_task(h.runner.run(sid, "go"))
        await hanging.wait()
        await cancel(task)
        logged = on_disk(tmp_path, sid)
    assert [e["type"] for e in logged][-3:] == ["assistant_response", "tool_result", "tool_result"]
    assert [e["call_id"] for e in logged[-2:]] == ["c1", "c2"]
    assert logged[-1]["result"] == {
        "success": False,
        "content": cancelled_result("the turn was cancelled"),
    }


async def test_a_turn_cancelled_while_recording_its_error_still_writes_its_tool_results(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda a: "echoed")
    async with harness(tmp_path, tools=[echo]) as h:
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": "1"}, id="c1")]),
            Fault(status=400),
        )
        sid = await h.runner.start_session("bot")
        call, recording = h.registry.call, asyncio.Event()

        async def stuck_error_record(
            session_id: str, op: Op[Any, ..., Any], *args: Any, **kwargs: Any
        ) -> Any:
            if op is SessionOps.record_error:  # e.g. waiting for session capacity
                recording.set()
                await asyncio.Event().wait()
            return await call(session_id, op, *args, **kwargs)

        h.registry.call = stuck_error_record  # type: ignore[method-assign, assignment]
        task = asyncio.create_task(h.runner.run(sid, "go"))
        await recording.wait()
        await cancel(task)
        kinds = [e["type"] for e in on_disk(tmp_path, sid)]
    assert kinds[-2:] == ["assistant_response", "tool_result"]


async def test_finished_turns_leave_no_per_session_state_in_memory(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        sids = [await h.runner.start_session("bot") for _ in range(5)]
        for sid in sids:
            h.server.enqueue(Reply(text="ok"))
            await h.runner.run(sid, "hi")
        assert len(h.runner._lines) == 0  # months of chats must not mean one entry per chat
        assert not any(h.runner.is_running(sid) for sid in sids)


async def test_a_tool_round_trip_feeds_the_result_back(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda a: f"echo:{a.get('x')}")
    async with harness(tmp_path, tools=[echo]) as h:
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": "42"}, id="c1")]),
            Reply(text="The tool said echo:42."),
        )
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "use the tool")
        events = await events_of(h, sid)
    assert isinstance(result, Complete)
    assert result.content == "The tool said echo:42."
    assert echo.calls == [{"x": "42"}]
    second = h.server.requests[-1].json["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "c1"
    assert second[-1] == {"role": "tool", "tool_call_id": "c1", "content": "echo:42"}
    assert [e.type for e in events][-3:] == [
        EventType.ASSISTANT_RESPONSE,
        EventType.TOOL_RESULT,
        EventType.ASSISTANT_RESPONSE,
    ]


async def test_several_calls_in_one_response_all_run(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda a: a.get("x"))
    async with harness(tmp_path, tools=[echo]) as h:
        h.server.enqueue(
            Reply(
                tool_calls=[ToolCallReply(name="echo", arguments={"x": str(i)}) for i in range(3)]
            ),
            Reply(text="done"),
        )
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "go")
    assert [c["x"] for c in echo.calls] == ["0", "1", "2"]
    tail = h.server.requests[-1].json["messages"][-3:]
    assert [m["content"] for m in tail] == ["0", "1", "2"]


async def test_the_iteration_limit_ends_with_a_clear_note(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda a: "again")
    async with harness(
        tmp_path,
        tools=[echo],
        responder=lambda req: Reply(
            tool_calls=[ToolCallReply(name="echo", arguments={"x": str(len(req.json["messages"]))})]
        ),
        max_tool_iterations=3,
    ) as h:
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "loop forever")
    assert isinstance(result, Complete)
    assert "stopped after 3 tool steps" in result.content
    assert len(echo.calls) == 3


async def test_the_same_call_three_times_in_a_row_is_stopped(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda a: "same")
    same = Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": "1"})])
    async with harness(tmp_path, tools=[echo]) as h:
        h.server.enqueue(same, same, same, Reply(text="ok, I stop"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "repeat")
    assert isinstance(result, Complete)
    assert result.content == "ok, I stop"
    assert len(echo.calls) == DOOM_LOOP_REPEATS - 1
    last_result = h.server.requests[-1].json["messages"][-1]["content"]
    assert last_result.startswith("Stopped: you called echo with the same arguments 3 times")


async def test_unknown_tools_and_malformed_arguments_become_correctable_errors(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda a: "fine")
    async with harness(tmp_path, tools=[echo]) as h:
        h.server.enqueue(
            Reply(
                tool_calls=[
                    ToolCallReply(name="nope", arguments={}),
                    ToolCallReply(name="echo", arguments='{"x": '),
                    ToolCallReply(name="ECHO", arguments={"x": "case"}),
                ]
            ),
            Reply(text="corrected"),
        )
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "go")
    assert isinstance(result, Complete)
    assert result.content == "corrected"
    results = [m["content"] for m in h.server.requests[-1].json["messages"][-3:]]
    assert results[0] == "Unknown tool 'nope'. Available tools: echo."
    assert results[1].startswith("Invalid arguments for echo:")
    assert results[2] == "fine"


async def test_a_429_then_success_is_retried_transparently(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Fault.rate_limited(retry_after=0.01), Reply(text="after the wait"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "hi")
    assert isinstance(result, Complete)
    assert result.content == "after the wait"
    assert len(h.server.requests) == 2


async def test_a_model_timeout_becomes_a_reply_that_says_so(tmp_path: Path) -> None:
    async with harness(tmp_path, retry=RetryPolicy(max_attempts=1), llm_timeout_seconds=1) as h:
        h.server.enqueue(Reply(text="too late", delay=3))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "hi")
        events = await events_of(h, sid)
    assert isinstance(result, Failed)
    assert "did not answer within 1s" in result.content
    assert "Your message is saved" in result.content
    assert events[-1].type == EventType.ERROR
    assert events[-1].data["code"] == "llm_error"


async def test_a_message_sent_mid_loop_steers_it_at_the_next_tool_boundary(
    tmp_path: Path,
) -> None:
    gate = asyncio.Event()
    started = asyncio.Event()

    async def slow(args: Any) -> str:
        started.set()
        await gate.wait()
        return "slow done"

    slow_tool = FnTool("slow", slow)
    other = FnTool("other", lambda a: "never")
    async with harness(tmp_path, tools=[slow_tool, other]) as h:
        h.server.enqueue(
            Reply(
                tool_calls=[
                    ToolCallReply(name="slow", arguments={}, id="a"),
                    ToolCallReply(name="other", arguments={}, id="b"),
                ]
            ),
            Reply(text="I see you changed your mind."),
        )
        sid = await h.runner.start_session("bot")
        first = asyncio.create_task(h.runner.run(sid, "start the long job"))
        await started.wait()
        second = asyncio.create_task(h.runner.run(sid, "actually, stop"))
        # recorded and handed to the running loop, however long that takes on a busy machine
        assert await eventually(lambda: "actually, stop" in h.runner._lines.steered(sid))
        gate.set()
        one, two = await asyncio.gather(first, second)
        events = await events_of(h, sid)
    assert isinstance(one, Complete)
    assert isinstance(two, Complete)
    assert one.content == two.content == "I see you changed your mind."
    assert two.steered
    assert other.calls == []
    last = h.server.requests[-1].json["messages"]
    assert last[-1] == {"role": "user", "content": "actually, stop"}
    assert last[-2] == {
        "role": "tool",
        "tool_call_id": "b",
        "content": "Skipped: new user message received",
    }
    users = [e.data["content"] for e in events if e.type == EventType.USER_MESSAGE]
    assert users == ["start the long job", "actually, stop"]  # persisted once each


async def test_tool_results_are_capped_before_they_are_stored(tmp_path: Path) -> None:
    big = FnTool("big", lambda a: ToolOutcome(True, "line of output\n" * 20000))
    async with harness(tmp_path, tools=[big], max_tool_iterations=5) as h:
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="big", arguments={})]), Reply(text="ok")
        )
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "go")
        events = await events_of(h, sid)
    stored = next(e for e in events if e.type == EventType.TOOL_RESULT).data["result"]["content"]
    assert "[truncated: kept first ~8000 of ~" in stored
    assert len(stored) < 60_000


async def test_two_hundred_kb_outputs_thirty_times_in_an_8k_window_never_overflow(
    tmp_path: Path,
) -> None:
    from duragent.context.tokens import counter_for_model
    from duragent.core.messages import Message, ToolCall, ToolDefinition

    counter = counter_for_model("gpt-4o")
    log_lines = "".join(f"{i:06d} GET /api/items?page={i} 200 {i % 97}ms\n" for i in range(5200))
    assert len(log_lines) > 200_000
    huge = FnTool("dump", lambda a: log_lines + f" {a.get('x')}")
    calls = iter(range(1000))

    def responder(req: Any) -> Reply:
        n = next(calls)
        if n < 30:
            return Reply(tool_calls=[ToolCallReply(name="dump", arguments={"x": str(n)})])
        return Reply(text="finished")

    async with harness(
        tmp_path,
        tools=[huge],
        responder=responder,
        max_tool_iterations=40,
        max_input_tokens=8192,
    ) as h:
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "dump 30 times")
    assert isinstance(result, Complete)
    assert result.content == "finished"
    assert len(huge.calls) == 30
    for request in h.server.requests:
        body = request.json
        messages = []
        for m in body["messages"]:
            calls_ = tuple(
                ToolCall(
                    id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"]
                )
                for c in m.get("tool_calls") or []
            )
            messages.append(
                Message(
                    role=m["role"],
                    content=m.get("content"),
                    tool_calls=calls_,
                    tool_call_id=m.get("tool_call_id"),
                )
            )
        tools = [
            ToolDefinition(
                name=t["function"]["name"],
                description=t["function"]["description"],
                parameters=t["function"]["parameters"],
            )
            for t in body.get("tools", [])
        ]
        sent = counter.count_messages(messages) + counter.count_tools(tools)
        assert sent <= 8192 - body["max_tokens"], sent


async def test_usage_is_summed_and_recorded_per_call(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda a: "r")
    async with harness(tmp_path, tools=[echo]) as h:
        h.server.enqueue(
            Reply(
                tool_calls=[ToolCallReply(name="echo", arguments={})],
                prompt_tokens=100,
                completion_tokens=7,
            ),
            Reply(text="done", prompt_tokens=150, completion_tokens=3),
        )
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "go")
        events = await events_of(h, sid)
    assert isinstance(result, Complete)
    assert result.usage.prompt_tokens == 250
    assert isinstance(result, Complete)
    assert result.usage.completion_tokens == 10
    usages = [e.data["usage"] for e in events if e.type == EventType.ASSISTANT_RESPONSE]
    assert usages == [
        {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
        {"prompt_tokens": 150, "completion_tokens": 3, "total_tokens": 153},
    ]
    assert isinstance(result, Complete)
    assert json.dumps(result.usage.to_dict())


async def test_the_cost_of_each_call_is_recorded_when_the_model_has_pricing(
    tmp_path: Path,
) -> None:
    pricing = "    pricing:\n      input_per_million: 2.5\n      output_per_million: 10\n"
    async with harness(tmp_path, model_extra=pricing) as h:
        h.server.enqueue(Reply(text="priced", prompt_tokens=1000, completion_tokens=100))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "how much?")
        events = await events_of(h, sid)
    assert isinstance(result, Complete)
    assert result.usage.cost_usd == 1000 * 2.5 / 1e6 + 100 * 10 / 1e6
    assert events[-1].data["usage"]["cost_usd"] == 0.0035


async def test_a_message_that_arrives_while_the_answer_is_written_is_answered_too(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="answer A", delay=2), Reply(text="answer to both"))
        sid = await h.runner.start_session("bot")
        first = asyncio.create_task(h.runner.run(sid, "question A"))
        assert await eventually(lambda: len(h.server.requests) == 1)
        second = asyncio.create_task(h.runner.run(sid, "and B"))
        assert await eventually(lambda: "and B" in h.runner._lines.steered(sid))
        one, two = await asyncio.gather(first, second)
        events = await events_of(h, sid)
    assert isinstance(one, Complete)
    assert (one.earlier, one.content) == (("answer A",), "answer to both")
    assert two == dataclasses.replace(one, steered=True)
    replies = [e.data["content"] for e in events if e.type == EventType.ASSISTANT_RESPONSE]
    assert replies == ["answer A", "answer to both"]
    assert h.server.requests[-1].json["messages"][-1] == {"role": "user", "content": "and B"}
