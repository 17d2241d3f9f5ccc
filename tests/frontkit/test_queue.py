"""``SessionQueues``: every chat message recorded at once, answered one turn at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duragent.agents.spec import DebounceSpec, QueueSpec
from duragent.core.events import EventType
from duragent.frontkit import ChatRef, ChatTurns, Inbound, MemoryOutbound
from duragent.frontkit.queue import TURN_FAILED, Dispatcher, SessionQueues
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.testing import Fault, Reply, ToolCallReply
from duragent.testing.script import RecordedRequest
from tests.polling import eventually
from tests.turns.turn_fixtures import FnTool, Harness, harness

CHAT = ChatRef("telegram", "42")
NO_DEBOUNCE = DebounceSpec(enabled=False)


def last_user_text(request: RecordedRequest) -> str:
    """The text of the request's last user message (what the model is answering)."""
    for message in reversed(request.json["messages"]):
        if message["role"] == "user":
            return str(message["content"])
    return ""


def echo(request: RecordedRequest) -> Reply:
    return Reply(text=f"re: {last_user_text(request)}")


def spec(mode: str = "batch", **options: Any) -> QueueSpec:
    options.setdefault("debounce", NO_DEBOUNCE)
    return QueueSpec(mode=mode, **options)  # type: ignore[arg-type]


@dataclass
class Kit:
    h: Harness
    queues: SessionQueues
    outbound: MemoryOutbound
    tasks: BackgroundTasks
    gate: asyncio.Event
    started: asyncio.Event

    async def session(self, chat: ChatRef = CHAT) -> str:
        return await self.h.runner.session_for_chat(chat.gateway, chat.chat_id, "bot")

    async def offer(
        self, text: str, pid: str, queue: QueueSpec, *, sender: str = "u1", chat: ChatRef = CHAT
    ) -> str:
        sid = await self.session(chat)
        inbound = Inbound(chat, text, agent="bot", sender_id=sender, message_id=pid)
        await self.queues.offer(sid, inbound, queue)
        return sid

    def replies(self, chat: ChatRef = CHAT) -> list[tuple[str | None, str]]:
        """(reply_to, text) of every text sent to ``chat``, in order."""
        return [(a.reply_to, a.text) for a in self.outbound.of_kind("text") if a.chat == chat]

    async def user_texts(self, sid: str) -> list[str]:
        events = await self.h.registry.handle(sid).events()
        return [str(e.data["content"]) for e in events if e.type == EventType.USER_MESSAGE]

    def start_held_turn(self) -> None:
        """The next turn calls the ``hold`` tool, which waits for ``gate``."""
        self.h.server.enqueue(Reply(tool_calls=[ToolCallReply(name="hold", id="h1")]))


def draining(sid: str) -> bool:
    return any(t.get_name() == f"chat-queue-{sid}" for t in asyncio.all_tasks())


@asynccontextmanager
async def queue_kit(
    tmp_path: Path, *, turn_timeout: float | None = None, responder: Any = echo, **session: Any
) -> AsyncIterator[Kit]:
    gate, started = asyncio.Event(), asyncio.Event()

    async def hold(args: Any) -> str:
        started.set()
        await gate.wait()
        return "held"

    outbound = MemoryOutbound()
    tasks = BackgroundTasks(grace_seconds=2)
    tools = [FnTool("hold", hold)]
    async with harness(tmp_path, tools=tools, responder=responder, **session) as h:
        chat = ChatTurns(h.runner, outbound, tasks, typing_every=0.05)
        queues = SessionQueues(h.runner, chat, outbound, tasks, turn_timeout=turn_timeout)
        try:
            yield Kit(h, queues, outbound, tasks, gate, started)
        finally:
            await tasks.stop()


async def test_offer_returns_once_the_message_is_on_disk_without_waiting_for_the_model(
    tmp_path: Path,
) -> None:
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        sid = await kit.offer("hello", "p1", spec())
        assert await kit.user_texts(sid) == ["hello"]  # recorded when offer returned
        assert await eventually(kit.started.is_set)  # the turn runs in the background
        assert kit.replies() == []
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 1)
        assert await eventually(lambda: len(kit.queues) == 0)
    assert kit.replies() == [("p1", "re: hello")]


async def test_session_queues_is_the_pipelines_dispatcher(tmp_path: Path) -> None:
    async with queue_kit(tmp_path) as kit:
        dispatcher: Dispatcher = kit.queues
        sid = await kit.session()
        await dispatcher.offer(sid, Inbound(CHAT, "hi", agent="bot", message_id="p1"), spec())
        assert await eventually(lambda: kit.replies() == [("p1", "re: hi")])


async def test_batch_messages_sent_while_busy_are_answered_by_the_running_turn(
    tmp_path: Path,
) -> None:
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        sid = await kit.offer("start", "p1", spec())
        assert await eventually(kit.started.is_set)
        await kit.offer("also a", "p2", spec())
        await kit.offer("also b", "p3", spec())
        assert await kit.user_texts(sid) == ["start", "also a", "also b"]
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 1)
        assert await eventually(lambda: len(kit.queues) == 0)
    assert kit.replies() == [("p1", "re: also b")]  # one reply, seeing both late messages
    assert len(kit.h.server.requests) == 2  # the tool call, then the answer: no extra turn


async def test_sequential_gives_each_waiting_message_its_own_turn_and_reply(
    tmp_path: Path,
) -> None:
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        await kit.offer("one", "p1", spec("sequential"))
        assert await eventually(kit.started.is_set)
        await kit.offer("two", "p2", spec("sequential"))
        await kit.offer("three", "p3", spec("sequential"))
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 3)
        requests = kit.h.server.requests
    assert kit.replies() == [("p1", "re: one"), ("p2", "re: two"), ("p3", "re: three")]
    # Each later turn's request ends with the message it answers, shown again after the
    # replies written since it arrived.
    assert requests[-1].json["messages"][-1] == {"role": "user", "content": "three"}
    assert requests[-2].json["messages"][-1] == {"role": "user", "content": "two"}


async def test_drop_mode_neither_records_nor_answers_a_message_sent_while_busy(
    tmp_path: Path,
) -> None:
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        sid = await kit.offer("one", "p1", spec("drop"))
        assert await eventually(kit.started.is_set)
        await kit.offer("ignored", "p2", spec("drop"))
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 1)
        assert await eventually(lambda: len(kit.queues) == 0)
        await kit.offer("later", "p3", spec("drop"))  # idle again: answered
        assert await eventually(lambda: len(kit.replies()) == 2)
        recorded = await kit.user_texts(sid)
    assert recorded == ["one", "later"]
    assert kit.replies() == [("p1", "re: one"), ("p3", "re: later")]


async def test_a_full_queue_drops_the_new_message_with_drop_new(tmp_path: Path) -> None:
    queue = spec("sequential", max_pending=1, overflow="drop_new")
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        sid = await kit.offer("one", "p1", queue)
        assert await eventually(kit.started.is_set)
        await kit.offer("two", "p2", queue)
        await kit.offer("three", "p3", queue)
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 2)
        assert await eventually(lambda: len(kit.queues) == 0)
        recorded = await kit.user_texts(sid)
    assert recorded == ["one", "two"]
    assert kit.replies() == [("p1", "re: one"), ("p2", "re: two")]


async def test_a_full_queue_rejects_the_new_message_with_the_reject_message(
    tmp_path: Path,
) -> None:
    queue = spec("sequential", max_pending=1, overflow="reject", reject_message="Busy, later!")
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        sid = await kit.offer("one", "p1", queue)
        assert await eventually(kit.started.is_set)
        await kit.offer("two", "p2", queue)
        await kit.offer("three", "p3", queue)
        assert kit.replies() == [("p3", "Busy, later!")]  # said before offer returned
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 3)
        recorded = await kit.user_texts(sid)
    assert recorded == ["one", "two"]
    assert kit.replies()[1:] == [("p1", "re: one"), ("p2", "re: two")]


async def test_a_full_queue_with_drop_old_answers_the_newest_and_keeps_the_oldest_on_disk(
    tmp_path: Path,
) -> None:
    queue = spec("sequential", max_pending=1, overflow="drop_old")
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        sid = await kit.offer("one", "p1", queue)
        assert await eventually(kit.started.is_set)
        await kit.offer("two", "p2", queue)
        await kit.offer("three", "p3", queue)
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 2)
        assert await eventually(lambda: len(kit.queues) == 0)
        recorded = await kit.user_texts(sid)
    assert recorded == ["one", "two", "three"]  # nothing accepted is lost
    assert kit.replies() == [("p1", "re: one"), ("p3", "re: three")]


async def test_a_senders_rapid_messages_are_merged_into_one_turn(tmp_path: Path) -> None:
    queue = spec("sequential", debounce=DebounceSpec(window_ms=100))
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        sid = await kit.offer("one", "p1", queue)
        assert await eventually(kit.started.is_set)
        await kit.offer("two", "p2", queue)
        await kit.offer("three", "p3", queue)
        assert await kit.user_texts(sid) == ["one", "two", "three"]  # each recorded at once
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 2)
        assert await eventually(lambda: len(kit.queues) == 0)
    assert kit.replies() == [("p1", "re: one"), ("p2", "re: two\nthree")]


async def test_the_first_message_of_an_idle_session_is_not_delayed_by_debounce(
    tmp_path: Path,
) -> None:
    queue = spec(debounce=DebounceSpec(window_ms=600_000))  # ten minutes
    async with queue_kit(tmp_path) as kit:
        await kit.offer("hello", "p1", queue)
        assert await eventually(lambda: kit.replies() == [("p1", "re: hello")])


async def test_a_debounce_flush_that_lands_after_the_session_went_idle_runs_at_once(
    tmp_path: Path,
) -> None:
    """Reference defect: the flush only woke a notification nobody waited on."""
    queue = spec("sequential", debounce=DebounceSpec(window_ms=1000))
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        sid = await kit.offer("one", "p1", queue)
        assert await eventually(kit.started.is_set)
        await kit.offer("two", "p2", queue, sender="u2")  # buffered: the session is busy
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 1)
        assert await eventually(lambda: not draining(sid))
        assert kit.replies() == [("p1", "re: one")]  # idle now, "two" still in its window
        # No further message arrives: the flush itself must start the turn.
        assert await eventually(lambda: len(kit.replies()) == 2)
    assert kit.replies()[1] == ("p2", "re: two")


async def test_a_turn_that_times_out_does_not_wedge_the_queue(tmp_path: Path) -> None:
    """Reference defect: a cancelled handler left the session busy for good."""
    async with queue_kit(tmp_path, turn_timeout=1.0) as kit:
        kit.start_held_turn()  # its tool waits for a gate nobody opens
        sid = await kit.offer("stuck", "p1", spec())
        assert await eventually(lambda: kit.replies() == [("p1", TURN_FAILED)])
        await kit.offer("next", "p2", spec())
        assert await eventually(lambda: len(kit.replies()) == 2)
        assert await eventually(lambda: len(kit.queues) == 0)
        assert not draining(sid)
    assert kit.replies()[1] == ("p2", "re: next")


async def test_a_turn_that_fails_does_not_wedge_the_queue(tmp_path: Path) -> None:
    async with queue_kit(tmp_path) as kit:
        kit.h.server.enqueue(Fault(status=400, message="bad request"))
        await kit.offer("fails", "p1", spec())
        assert await eventually(lambda: len(kit.replies()) == 1)
        assert kit.replies()[0][1].startswith("Sorry, I could not answer")
        await kit.offer("next", "p2", spec())
        assert await eventually(lambda: len(kit.replies()) == 2)
    assert kit.replies()[1] == ("p2", "re: next")


async def test_a_cancelled_turn_does_not_wedge_the_queue(tmp_path: Path) -> None:
    async with queue_kit(tmp_path) as kit:
        kit.start_held_turn()
        sid = await kit.offer("cancelled", "p1", spec())
        assert await eventually(kit.started.is_set)
        (drain,) = [t for t in asyncio.all_tasks() if t.get_name() == f"chat-queue-{sid}"]
        drain.cancel()
        assert await eventually(drain.done)
        await kit.offer("next", "p2", spec())
        assert await eventually(lambda: len(kit.replies()) == 1)
        assert await eventually(lambda: len(kit.queues) == 0)
    assert kit.replies() == [("p2", "re: next")]


async def test_messages_handed_to_a_turn_that_timed_out_get_a_turn_of_their_own(
    tmp_path: Path,
) -> None:
    async with queue_kit(tmp_path, turn_timeout=1.0) as kit:
        kit.start_held_turn()
        await kit.offer("stuck", "p1", spec())
        assert await eventually(kit.started.is_set)
        await kit.offer("while stuck", "p2", spec())  # steered into the loop that never ends
        assert await eventually(lambda: len(kit.replies()) == 2)
    assert kit.replies() == [("p1", TURN_FAILED), ("p2", "re: while stuck")]


async def test_a_message_the_loop_stopped_without_reading_gets_a_turn_of_its_own(
    tmp_path: Path,
) -> None:
    """The loop stops at ``max_tool_iterations`` right after the tool the message arrived in.

    Its note ends the turn, later than the message on disk, but the model never saw the
    message: it must get a reply of its own (it used to count as answered by the note).
    """
    async with queue_kit(tmp_path, max_tool_iterations=1) as kit:
        kit.start_held_turn()
        await kit.offer("start", "p1", spec())
        assert await eventually(kit.started.is_set)
        await kit.offer("while the tool runs", "p2", spec())  # steered, never read
        kit.gate.set()
        assert await eventually(lambda: len(kit.replies()) == 2)
        assert await eventually(lambda: len(kit.queues) == 0)
    (first_to, note), second = kit.replies()
    assert (first_to, "stopped after 1 tool steps" in note) == ("p1", True)
    assert second == ("p2", "re: while the tool runs")


async def test_a_redelivered_message_that_was_answered_is_not_answered_again(
    tmp_path: Path,
) -> None:
    async with queue_kit(tmp_path) as kit:
        sid = await kit.offer("hello", "p1", spec())
        assert await eventually(lambda: len(kit.replies()) == 1)
        assert await eventually(lambda: len(kit.queues) == 0)
        await kit.offer("hello", "p1", spec())
        assert not draining(sid)
        assert len(kit.queues) == 0
        recorded = await kit.user_texts(sid)
    assert recorded == ["hello"]
    assert kit.replies() == [("p1", "re: hello")]


async def test_many_chats_at_once_keep_each_chats_order(tmp_path: Path) -> None:
    chats = [ChatRef("telegram", str(n)) for n in range(30)]
    per_chat = 4
    queue = spec("sequential")
    async with queue_kit(tmp_path) as kit:
        sessions = {chat: await kit.session(chat) for chat in chats}

        async def send(chat: ChatRef) -> None:
            for i in range(per_chat):
                inbound = Inbound(chat, f"{chat.chat_id}-{i}", agent="bot", message_id=f"p{i}")
                await kit.queues.offer(sessions[chat], inbound, queue)

        await asyncio.gather(*(send(chat) for chat in chats))
        total = len(chats) * per_chat
        assert await eventually(lambda: len(kit.outbound.of_kind("text")) == total, within=60)
        assert await eventually(lambda: len(kit.queues) == 0)  # memory: idle chats forgotten
    for chat in chats:
        expected = [(f"p{i}", f"re: {chat.chat_id}-{i}") for i in range(per_chat)]
        assert kit.replies(chat) == expected


async def test_a_turn_that_times_out_is_recorded_as_failed_so_a_restart_does_not_answer_it_again(
    tmp_path: Path,
) -> None:
    """The apology says "you can send it again": a restart must not answer it a second time."""
    async with queue_kit(tmp_path, turn_timeout=1.0) as kit:
        kit.start_held_turn()
        sid = await kit.offer("stuck", "p1", spec())
        assert await eventually(lambda: kit.replies() == [("p1", TURN_FAILED)])
        assert await eventually(lambda: len(kit.queues) == 0)
        progress = await kit.h.runner.sessions.progress(sid)
        events = await kit.h.registry.handle(sid).events()
    errors = [e for e in events if e.type == EventType.ERROR]
    assert [e.data["code"] for e in errors] == ["turn_timeout"]
    assert not progress.awaits_answer  # settled: recovery leaves it alone
    assert not progress.undelivered  # and the apology counts as its delivered end
