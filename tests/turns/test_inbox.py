"""The running loop's inbox: what it read, and nothing handed over once it ended."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from duragent.testing import Reply, ToolCallReply
from duragent.turns import Complete
from duragent.turns.inbox import Ending, Inbox
from tests.polling import eventually
from tests.turns.turn_fixtures import FnTool, harness


def test_what_the_loop_takes_is_marked_read_in_order() -> None:
    inbox = Inbox()
    a, b = inbox.put("a"), inbox.put("b")
    assert inbox.pending() == ["a", "b"]
    assert inbox.take() == ["a", "b"]
    assert a is not None
    assert a.read
    assert b is not None
    assert b.read
    assert inbox.take() == []


def test_a_closed_inbox_refuses_messages_and_returns_what_was_never_read() -> None:
    inbox = Inbox()
    inbox.put("read")
    inbox.take()
    unread = inbox.put("unread")
    assert inbox.close() == [unread]
    assert unread is not None
    assert not unread.read
    assert not inbox.is_open
    assert inbox.put("too late") is None


def test_closing_stamps_every_ticket_with_how_the_loop_ended() -> None:
    inbox = Inbox()
    read, unread = inbox.put("read"), inbox.put("unread")
    inbox.take()
    late = inbox.put("late")
    assert read is not None
    assert unread is not None
    assert late is not None
    assert not read.settled
    inbox.close(Ending.PAUSED)
    assert [t.ending for t in (read, unread, late)] == [Ending.PAUSED] * 3


def test_an_answering_loop_settles_only_what_it_read() -> None:
    inbox = Inbox()
    read = inbox.put("read")
    inbox.take()
    unread = inbox.put("unread")
    inbox.close(Ending.ANSWERED)
    assert read is not None
    assert unread is not None
    assert not read.needs_own_turn
    assert unread.needs_own_turn


def test_a_paused_loop_keeps_even_what_it_never_read() -> None:
    inbox = Inbox()
    unread = inbox.put("unread")
    inbox.close(Ending.PAUSED)
    assert unread is not None
    assert not unread.needs_own_turn  # the model sees it when the turn goes on


def test_a_cut_loop_settles_nothing_it_read() -> None:
    inbox = Inbox()
    read = inbox.put("read")
    inbox.take()
    inbox.close(Ending.CUT)
    assert read is not None
    assert read.needs_own_turn


async def test_an_http_message_the_loop_never_read_gets_a_reply_of_its_own(
    tmp_path: Path,
) -> None:
    """Two ``run`` calls: the second arrives while the first's only tool runs, and the loop
    stops at ``max_tool_iterations`` without reading it. Its caller used to receive the
    first turn's note, a reply written without its message."""
    gate, started = asyncio.Event(), asyncio.Event()

    async def hold(args: Any) -> str:
        started.set()
        await gate.wait()
        return "held"

    async with harness(tmp_path, tools=[FnTool("hold", hold)], max_tool_iterations=1) as h:
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="hold", id="h1")]), Reply(text="about the second")
        )
        sid = await h.runner.start_session("bot")
        first = asyncio.create_task(h.runner.run(sid, "start"))
        assert await eventually(started.is_set)
        second = asyncio.create_task(h.runner.run(sid, "and this"))
        assert await eventually(lambda: "and this" in h.runner._lines.steered(sid))
        gate.set()
        one, two = await asyncio.gather(first, second)
    assert isinstance(one, Complete)
    assert "stopped after 1 tool steps" in one.content
    assert isinstance(two, Complete)
    assert two.content == "about the second"
    assert h.server.last_request.json["messages"][-1] == {"role": "user", "content": "and this"}


def test_pausing_names_the_newest_message_handed_over_and_refuses_later_ones() -> None:
    inbox = Inbox()
    inbox.put("first", 11)
    inbox.put("second", 12)
    inbox.take()
    assert inbox.pause() == 12
    assert inbox.put("after the pause", 13) is None  # it gets a turn of its own
