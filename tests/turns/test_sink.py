"""A sink is told its stream may open once the message is recorded, before any progress.

The round trip that records the message brings the session's agent and disconnect policy,
so a stream reads nothing of the session first (issue 35). A message steered into a running
loop runs no loop of its own: its stream opens with no policy (a client leaving it only
stops waiting).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from duragent.core.messages import ToolCall
from duragent.testing import Reply
from tests.polling import eventually
from tests.turns.turn_fixtures import harness


class RecordingSink:
    """A TurnSink keeping what it was told, in order."""

    def __init__(self) -> None:
        self.told: list[tuple[str, ...]] = []

    async def opened(self, agent: str, on_disconnect: str) -> None:
        self.told.append(("opened", agent, on_disconnect))

    async def token(self, text: str) -> None:
        self.told.append(("token", text))

    async def tool_call(self, call: ToolCall) -> None:
        self.told.append(("tool_call", call.name))

    async def tool_result(self, call_id: str, success: bool, content: str) -> None:
        self.told.append(("tool_result", call_id))

    async def approval_required(self, call_id: str, command: str) -> None:
        self.told.append(("approval_required", call_id))

    async def summary(self, round_: int, through_seq: int, messages: int) -> None:
        self.told.append(("summary", str(round_)))


async def test_a_turn_opens_its_sink_with_the_sessions_agent_and_policy_first(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, on_disconnect="continue") as h:
        h.server.enqueue(Reply(text="Hello!"))
        sid = await h.runner.start_session("bot")
        sink = RecordingSink()
        await h.runner.run(sid, "hi", sink=sink)
    assert sink.told[0] == ("opened", "bot", "continue")
    assert "".join(t[1] for t in sink.told if t[0] == "token") == "Hello!"
    assert [t for t in sink.told if t[0] == "opened"] == [sink.told[0]]


async def test_a_message_steered_into_a_running_loop_opens_with_no_policy(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="answer A", delay=2), Reply(text="answer to both"))
        sid = await h.runner.start_session("bot")
        first = asyncio.create_task(h.runner.run(sid, "question A"))
        assert await eventually(lambda: len(h.server.requests) == 1)
        sink = RecordingSink()
        second = asyncio.create_task(h.runner.run(sid, "and B", sink=sink))
        assert await eventually(lambda: "and B" in h.runner._lines.steered(sid))
        await asyncio.gather(first, second)
    assert sink.told == [("opened", "", "")]
