"""The files ``send_file`` attached go with the turn's reply: recorded in it, returned with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duragent.core.attachments import AttachmentKind
from duragent.core.events import EventType
from duragent.testing import Fault, Reply, ToolCallReply
from duragent.tools.send_file import ReplyFile
from duragent.turns import AwaitingApproval, Complete, Failed
from tests.frontkit.media_kit import png, sha256
from tests.turns.turn_fixtures import FnTool, Harness, harness

PHOTO = png(30, 20)
ASK_FOR_OTHERS = """\
apiVersion: duragent/v1alpha1
kind: Policy
mode: ask
allow:
  - "builtin:send_file:*"
"""
DENY_DOWNLOADS = """\
apiVersion: duragent/v1alpha1
kind: Policy
deny:
  - "builtin:send_file:http*"
"""


def send_file(call_id: str = "f1", **args: Any) -> Reply:
    return Reply(tool_calls=[ToolCallReply(name="send_file", arguments=args, id=call_id)])


def write_chart(h: Harness) -> None:
    (h.agent.directory / "chart.png").write_bytes(PHOTO)


def reply_records(events: list[Any]) -> list[Any]:
    return [
        e.data.get("attachments")
        for e in events
        if e.type == EventType.ASSISTANT_RESPONSE and not e.data.get("tool_calls")
    ]


async def test_a_file_the_model_sends_is_recorded_with_the_reply_and_returned_with_it(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, builtins=["send_file"]) as h:
        write_chart(h)
        h.server.enqueue(
            send_file(path="chart.png", caption="Sales by month"), Reply(text="Here it is.")
        )
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "chart please")
        events = await h.registry.handle(sid).events()
        kept = await h.runner.attachments.read(sid, sha256(PHOTO))
        called = h.server.requests[1].json["messages"][-1]
    assert isinstance(result, Complete)
    assert result.content == "Here it is."
    [file] = result.attachments
    assert (file.attachment.kind, file.attachment.name, file.caption) == (
        AttachmentKind.IMAGE,
        "chart.png",
        "Sales by month",
    )
    assert kept == PHOTO
    assert "will be sent to the chat with your reply" in called["content"]
    [records] = reply_records(events)
    assert ReplyFile.files_of(records) == (file,)
    reply = next(e for e in events if e.seq == result.reply_seq)
    assert reply.data["attachments"] == records


async def test_a_reply_without_files_records_none(tmp_path: Path) -> None:
    async with harness(tmp_path, builtins=["send_file"]) as h:
        h.server.enqueue(Reply(text="Just words."))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "hi")
        events = await h.registry.handle(sid).events()
    assert isinstance(result, Complete)
    assert result.attachments == ()
    assert reply_records(events) == [None]


async def test_files_sent_before_an_approval_go_with_the_reply_after_it(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda a: "ran")
    echo_call = Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": "risky"}, id="c1")])
    async with harness(tmp_path, tools=[echo], builtins=["send_file"], policy=ASK_FOR_OTHERS) as h:
        write_chart(h)
        h.server.enqueue(
            send_file(path="chart.png"), echo_call, Reply(text="Done, chart attached.")
        )
        sid = await h.runner.start_session("bot")
        paused = await h.runner.run(sid, "chart, then echo")
        assert isinstance(paused, AwaitingApproval)
        result = await h.runner.approve(sid, "c1", "allow_once")
    assert isinstance(result, Complete)
    assert [f.attachment.sha256 for f in result.attachments] == [sha256(PHOTO)]


async def test_a_file_waits_for_the_next_reply_when_the_turn_fails(tmp_path: Path) -> None:
    async with harness(tmp_path, builtins=["send_file"]) as h:
        write_chart(h)
        h.server.enqueue(send_file(path="chart.png"), Fault.unauthorized())
        sid = await h.runner.start_session("bot")
        failed = await h.runner.run(sid, "chart please")
        h.server.enqueue(Reply(text="Here is the chart after all."))
        result = await h.runner.run(sid, "try again")
    assert isinstance(failed, Failed)
    assert isinstance(result, Complete)
    assert [f.attachment.name for f in result.attachments] == ["chart.png"]


async def test_the_policy_decides_on_send_file_like_any_tool(tmp_path: Path) -> None:
    async with harness(tmp_path, builtins=["send_file"], policy=DENY_DOWNLOADS) as h:
        h.server.enqueue(send_file(url="https://example.com/a.pdf"), Reply(text="Could not."))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "send the pdf")
        told = h.server.requests[1].json["messages"][-1]["content"]
    assert isinstance(result, Complete)
    assert result.attachments == ()
    assert "denied" in told.lower()


async def test_an_agent_that_does_not_list_send_file_is_not_offered_it(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="no tools"))
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "hi")
        offered = h.server.requests[0].json.get("tools") or []
    assert "send_file" not in [t["function"]["name"] for t in offered]
