"""``recover_chats``: at a gateway's start, what a crash left unsent is sent once, what it
left unanswered is answered, and sessions with nothing to do are not even loaded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from duragent.agents.spec import QueueSpec
from duragent.frontkit import ChatRef, ChatTurns, Inbound, MemoryOutbound
from duragent.frontkit.queue import SessionQueues
from duragent.frontkit.recovery import recover_chats
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.testing import Fault, Reply, ToolCallReply
from duragent.turns import ApprovalDecision, AwaitingApproval, Complete
from tests.frontkit.test_queue import echo
from tests.polling import eventually
from tests.turns.test_approval import ASK
from tests.turns.turn_fixtures import FnTool, Harness, harness

CHAT = ChatRef("telegram", "42")


@dataclass
class Kit:
    h: Harness
    chat: ChatTurns
    queues: SessionQueues
    outbound: MemoryOutbound

    async def session(self, chat: ChatRef = CHAT) -> str:
        return await self.h.runner.session_for_chat(chat.gateway, chat.chat_id, "bot")

    async def recover(self) -> tuple[int, int]:
        report = await recover_chats(
            "telegram", self.h.runner.sessions, self.chat.delivery, self.queues
        )
        return report.delivered, report.resumed

    def replies(self) -> list[tuple[str | None, str]]:
        return [(a.reply_to, a.text) for a in self.outbound.of_kind("text")]


@asynccontextmanager
async def recovery_kit(tmp_path: Path, **options: object) -> AsyncIterator[Kit]:
    outbound = MemoryOutbound()
    tasks = BackgroundTasks(grace_seconds=2)
    async with harness(tmp_path, responder=echo, **options) as h:  # type: ignore[arg-type]
        chat = ChatTurns(h.runner, outbound, tasks, typing_every=0.05)
        try:
            yield Kit(h, chat, SessionQueues(h.runner, chat, outbound, tasks), outbound)
        finally:
            await tasks.stop()


async def test_a_reply_written_but_never_delivered_is_sent_once(tmp_path: Path) -> None:
    async with recovery_kit(tmp_path) as kit:
        sid = await kit.session()
        # The turn ran and wrote its reply; the process died before the chat got it.
        result = await kit.h.runner.run(sid, "hello", platform_message_id="p1")
        assert isinstance(result, Complete)
        await kit.h.registry.stop(sid)  # as after a restart: nothing live
        assert await kit.recover() == (1, 0)
        assert await kit.recover() == (0, 0)  # recorded: never sent twice
        info = await kit.h.registry.info(sid)
    assert kit.replies() == [("p1", "re: hello")]
    assert info.last_delivered_seq == result.reply_seq


async def test_every_undelivered_reply_is_sent_in_order(tmp_path: Path) -> None:
    async with recovery_kit(tmp_path) as kit:
        sid = await kit.session()
        await kit.h.runner.run(sid, "one", platform_message_id="p1")
        await kit.h.runner.run(sid, "two", platform_message_id="p2")
        await kit.h.registry.stop(sid)
        assert await kit.recover() == (1, 0)
        assert await kit.recover() == (0, 0)
    assert [text for _, text in kit.replies()] == ["re: one", "re: two"]


async def test_a_message_accepted_but_never_answered_is_answered_once(tmp_path: Path) -> None:
    async with recovery_kit(tmp_path) as kit:
        sid = await kit.session()
        # Accepted (on disk, the platform confirmed), then the process died before the turn.
        await kit.h.runner.accept(sid, "anyone there?", platform_message_id="p1")
        await kit.h.registry.stop(sid)
        assert await kit.recover() == (0, 1)
        assert await eventually(lambda: len(kit.replies()) == 1)
        assert await eventually(lambda: len(kit.queues) == 0)
        assert await kit.recover() == (0, 0)
    assert kit.replies() == [("p1", "re: anyone there?")]


async def test_a_message_redelivered_while_its_recovered_turn_runs_is_answered_once(
    tmp_path: Path,
) -> None:
    async with recovery_kit(tmp_path) as kit:
        sid = await kit.session()
        await kit.h.runner.accept(sid, "anyone there?", platform_message_id="p1")
        await kit.h.registry.stop(sid)
        assert await kit.recover() == (0, 1)
        # Telegram sends the unconfirmed update again while the recovered turn runs.
        again = Inbound(CHAT, "anyone there?", agent="bot", sender_id="u1", message_id="p1")
        await kit.queues.offer(sid, again, QueueSpec())
        assert await eventually(lambda: len(kit.queues) == 0)
    assert kit.replies() == [("p1", "re: anyone there?")]


async def test_a_pending_approval_never_shown_is_asked_again_once_and_not_run(
    tmp_path: Path,
) -> None:
    tool = FnTool("echo", lambda args: "ok")
    async with recovery_kit(tmp_path, tools=[tool], policy=ASK) as kit:
        kit.h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": "hi"}, id="c1")])
        )
        sid = await kit.session()
        result = await kit.h.runner.run(sid, "run echo", platform_message_id="p1", sender_id="u1")
        assert isinstance(result, AwaitingApproval)
        requests = len(kit.h.server.requests)
        await kit.h.registry.stop(sid)  # killed before the prompt reached the chat
        assert await kit.recover() == (0, 0)
        assert await kit.recover() == (0, 0)
        assert (await kit.h.registry.info(sid)).pending_approval is not None
    assert kit.replies() == []
    assert [(a.kind, a.call_id) for a in kit.outbound.actions] == [("approval", "c1")]
    assert len(kit.h.server.requests) == requests  # no turn ran


async def test_a_failed_turn_is_not_run_again_but_its_unsent_notice_is_told_once(
    tmp_path: Path,
) -> None:
    """Killed between the turn's ``error`` event and its notice: the person is not left
    waiting for ever (found by bench/year.py), and the turn is not run again."""
    async with recovery_kit(tmp_path) as kit:
        kit.h.server.enqueue(Fault(status=400, message="bad request"))
        sid = await kit.session()
        await kit.h.runner.run(sid, "fails", platform_message_id="p1")
        await kit.h.registry.stop(sid)
        assert await kit.recover() == (0, 0)
        assert await kit.recover() == (0, 0)
    [(reply_to, text)] = kit.replies()
    assert reply_to == "p1"
    assert text.startswith("Sorry, I could not answer:")
    assert "bad request" in text
    assert len(kit.h.server.requests) == 1


async def test_a_failure_the_chat_was_told_is_not_told_again(tmp_path: Path) -> None:
    async with recovery_kit(tmp_path) as kit:
        kit.h.server.enqueue(Fault(status=400, message="bad request"))
        sid = await kit.session()
        failed = await kit.h.runner.run(sid, "fails", platform_message_id="p1")
        await kit.chat.delivery.deliver(CHAT, failed, reply_to="p1")  # told live
        await kit.h.registry.stop(sid)
        assert await kit.recover() == (0, 0)
    assert len(kit.replies()) == 1


async def test_a_failed_message_redelivered_after_its_notice_was_told_is_not_failed_again(
    tmp_path: Path,
) -> None:
    """Killed after the ``error`` event and before Telegram's update was confirmed: the next
    start tells the failure, then the update comes again. Its copy must not run the turn a
    second time, or the person is told the same failure twice by one process (found by
    bench/year.py: a paste too big for any request, told twice)."""
    async with recovery_kit(tmp_path) as kit:
        kit.h.server.enqueue(Fault(status=400, message="too big"))
        kit.h.server.enqueue(Fault(status=400, message="too big"))
        sid = await kit.session()
        await kit.h.runner.run(sid, "a huge paste", platform_message_id="p1")
        await kit.h.registry.stop(sid)
        assert await kit.recover() == (0, 0)  # the failure is told
        again = Inbound(CHAT, "a huge paste", agent="bot", sender_id="u1", message_id="p1")
        await kit.queues.offer(sid, again, QueueSpec())
        assert await eventually(lambda: len(kit.queues) == 0)
    [(reply_to, text)] = kit.replies()
    assert (reply_to, "too big" in text) == ("p1", True)
    assert len(kit.h.server.requests) == 1


async def test_a_failed_message_redelivered_before_its_notice_was_told_is_tried_again(
    tmp_path: Path,
) -> None:
    """A failure the person never heard of: the copy runs the turn again, and its reply is
    the answer, as for a message never answered."""
    async with recovery_kit(tmp_path) as kit:
        kit.h.server.enqueue(Fault(status=400, message="bad request"))
        sid = await kit.session()
        await kit.h.runner.run(sid, "hello", platform_message_id="p1")  # not told
        again = Inbound(CHAT, "hello", agent="bot", sender_id="u1", message_id="p1")
        await kit.queues.offer(sid, again, QueueSpec())
        assert await eventually(lambda: len(kit.queues) == 0)
    assert kit.replies() == [("p1", "re: hello")]
    assert len(kit.h.server.requests) == 2


async def test_sessions_with_nothing_to_do_are_not_loaded(tmp_path: Path) -> None:
    chats = [ChatRef("telegram", str(n)) for n in range(40)]
    async with recovery_kit(tmp_path) as kit:
        done = await kit.session(chats[0])
        await kit.h.runner.run(done, "answered", platform_message_id="p1")
        await kit.chat.delivery.deliver(
            chats[0], await kit.h.runner.run(done, "again", platform_message_id="p2")
        )
        for chat in chats[1:]:
            await kit.session(chat)
        other_gateway = await kit.h.runner.session_for_chat("discord", "7", "bot")
        await kit.h.runner.accept(other_gateway, "not telegram's", platform_message_id="d1")
        for sid in {sid for _, sid in kit.h.registry.chat_sessions("telegram")} | {other_gateway}:
            await kit.h.registry.stop(sid)
        assert kit.h.registry.live_count == 0
        report = await recover_chats(
            "telegram", kit.h.runner.sessions, kit.chat.delivery, kit.queues
        )
        live = kit.h.registry.live_count
    assert report.checked == len(chats)
    assert (report.delivered, report.resumed, report.failed) == (0, 0, 0)
    assert live == 0  # every answer came from snapshot headers
    assert kit.outbound.texts() == ["re: again"]  # the earlier delivery only


async def test_a_sequential_chats_unanswered_messages_get_a_turn_each(tmp_path: Path) -> None:
    async with recovery_kit(tmp_path) as kit:
        sid = await kit.session()
        for n, text in enumerate(("one", "two"), start=1):
            await kit.h.runner.accept(sid, text, platform_message_id=f"p{n}")
        await kit.h.registry.stop(sid)  # killed before either was answered
        report = await recover_chats(
            "telegram",
            kit.h.runner.sessions,
            kit.chat.delivery,
            kit.queues,
            settings=lambda _agent, _chat, _type: (QueueSpec(mode="sequential"), None),
        )
        assert report.resumed == 1
        await eventually(lambda: len(kit.replies()) == 2)
    assert kit.replies() == [("p1", "re: one"), ("p2", "re: two")]


@pytest.mark.parametrize("live", [True, False], ids=["loaded", "from-snapshot"])
async def test_recovery_knows_a_chat_is_a_group_from_what_its_platform_said(
    tmp_path: Path, live: bool
) -> None:
    """A chat id need not tell a group (an external gateway's are opaque): the session does."""
    asked: list[str | None] = []

    def settings(_agent: str, _chat: str, chat_type: str | None) -> tuple[QueueSpec, None]:
        asked.append(chat_type)
        return QueueSpec(mode="sequential"), None

    async with recovery_kit(tmp_path) as kit:
        sid = await kit.h.runner.session_for_chat("telegram", CHAT.chat_id, "bot", "group")
        await kit.h.runner.accept(sid, "one", platform_message_id="p1")
        if not live:
            await kit.h.registry.stop(sid)  # killed before it was answered
        await recover_chats(
            "telegram", kit.h.runner.sessions, kit.chat.delivery, kit.queues, settings=settings
        )
        await eventually(lambda: len(kit.replies()) == 1)
    assert asked == ["group"]


async def test_a_sequential_message_recorded_before_an_earlier_reply_is_still_answered(
    tmp_path: Path,
) -> None:
    async with recovery_kit(tmp_path) as kit:
        sid = await kit.session()
        first = await kit.h.runner.accept(sid, "one", platform_message_id="p1")
        await kit.h.runner.accept(sid, "two", platform_message_id="p2")  # waits its turn
        await kit.h.runner.answer(sid, first.seq, "one", only_through=True)  # "one" answered
        await kit.h.registry.stop(sid)  # killed before "two" got its turn
        report = await recover_chats(
            "telegram",
            kit.h.runner.sessions,
            kit.chat.delivery,
            kit.queues,
            settings=lambda _agent, _chat, _type: (QueueSpec(mode="sequential"), None),
        )
        assert report.resumed == 1
        await eventually(lambda: any(text == "re: two" for _, text in kit.replies()))
    assert ("p2", "re: two") in kit.replies()


async def test_a_redelivered_message_whose_turn_asks_for_approval_does_not_ask_again(
    tmp_path: Path,
) -> None:
    tool = FnTool("echo", lambda args: "ok")
    async with recovery_kit(tmp_path, tools=[tool], policy=ASK) as kit:
        kit.h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": "hi"}, id="c1")])
        )
        sid = await kit.session()
        accepted = await kit.h.runner.accept(sid, "run echo", platform_message_id="p1")
        result = await kit.h.runner.answer(sid, accepted.seq, "run echo")
        assert isinstance(result, AwaitingApproval)
        again = await kit.h.runner.accept(sid, "run echo", platform_message_id="p1")
    assert again.duplicate
    assert again.answered  # its turn ended in the approval: nothing to run again


async def test_a_turn_killed_after_its_approval_was_decided_is_finished_once(
    tmp_path: Path,
) -> None:
    """The press was recorded; the process died before the approved call's turn ended.

    The call is recorded as interrupted when the session loads (it never runs twice), and
    the turn goes on from there: the model answers the message that started it.
    """
    tool = FnTool("echo", lambda args: "ok")
    async with recovery_kit(tmp_path, tools=[tool], policy=ASK) as kit:
        kit.h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": "hi"}, id="c1")])
        )
        sid = await kit.session()
        result = await kit.h.runner.run(sid, "run echo", platform_message_id="p1", sender_id="u1")
        assert isinstance(result, AwaitingApproval)
        await kit.chat.delivery.deliver(CHAT, result)  # the prompt reached the chat
        session = kit.h.registry.handle(sid)
        await session.record_decision("c1", ApprovalDecision.ALLOW_ONCE)  # then SIGKILL
        await kit.h.registry.stop(sid)
        assert await kit.recover() == (0, 1)
        assert await eventually(lambda: len(kit.outbound.of_kind("text")) == 1)
        assert await eventually(lambda: len(kit.queues) == 0)
        assert await kit.recover() == (0, 0)
        messages = await session.messages()
    assert kit.replies() == [("p1", "re: run echo")]
    assert tool.calls == []  # interrupted, not run again
    assert [m.role.value for m in messages][-3:] == ["assistant", "tool", "assistant"]


async def test_a_message_a_summary_rolled_into_the_archive_before_a_crash_is_still_answered(
    tmp_path: Path,
) -> None:
    # Found by bench/year.py: a group's mentions were recorded, a summary round moved the
    # checkpoint past them, the snapshot rolled the live log over (all of it to the archive),
    # and the process was killed; every later start found the messages unanswered in the
    # snapshot but read only the (empty) live log, so the chat never answered again.
    async with recovery_kit(tmp_path) as kit:
        sid = await kit.session()
        await kit.h.runner.accept(sid, "anyone there?", platform_message_id="p1")
        handle = kit.h.registry.handle(sid)
        last = (await handle.messages())[-1]
        await handle.record_summary(
            "- asked: anyone there?", last=last, tokens_before=100, tokens_after=10, model="m"
        )
        await handle.snapshot()
        assert await handle.events() == []  # the live log was rolled over
        await kit.h.registry.stop(sid)
        assert await kit.recover() == (0, 1)
        assert await eventually(lambda: len(kit.replies()) == 1)
        assert await eventually(lambda: len(kit.queues) == 0)
    assert [reply_to for reply_to, _text in kit.replies()] == ["p1"]


async def test_a_passive_message_recorded_after_the_last_reply_is_not_answered_at_start(
    tmp_path: Path,
) -> None:
    """A group's passive member (or chatter recorded under ``activation: mention``) wrote
    after the bot's last reply, then the process stopped: the start answers nothing."""
    async with recovery_kit(tmp_path) as kit:
        sid = await kit.session()
        await kit.h.runner.run(sid, "hello", platform_message_id="p1")
        await kit.h.registry.handle(sid).add_user_message(
            "ann: just saying", platform_message_id="p2", passive=True
        )
        await kit.h.registry.stop(sid)
        assert await kit.recover() == (1, 0)  # the reply is sent; no turn for the passive one
    assert kit.replies() == [("p1", "re: hello")]


async def test_a_groups_unseen_approval_is_asked_again_though_others_wrote_after_it(
    tmp_path: Path,
) -> None:
    """In a group, messages after a pending approval wait for it (``turns.approval_wait``):
    its prompt, lost to a crash, must be asked again, or the group waits for a button nobody
    sees (found by ``bench/strangers``)."""
    tool = FnTool("echo", lambda args: "ok")
    async with recovery_kit(tmp_path, tools=[tool], policy=ASK) as kit:
        kit.h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": "hi"}, id="c1")])
        )
        sid = await kit.h.runner.session_for_chat("telegram", CHAT.chat_id, "bot", "group")
        result = await kit.h.runner.run(sid, "run echo", platform_message_id="p1", sender_id="u1")
        assert isinstance(result, AwaitingApproval)
        await kit.h.runner.accept(sid, "and hello", platform_message_id="p2", sender_id="u2")
        await kit.h.registry.stop(sid)  # killed before the prompt reached the chat
        await recover_chats(
            "telegram",
            kit.h.runner.sessions,
            kit.chat.delivery,
            kit.queues,
            settings=lambda _agent, _chat, _type: (QueueSpec(mode="sequential"), None),
        )
        asked = [(a.kind, a.call_id) for a in kit.outbound.actions]
        pending = (await kit.h.registry.info(sid)).pending_approval
        await kit.h.runner.approve(sid, "c1", "allow_once")
        await eventually(lambda: any(to == "p2" for to, _text in kit.replies()))
    assert asked == [("approval", "c1")]
    assert pending is not None  # u2's message waited for it
