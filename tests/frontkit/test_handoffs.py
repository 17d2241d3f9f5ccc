"""A plain chat turn talks to its session twice: its message with the turn's context, its reply.

Each ask of a session actor is two thread hand-offs (the request to the actor's thread, the
answer back to the event loop); they were a fifth of a chat message's CPU (issue 35). The
delivery record is *told* (one hand-off, nobody waits for it): the actor writes it before
anything asked after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duragent.session.operations import SessionOps
from duragent.session.ops import Op
from tests.frontkit.test_queue import queue_kit, spec
from tests.polling import eventually


class Counted:
    """The registry's asks and tells, in order, by operation."""

    def __init__(self, registry: Any) -> None:
        self.asks: list[Op[Any, ..., Any]] = []
        self.tells: list[Op[Any, ..., Any]] = []
        call, tell = registry.call, registry.tell

        async def counting_call(sid: str, op: Op[Any, ..., Any], *args: Any, **kw: Any) -> Any:
            self.asks.append(op)
            return await call(sid, op, *args, **kw)

        def counting_tell(sid: str, op: Op[Any, ..., Any], *args: Any, **kw: Any) -> bool:
            told: bool = tell(sid, op, *args, **kw)
            if told:
                self.tells.append(op)
            return told

        registry.call = counting_call
        registry.tell = counting_tell

    def clear(self) -> None:
        self.asks.clear()
        self.tells.clear()


async def test_a_plain_chat_turn_asks_its_session_twice_and_tells_it_the_delivery(
    tmp_path: Path,
) -> None:
    async with queue_kit(tmp_path) as kit:
        sid = await kit.offer("first", "p1", spec())  # the session's first reply reads state
        assert await eventually(lambda: len(kit.replies()) == 1)
        assert await eventually(lambda: len(kit.queues) == 0)
        counted = Counted(kit.h.registry)
        await kit.offer("second", "p2", spec())
        assert await eventually(lambda: len(kit.replies()) == 2)
        assert await eventually(lambda: len(kit.queues) == 0)
        asks, tells = list(counted.asks), list(counted.tells)
        events = await kit.h.registry.handle(sid).events()
    assert asks == [SessionOps.add_user_message, SessionOps.add_assistant_response]
    assert tells == [SessionOps.record_delivery]
    assert kit.replies() == [("p1", "re: first"), ("p2", "re: second")]
    deliveries = [e for e in events if e.type == "delivery"]
    assert len(deliveries) == 2  # told, and written before the next read


async def test_a_write_between_recording_and_answering_makes_the_turn_read_its_context_again(
    tmp_path: Path,
) -> None:
    async with queue_kit(tmp_path) as kit:
        sid = await kit.session()
        accepted = await kit.h.runner.accept(
            sid, "hello", platform_message_id="p1", starts_turn=True
        )
        await kit.h.runner.post(sid, "a scheduled note in between")
        counted = Counted(kit.h.registry)
        result = await kit.h.runner.answer(sid, accepted.seq, "hello")
    assert counted.asks[0] is SessionOps.turn_context  # the kept context went stale
    request = kit.h.server.requests[-1].json["messages"]
    assert any(m.get("content") == "a scheduled note in between" for m in request)
    assert result.content == "re: hello"


async def test_a_batch_message_steered_into_a_running_turn_costs_one_ask(tmp_path: Path) -> None:
    """The ticket says how the loop ended: nothing is asked of the session afterwards (the
    chat queue used to ask ``info`` to learn whether the turn paused)."""
    async with queue_kit(tmp_path) as kit:
        await kit.offer("first", "p0", spec())  # the session's first reply reads state
        assert await eventually(lambda: len(kit.replies()) == 1)
        assert await eventually(lambda: len(kit.queues) == 0)
        kit.start_held_turn()
        await kit.offer("start", "p1", spec())
        assert await eventually(kit.started.is_set)
        counted = Counted(kit.h.registry)
        await kit.offer("also this", "p2", spec())
        steered = list(counted.asks)
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 2)
        assert await eventually(lambda: len(kit.queues) == 0)
        asks = list(counted.asks)
    assert steered == [SessionOps.add_user_message]
    assert SessionOps.info not in asks
    assert kit.replies()[-1] == ("p1", "re: also this")
