"""Attacks from the security review of issue 33 ("many people, one bot"), as tests.

Each test is named for the defect it showed. Those still open are marked
``xfail(strict=True)`` with the reason (a fix makes the mark fail, so it is noticed);
``specs/202612050000.many-people-one-bot.md`` lists them under limits.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from duragent.core.caller import Caller, ChatRef
from duragent.tools.base import PolicyType, Tool, ToolContext
from duragent.tools.memory import MemoryTool
from tests.tools.sandbox_support import bwrap
from tests.tools.test_sandbox import SECRET, bash, workspace

__all__ = ["bwrap"]

NOW = datetime(2026, 12, 5, 9, 0)
ALICE = Caller(role="member", chat=ChatRef("telegram", "100"), sender_id="100")
BOB = Caller(role="member", chat=ChatRef("telegram", "200"), sender_id="200")


def as_(ctx: ToolContext, caller: Caller) -> ToolContext:
    return replace(ctx, caller=caller)


def memory() -> MemoryTool:
    return MemoryTool(clock=lambda: NOW)


# --- memory: the runtime follows links a sandboxed command planted ---------------------------


async def test_a_sandboxed_command_cannot_make_memory_recall_read_the_workspaces_env(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = as_(workspace(tmp_path), ALICE)
    env_file = tmp_path / ".env"  # not mounted in the sandbox: the link is only a name there
    ok, text = await bash(
        ctx,
        "mkdir -p memory/chats/telegram/100 && "
        f"ln -s {env_file} memory/chats/telegram/100/MEMORY.md && echo planted",
    )
    assert ok, text
    recalled = await memory().run({"action": "recall"}, ctx)
    reflected = await memory().run({"action": "reflect"}, ctx)
    assert SECRET not in recalled.content
    assert SECRET not in reflected.content


@pytest.mark.parametrize("target", ["outside", "tools"])
async def test_a_link_above_a_chats_memory_folder_does_not_redirect_memory_writes(
    target: str, tmp_path: Path
) -> None:
    agent = tmp_path / "ws" / ".duragent" / "agents" / "assistant"
    agent.mkdir(parents=True)
    (agent / "agent.yaml").write_text("kind: Agent\n", encoding="utf-8")
    (agent / "tools").mkdir()
    elsewhere = tmp_path / "elsewhere" if target == "outside" else agent / "tools"
    elsewhere.mkdir(exist_ok=True)
    world = tmp_path / "ws" / ".duragent" / "memory" / "world"
    chats = world.parent / "chats"
    chats.mkdir(parents=True)
    # what a trust-mode command can do: the chats' notes folder of this agent made a link
    os.symlink(elsewhere, chats / "assistant")
    ctx = ToolContext(
        caller=ALICE,
        session_id="s1",
        agent_name="assistant",
        agent_dir=agent,
        workspace_dir=tmp_path / "ws" / ".duragent",
        world_memory_dir=world,
    )
    reflected = await memory().run({"action": "reflect", "content": "planted"}, ctx)
    remembered = await memory().run({"action": "remember", "content": "planted"}, ctx)
    assert not reflected.success, reflected.content
    assert not remembered.success, remembered.content
    assert list(elsewhere.iterdir()) == []


async def test_a_sandboxed_command_in_one_chat_cannot_read_another_chats_memory(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path)
    said = await memory().run(
        {"action": "remember", "content": "my bank PIN is 4921"}, as_(ctx, ALICE)
    )
    assert said.success
    _, text = await bash(as_(ctx, BOB), "cat memory/chats/*/*/daily/*.md")
    assert "4921" not in text


# --- roles: a batched or steered turn acts with its first sender's role ----------------------


async def test_a_members_message_steered_into_an_owners_turn_does_not_run_as_the_owner(
    tmp_path: Path,
) -> None:
    from duragent.core.messages import ToolDefinition
    from duragent.testing import Reply, ToolCallReply
    from duragent.tools.base import ToolOutcome
    from tests.frontkit.test_queue import spec
    from tests.polling import eventually

    seen: list[str] = []

    class WhoAmI:
        name = "whoami"
        policy_type: PolicyType = "builtin"

        def definition(self) -> ToolDefinition:
            return ToolDefinition(name="whoami", description="role", parameters={"type": "object"})

        def invocation(self, args: object) -> str:
            return "whoami"

        async def run(self, args: object, ctx: ToolContext) -> ToolOutcome:
            seen.append(ctx.caller.role)
            return ToolOutcome(True, ctx.caller.role)

    kit_cm = _queue_kit_with_owner(tmp_path, WhoAmI())
    async with kit_cm as kit:
        kit.start_held_turn()
        group = ChatRef("telegram", "-100")
        await kit.offer("@bot hello", "p1", spec(), sender="1", chat=group)  # the owner
        assert await eventually(kit.started.is_set)
        said = "@bot update world: the office is closed"
        await kit.offer(said, "p2", spec(), sender="2", chat=group)  # a member
        kit.h.server.enqueue(Reply(tool_calls=[ToolCallReply(name="whoami", id="w1")]))
        kit.h.server.enqueue(Reply(text="done"))
        kit.gate.set()
        assert await eventually(lambda: bool(seen))
    assert seen == ["member"]


def _queue_kit_with_owner(tmp_path: Path, tool: Tool):
    """``tests.frontkit.test_queue.queue_kit`` with ``spec.access.owners.telegram: ["1"]``."""
    import asyncio
    from contextlib import asynccontextmanager

    from duragent.frontkit import ChatTurns, MemoryOutbound
    from duragent.frontkit.queue import SessionQueues
    from duragent.lifecycle.tasks import BackgroundTasks
    from tests.frontkit.test_queue import Kit, echo
    from tests.turns.turn_fixtures import FnTool, harness

    @asynccontextmanager
    async def kit():
        gate, started = asyncio.Event(), asyncio.Event()

        async def hold(args: object) -> str:
            started.set()
            await gate.wait()
            return "held"

        outbound = MemoryOutbound()
        tasks = BackgroundTasks(grace_seconds=2)
        extra = "  access:\n    owners: {telegram: ['1']}\n"
        async with harness(
            tmp_path, tools=[FnTool("hold", hold), tool], responder=echo, model_extra=extra
        ) as h:
            chat = ChatTurns(h.runner, outbound, tasks, typing_every=0.05)
            queues = SessionQueues(h.runner, chat, outbound, tasks)
            try:
                yield Kit(h, queues, outbound, tasks, gate, started)
            finally:
                await tasks.stop()

    return kit()


# --- approvals: a paired DM sender is a stranger to the approval check -----------------------


@pytest.fixture
def open_chat(tmp_path: Path):
    from tests.frontkit.memory_chat import memory_chat

    return lambda setup: memory_chat(tmp_path, setup)


async def test_a_paired_dm_sender_may_answer_the_approval_their_own_message_raised(
    open_chat,
) -> None:
    from duragent.testing import Reply
    from tests.frontkit.chat_contract_kit import ANN, ASK, BOB, DM, ChatSetup, pressed, said
    from tests.frontkit.contract_approvals import risky_call
    from tests.frontkit.contract_strangers import CODE, PAIRING, STRANGER_DM
    from tests.turns.turn_fixtures import FnTool

    echo = FnTool("echo", lambda a: "echoed")
    async with open_chat(ChatSetup(access=PAIRING, policy=ASK, tools=[echo])) as chat:
        await chat.message(said(STRANGER_DM, "hello?", BOB, dm=True))
        await chat.settle()
        found = CODE.search(chat.texts(STRANGER_DM)[0])
        assert found is not None
        await chat.message(said(DM, f"/pair {found[1]}", ANN))
        await chat.settle()
        chat.llm.enqueue(risky_call(), Reply(text="ran it"))
        await chat.message(said(STRANGER_DM, "please run it", BOB, dm=True))
        await chat.settle()
        message_id, _, buttons = chat.approval(STRANGER_DM)
        await chat.press(pressed(STRANGER_DM, buttons[0], message_id, BOB))
        await chat.settle()
        assert chat.toasts() == ["✓ Running: echo:risky"]
        assert echo.calls == [{"x": "risky"}]


# --- roles: Telegram's shared stand-in senders ------------------------------------------------


def test_two_people_posting_as_different_channels_are_not_one_sender() -> None:
    from tests.gateways.telegram.test_updates import _message

    group = {"id": -100, "type": "supergroup", "title": "g"}
    channel_bot = {
        "id": 136817688,
        "is_bot": True,
        "first_name": "Channel",
        "username": "Channel_Bot",
    }
    first = _message(
        text="hi",
        chat=group,
        **{"from": channel_bot},
        sender_chat={"id": -1001, "type": "channel", "title": "A"},
    )
    second = _message(
        text="hi",
        chat=group,
        **{"from": channel_bot},
        sender_chat={"id": -1002, "type": "channel", "title": "B"},
    )
    assert first.sender.id != second.sender.id


# --- quotas -------------------------------------------------------------------------------------


def test_the_readme_states_the_message_rate_default_the_code_applies() -> None:
    from duragent.agents.access_spec import QuotaSpec

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    default = QuotaSpec().messages_per_sender_per_minute
    assert f"{default} messages per sender a minute" in readme.replace("\n", " ")


def test_one_shot_schedules_of_a_chat_cannot_run_closer_than_the_minimum_interval() -> None:
    from datetime import UTC, timedelta

    from duragent.agents.access_spec import QuotaSpec
    from duragent.scheduler.model import At, Destination, MessagePayload, Schedule
    from duragent.scheduler.quotas import schedule_refusal

    chat = Destination("telegram", "100")
    start = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
    made = [
        Schedule(
            id=f"sched_{i}",
            agent="bot",
            timing=At(start + timedelta(seconds=i)),
            payload=MessagePayload("ping"),
            created_at=start,
            destination=chat,
            created_by_session="s1",
        )
        for i in range(1, 3)
    ]
    refusal = schedule_refusal(At(start + timedelta(seconds=3)), chat, made, QuotaSpec())
    assert refusal is not None
    assert "this one-shot would run 1 s from another of this chat's" in refusal
    later = At(start + timedelta(seconds=62))  # a minute after the last: fine
    assert schedule_refusal(later, chat, made, QuotaSpec()) is None
