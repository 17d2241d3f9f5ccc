"""A cut tool output is saved in full, named by its notice, and read back through a real turn.

Issue 20 item 5, end to end: scripted model over HTTP, real runner, real session store.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from duragent.testing import RecordedRequest, Reply, ToolCallReply
from duragent.tools.tool_output import ToolOutputTool
from duragent.turns.result import Complete
from tests.turns.turn_fixtures import FnTool, harness

NEEDLE = "FATAL: disk /dev/sdb1 is full"
BIG = "\n".join(
    NEEDLE if n == 7_777 else f"build step {n} finished in {n % 97} ms" for n in range(12_000)
)
SAVED = re.compile(r"full output saved as (out_[0-9A-Z]{26}), read it with tool_output")


def last_tool_text(request: RecordedRequest) -> str:
    messages = request.json["messages"]
    return next(m["content"] for m in reversed(messages) if m["role"] == "tool")


def tool_names(request: RecordedRequest) -> list[str]:
    return [t["function"]["name"] for t in request.json.get("tools", [])]


async def test_a_cut_output_is_saved_named_and_read_back_by_grep(tmp_path: Path) -> None:
    build = FnTool("build", lambda a: BIG)

    def model(request: RecordedRequest) -> Reply:
        text = last_tool_text(request)
        found = SAVED.search(text)
        if found and "build step" in text:  # the cut result: look for the failure
            args = {"id": found[1], "mode": "grep", "pattern": "fatal", "ignore_case": True}
            return Reply(tool_calls=[ToolCallReply(name="tool_output", arguments=args)])
        return Reply(text=f"found: {text.splitlines()[-1]}")

    async with harness(tmp_path, tools=[build], responder=model) as h:
        h.server.enqueue(Reply(tool_calls=[ToolCallReply(name="build", arguments={"x": "all"})]))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "why did the build fail?")
        requests = list(h.server.requests)

    assert isinstance(result, Complete)
    assert result.content == f"found: 7778: {NEEDLE}"
    cut = last_tool_text(requests[1])
    assert NEEDLE not in cut  # Layer 3a kept the head only
    output_id = SAVED.search(cut)[1]  # type: ignore[index]
    assert "tool_output" not in tool_names(requests[0])  # nothing saved yet: not offered
    assert "tool_output" in tool_names(requests[1])  # offered from the first save on
    saved = tmp_path / ".duragent" / "sessions" / sid / "outputs" / f"{output_id}.txt"
    assert saved.read_text(encoding="utf-8") == BIG
    events = [
        json.loads(line) for line in (saved.parent.parent / "events.jsonl").read_text().splitlines()
    ]
    stored = [e["result"]["content"] for e in events if e["type"] == "tool_result"]
    assert stored[0] == cut  # the session records the cut result, naming the saved copy


async def test_another_session_cannot_read_the_output(tmp_path: Path) -> None:
    build = FnTool("build", lambda a: BIG)
    async with harness(tmp_path, tools=[build, ToolOutputTool()]) as h:  # offered to both
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="build", arguments={"x": "all"})]),
            Reply(text="cut"),
        )
        first = await h.runner.start_session("bot")
        await h.runner.run(first, "build it")
        output_id = SAVED.search(last_tool_text(h.server.requests[-1]))[1]  # type: ignore[index]

        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="tool_output", arguments={"id": output_id})]),
            Reply(text="done"),
        )
        second = await h.runner.start_session("bot")
        await h.runner.run(second, "read the other session's output")
        answer = last_tool_text(h.server.requests[-1])

    assert "build step" not in answer
    assert answer.startswith(f"no saved output '{output_id}' in this session")


async def test_a_cut_answer_of_tool_output_is_not_saved_again(tmp_path: Path) -> None:
    build = FnTool("build", lambda a: BIG)

    def model(request: RecordedRequest) -> Reply:
        found = SAVED.search(last_tool_text(request))
        if found:  # read far more than one result may hold
            args = {"id": found[1], "mode": "head", "lines": 400}
            return Reply(tool_calls=[ToolCallReply(name="tool_output", arguments=args)])
        return Reply(text="read it")

    # a 4096 window: one result holds ~800 tokens, far less than 400 lines
    async with harness(tmp_path, tools=[build], responder=model, max_input_tokens=4096) as h:
        h.server.enqueue(Reply(tool_calls=[ToolCallReply(name="build", arguments={"x": "all"})]))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "show me the log")
        answer = last_tool_text(h.server.requests[-1])

    assert isinstance(result, Complete)
    assert "[truncated: kept first" in answer  # the answer itself was cut to the cap…
    assert "full output saved as" not in answer  # …but not saved: its source already is
    outputs = tmp_path / ".duragent" / "sessions" / sid / "outputs"
    assert len(list(outputs.iterdir())) == 1
