"""The room an agent gives pins: refused at once when a pin cannot fit, kept by every turn.

A real runner over a real store and the scripted model at a 4K window, where pins get a few
hundred tokens: a pin that could never be sent used to be recorded, and every later turn of
the session then failed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.context.tokens import counter_for_model
from duragent.core.events import EventType
from duragent.testing import RecordedRequest, Reply, ScriptItem, ToolCallReply
from duragent.turns import Complete, PinRefusedError
from duragent.turns.pins import pin_room
from tests.turns.summary_fixtures import responder
from tests.turns.turn_fixtures import harness


def words(count: int, start: int = 0) -> str:
    return " ".join(f"fact{k} alpha{k % 7}" for k in range(start, start + count))


def filling(room: int, already: int = 0) -> str:
    """The longest run of ``words`` whose pin line fits what ``room`` leaves after ``already``."""
    counter = counter_for_model("gpt-4o")
    count = 1
    while already + counter.count_text(f"- note: {words(count + 1)}") + 1 <= room:
        count += 1
    return words(count)


async def test_a_pin_past_the_agents_room_is_refused_and_nothing_is_recorded(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, max_input_tokens=4096) as h:
        room = pin_room(h.agent, tmp_path / ".duragent")
        sid = await h.runner.start_session("bot")
        with pytest.raises(PinRefusedError) as alone:
            await h.runner.pin(sid, words(400), kind="note", source="operator")
        kept = await h.runner.pin(sid, words(40), kind="note", source="operator")
        with pytest.raises(PinRefusedError) as together:
            await h.runner.pin(sid, filling(room), kind="note", source="user")
        memory = await h.registry.handle(sid).memory()
        events = await h.registry.handle(sid).events()
    assert (alone.value.room, alone.value.others) == (room, 0)
    assert alone.value.new > room
    assert f"at most {room} tokens" in str(alone.value)
    assert together.value.others > 0
    assert "unpin another" in together.value.fix
    assert [p.pin_id for p in memory.pins] == [kept]
    assert [e.type for e in events].count(EventType.PIN) == 1


async def test_a_pin_that_filled_the_room_still_fits_a_turn_with_a_long_extra_prompt_block(
    tmp_path: Path,
) -> None:
    """The room is the agent's, not the turn's: a group's chatter never fails a pin later.

    Before, each turn measured the pins against what *its* prompt left, so a pin accepted
    with a short prompt failed the turn whose prompt carried a group's recent chatter.
    """
    async with harness(tmp_path, responder=responder(), max_input_tokens=4096) as h:
        room = pin_room(h.agent, tmp_path / ".duragent")
        sid = await h.runner.start_session("bot")
        await h.runner.pin(sid, filling(room), kind="note", source="operator")
        result = await h.runner.run(sid, "hello", context_blocks=[words(150)])
    assert isinstance(result, Complete)


async def test_the_agents_record_decision_is_refused_when_the_pins_have_no_room_left(
    tmp_path: Path,
) -> None:
    def agent(request: RecordedRequest) -> ScriptItem:
        if request.json["messages"][-1]["content"] == "decide":
            decision = {"decision": "Use SI units everywhere, always, for every quantity."}
            return Reply(tool_calls=[ToolCallReply(name="record_decision", arguments=decision)])
        return Reply(text="ok")

    async with harness(
        tmp_path,
        responder=responder(agent=agent),
        max_input_tokens=4096,
        builtins=["record_decision"],
    ) as h:
        room = pin_room(h.agent, tmp_path / ".duragent")
        sid = await h.runner.start_session("bot")
        await h.runner.pin(sid, filling(room), kind="note", source="operator")
        result = await h.runner.run(sid, "decide")
        memory = await h.registry.handle(sid).memory()
        results = [
            e.data["result"]["content"]
            for e in await h.registry.handle(sid).events()
            if e.type == EventType.TOOL_RESULT
        ]
    assert isinstance(result, Complete)
    assert len(memory.pins) == 1
    assert results[0].startswith("Error: not recorded: this pin needs")
