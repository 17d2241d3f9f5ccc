"""A message sent again after its turn was cut gets what was recorded, not a bare duplicate.

The cut is made the way a node that stopped (or lost the session to another node) leaves
it: the message and the model's tool calls are on disk, a result is missing, and the session
is loaded again (recovery closes the open call as interrupted). Then either another message
goes on, or the same message is sent again under its key.
"""

from __future__ import annotations

from pathlib import Path

from duragent.core.messages import ToolCall
from duragent.testing import Reply
from duragent.testing.script import RecordedRequest
from duragent.turns import CallOutcome, Complete, Duplicate
from tests.turns.turn_fixtures import Harness, harness


def echo(request: RecordedRequest) -> Reply:
    last = request.json["messages"][-1]
    return Reply(text=f"re: {str(last.get('content'))[:50]}")


async def cut_turn(h: Harness, *, ran: bool = False) -> str:
    """A session whose turn for ``look`` (key ``k1``) was cut while its call ``c2`` ran.

    ``ran``: an earlier call ``c1`` of the same turn finished and its result was saved.
    """
    sid = await h.runner.start_session("bot")
    session = h.registry.handle(sid)
    await session.add_user_message("look", platform_message_id="k1")
    if ran:
        first = ToolCall(id="c1", name="look", arguments="{}")
        await session.add_assistant_response("", tool_calls=[first], durable=True)
        await session.add_tool_result("c1", True, "looked")
    cut = ToolCall(id="c2", name="bash", arguments='{"command": "sleep 60"}')
    await session.add_assistant_response("", tool_calls=[cut], durable=True)
    await h.registry.stop(sid)  # the node went away mid-call; loading it again closes c2
    return sid


async def test_a_copy_of_a_message_whose_cut_turn_was_never_answered_says_interrupted(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, responder=echo) as h:
        sid = await cut_turn(h, ran=True)
        later = await h.runner.run(sid, "hello")
        copy = await h.runner.run(sid, "look", platform_message_id="k1")
    assert isinstance(later, Complete)
    assert isinstance(copy, Duplicate)
    assert copy.interruption is not None
    assert copy.interruption.reply is None  # the talk went on without an answer to it
    assert copy.interruption.message_seq >= 1
    assert copy.interruption.calls == (
        CallOutcome("c1", "look", "ran"),
        CallOutcome("c2", "bash", "interrupted"),
    )


async def test_a_copy_of_a_message_whose_cut_turn_went_on_gets_that_reply(tmp_path: Path) -> None:
    async with harness(tmp_path, responder=echo) as h:
        sid = await cut_turn(h)
        resumed = await h.runner.run(sid, "look", platform_message_id="k1")
        copy = await h.runner.run(sid, "look", platform_message_id="k1")
    assert isinstance(resumed, Complete)  # the turn went on from the interrupted call
    assert resumed.content.startswith("re: Error: tool execution interrupted")
    assert resumed.interruption is not None
    assert resumed.interruption.calls == (CallOutcome("c2", "bash", "interrupted"),)
    assert isinstance(copy, Duplicate)
    assert copy.interruption is not None
    assert copy.interruption.reply == resumed.content
    assert copy.interruption.message_id == resumed.message_id


async def test_a_copy_of_a_message_answered_normally_is_a_plain_duplicate(tmp_path: Path) -> None:
    async with harness(tmp_path, responder=echo) as h:
        sid = await h.runner.start_session("bot")
        first = await h.runner.run(sid, "hi", platform_message_id="k1")
        copy = await h.runner.run(sid, "hi", platform_message_id="k1")
    assert isinstance(first, Complete)
    assert first.interruption is None
    assert copy == Duplicate(session_id=sid)
