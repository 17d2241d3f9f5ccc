"""A recovery's resumed turn and a message taken in meanwhile are answered by one turn.

A node that takes a session over from a dead node finishes what it left (the gateway's
take-over recovery) while the message that made it take the session over is being taken in:
both may hand the chat queue the same message. Before, each got a turn of its own: two
replies to one message (issue 40's month, with two nodes).
"""

from __future__ import annotations

from pathlib import Path

from tests.frontkit.test_queue import CHAT, Kit, queue_kit, spec
from tests.polling import eventually


async def seq_of(kit: Kit, sid: str, text: str) -> int:
    events = await kit.h.registry.handle(sid).events()
    return next(e.seq for e in events if e.data.get("content") == text)


async def test_a_resumed_message_whose_turn_is_queued_already_gets_no_second_turn(
    tmp_path: Path,
) -> None:
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        sid = await kit.offer("one", "p1", spec("sequential"))
        assert await eventually(kit.started.is_set)
        await kit.offer("two", "p2", spec("sequential"))  # its turn waits behind "one"
        seq = await seq_of(kit, sid, "two")
        kit.queues.resume(sid, CHAT, seq, "two", "p2", queue=spec("sequential"))
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 2)
        assert await eventually(lambda: len(kit.queues) == 0)
    assert kit.replies() == [("p1", "re: one"), ("p2", "re: two")]


async def test_a_message_recorded_before_a_resume_took_it_is_not_queued_again(
    tmp_path: Path,
) -> None:
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        sid = await kit.offer("one", "p1", spec())
        assert await eventually(kit.started.is_set)
        recorded = await kit.h.runner.accept(sid, "two", platform_message_id="p2", steer=False)
        kit.queues.resume(sid, CHAT, recorded.seq, "two", "p2", queue=spec())  # the recovery
        await kit.offer("two", "p2", spec())  # the same message, its offer finishing late
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 2)
        assert await eventually(lambda: len(kit.queues) == 0)
        assert len(kit.h.server.requests) == 3  # the held call, its answer, one more turn
    assert [text for _, text in kit.replies()] == ["re: one", "re: two"]
