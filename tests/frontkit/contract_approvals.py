"""The chat contract for approvals: buttons, who may answer (spec.access), stale presses, restart.

Run by every module that runs ``contract_chat`` (same ``open_chat`` fixture).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

import pytest

from duragent.frontkit import Sender
from duragent.frontkit.approval_rights import (
    ALWAYS_OWNERS_ONLY,
    BLOCKED,
    UNASKED_OWNERS_ONLY,
)
from duragent.frontkit.approvals import NO_PENDING, NOT_RECORDED
from duragent.store import SessionStore
from duragent.testing import Reply, ToolCallReply
from tests.frontkit.chat_contract_kit import (
    ANN,
    ASK,
    BOB,
    DM,
    EVE,
    GATEWAY,
    GROUP,
    ChatDriver,
    ChatSetup,
    OpenChat,
    pressed,
    said,
)
from tests.turns.turn_fixtures import FnTool

# --- approvals ------------------------------------------------------------------------------


def risky_call(call_id: str = "call_1", x: str = "risky") -> Reply:
    return Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": x}, id=call_id)])


def echo_setup() -> tuple[ChatSetup, FnTool]:
    """Ann owns the bot (Allow Always is an owner's); Bob is a member."""
    echo = FnTool("echo", lambda a: "echoed")
    access = {"owners": {GATEWAY: [ANN.id]}, "groups": {"activation": "always"}}
    return ChatSetup(access=access, policy=ASK, tools=[echo]), echo


@pytest.mark.parametrize(
    ("button", "toast", "runs", "requester"),
    [
        (0, "✓ Running: echo:risky", True, BOB),
        (1, "✓ Always allowed: echo:risky", True, ANN),
        (2, "✗ Denied: echo:risky", False, BOB),
    ],
)
async def test_the_requester_decides_with_buttons(
    open_chat: OpenChat, button: int, toast: str, runs: bool, requester: Sender
) -> None:
    setup, echo = echo_setup()
    async with open_chat(setup) as chat:
        chat.llm.enqueue(risky_call(), Reply(text="all done"))
        await chat.message(said(GROUP, "please run it", requester))
        await chat.settle()
        message_id, command, buttons = chat.approval(GROUP)
        assert command == "echo:risky"
        assert [b.split(":")[:2] for b in buttons] == [
            ["approve", "allow_once"],
            ["approve", "allow_always"],
            ["approve", "deny"],
        ]
        await chat.press(pressed(GROUP, buttons[button], message_id, requester))
        await chat.settle()
        assert chat.toasts() == [toast]
        assert len(chat.edits(GROUP)) == 1
        assert (echo.calls != []) is runs
        assert chat.texts(GROUP) == ["all done"]


async def test_a_decision_is_shown_only_once_recorded_and_an_unrecorded_one_keeps_its_buttons(
    open_chat: OpenChat,
) -> None:
    setup, echo = echo_setup()
    async with open_chat(setup) as chat:
        chat.llm.enqueue(risky_call(), Reply(text="ran it"))
        await chat.message(said(GROUP, "please run it", ANN))
        await chat.settle()
        message_id, _, buttons = chat.approval(GROUP)
        agent_dir = cast(SessionStore, chat.registry.store).root.parent / "agents" / "bot"
        local_policy = agent_dir / "policy.local.yaml"
        local_policy.mkdir()  # "Allow Always" cannot save its rule
        await chat.press(pressed(GROUP, buttons[1], message_id, ANN))
        await chat.settle()
        local_policy.rmdir()
        # not "✓ Always allowed" and buttons taken away while nothing was decided
        assert chat.toasts() == [NOT_RECORDED]
        assert chat.edits(GROUP) == []
        assert echo.calls == []
        await chat.press(pressed(GROUP, buttons[0], message_id, ANN))  # still pending
        await chat.settle()
        assert chat.toasts()[-1] == "✓ Running: echo:risky"
        assert len(chat.edits(GROUP)) == 1
        assert echo.calls != []
        assert chat.texts(GROUP)[-1] == "ran it"


async def test_only_the_requester_may_decide(open_chat: OpenChat) -> None:
    setup, echo = echo_setup()
    async with open_chat(setup) as chat:
        chat.llm.enqueue(risky_call(), Reply(text="ran it"))
        await chat.message(said(GROUP, "please run it", ANN))
        await chat.settle()
        message_id, _, buttons = chat.approval(GROUP)
        await chat.press(pressed(GROUP, buttons[0], message_id, BOB))
        await chat.settle()
        assert chat.toasts() == ["Only the original requester can approve this command"]
        assert echo.calls == []
        await chat.press(pressed(GROUP, buttons[0], message_id, ANN))
        await chat.settle()
        assert echo.calls == [{"x": "risky"}]


async def test_an_approval_survives_a_restart_and_its_buttons_still_work(
    open_chat: OpenChat,
) -> None:
    setup, echo = echo_setup()
    async with open_chat(setup) as chat:
        chat.llm.enqueue(risky_call(), Reply(text="done after restart"))
        await chat.message(said(GROUP, "please run it", ANN))
        await chat.settle()
        message_id, _, buttons = chat.approval(GROUP)
        await chat.restart()
        await chat.press(pressed(GROUP, buttons[0], message_id, BOB))  # still the requester's
        await chat.press(pressed(GROUP, buttons[0], message_id, ANN))
        await chat.settle()
        assert chat.toasts() == [
            "Only the original requester can approve this command",
            "✓ Running: echo:risky",
        ]
        assert echo.calls == [{"x": "risky"}]
        assert chat.texts(GROUP) == ["done after restart"]


async def test_stale_and_repeated_presses_find_no_pending_approval(open_chat: OpenChat) -> None:
    setup, echo = echo_setup()
    async with open_chat(setup) as chat:
        chat.llm.enqueue(risky_call("call_1", "one"))
        await chat.message(said(GROUP, "run one", ANN))
        await chat.settle()
        first_id, _, first_buttons = chat.approval(GROUP)
        chat.llm.enqueue(risky_call("call_2", "two"))
        await chat.message(said(GROUP, "no, run two", ANN))  # cancels the first approval
        await chat.settle()
        await chat.press(pressed(GROUP, first_buttons[0], first_id, ANN))
        await chat.settle()
        assert chat.toasts() == ["No pending approval"]
        assert echo.calls == []
        second_id, command, buttons = chat.approval(GROUP)
        assert command == "echo:two"
        chat.llm.enqueue(Reply(text="not run, then"))
        await chat.press(pressed(GROUP, buttons[2], second_id, ANN))
        await chat.settle()
        await chat.press(pressed(GROUP, buttons[0], second_id, ANN))
        await chat.settle()
        assert chat.toasts()[1:] == ["✗ Denied: echo:two", "No pending approval"]
        assert echo.calls == []
        assert chat.texts(GROUP) == ["not run, then"]


async def test_a_press_in_a_chat_without_a_session_says_so(open_chat: OpenChat) -> None:
    async with open_chat(ChatSetup()) as chat:
        await chat.press(pressed(DM, "approve:allow_once", "m9"))
        await chat.press(pressed(DM, "approve:maybe", "m9"))
        assert chat.toasts() == ["No active session", "Invalid decision"]


async def test_a_double_tap_decides_once(open_chat: OpenChat) -> None:
    setup, echo = echo_setup()
    async with open_chat(setup) as chat:
        chat.llm.enqueue(risky_call(), Reply(text="ran once"))
        await chat.message(said(GROUP, "please run it", ANN))
        await chat.settle()
        message_id, _, buttons = chat.approval(GROUP)
        await chat.press(pressed(GROUP, buttons[0], message_id, ANN))
        await chat.press(pressed(GROUP, buttons[2], message_id, ANN))
        await chat.settle()
        assert chat.toasts() == ["✓ Running: echo:risky", "No pending approval"]
        assert echo.calls == [{"x": "risky"}]
        assert chat.texts(GROUP) == ["ran once"]


# --- who may answer (spec.access: owners, the requester, blocked senders) ----------------


def roles_setup(owners: bool = True) -> tuple[ChatSetup, FnTool]:
    """Ann owns the bot (unless not ``owners``), Bob is a member, Eve is blocked in groups."""
    echo = FnTool("echo", lambda a: "echoed")
    access: dict[str, object] = {
        "groups": {"activation": "always", "sender_overrides": {EVE.id: "block"}},
    }
    if owners:
        access["owners"] = {GATEWAY: [ANN.id]}
    return ChatSetup(access=access, policy=ASK, tools=[echo]), echo


def local_policy(chat: ChatDriver) -> Path:
    """The agent's ``policy.local.yaml`` (where Allow Always writes its rule)."""
    root = cast(SessionStore, chat.registry.store).root.parent
    return root / "agents" / "bot" / "policy.local.yaml"


async def test_a_blocked_member_cannot_answer_a_scheduled_tasks_approval(
    open_chat: OpenChat,
) -> None:
    setup, echo = roles_setup()
    async with open_chat(setup) as chat:
        chat.llm.enqueue(risky_call(), Reply(text="ran it"))
        await chat.scheduled_task(GROUP, "run the risky thing")
        await chat.settle()
        message_id, command, buttons = chat.approval(GROUP)
        assert command == "echo:risky"
        await chat.press(pressed(GROUP, buttons[0], message_id, EVE))
        await chat.press(pressed(GROUP, buttons[1], message_id, EVE))
        await chat.settle()
        assert chat.toasts() == [BLOCKED, BLOCKED]
        assert echo.calls == []
        assert not local_policy(chat).exists()
        assert chat.edits(GROUP) == []
        await chat.press(pressed(GROUP, buttons[0], message_id, ANN))  # still pending
        await chat.settle()
        assert chat.toasts()[-1] == "✓ Running: echo:risky"
        assert echo.calls == [{"x": "risky"}]


async def test_only_an_owner_may_answer_an_approval_nobody_in_the_chat_asked_for(
    open_chat: OpenChat,
) -> None:
    setup, echo = roles_setup()
    async with open_chat(setup) as chat:
        chat.llm.enqueue(Reply(text="hello"))
        await chat.message(said(GROUP, "hi", BOB))  # the chat's session, as a group's
        await chat.settle()
        chat.llm.enqueue(risky_call(), Reply(text="ran it"))
        await chat.scheduled_task(GROUP, "run the risky thing")
        await chat.settle()
        message_id, _, buttons = chat.approval(GROUP)
        for button in buttons:
            await chat.press(pressed(GROUP, button, message_id, BOB))
        await chat.settle()
        assert chat.toasts() == [UNASKED_OWNERS_ONLY] * 3
        assert echo.calls == []
        assert chat.texts(GROUP) == ["hello"]  # an owner is named: no note
        await chat.press(pressed(GROUP, buttons[1], message_id, ANN))
        await chat.settle()
        assert chat.toasts()[-1] == "✓ Always allowed: echo:risky"
        assert echo.calls == [{"x": "risky"}]
        assert "echo:risky" in local_policy(chat).read_text()


async def test_only_an_owner_may_allow_always_and_an_owner_may_answer_anyones_approval(
    open_chat: OpenChat,
) -> None:
    setup, echo = roles_setup()
    async with open_chat(setup) as chat:
        chat.llm.enqueue(risky_call(), Reply(text="ran it"))
        await chat.message(said(GROUP, "please run it", BOB))
        await chat.settle()
        message_id, _, buttons = chat.approval(GROUP)
        await chat.press(pressed(GROUP, buttons[1], message_id, BOB))  # the requester
        await chat.settle()
        assert chat.toasts() == [ALWAYS_OWNERS_ONLY]
        assert echo.calls == []
        assert not local_policy(chat).exists()
        await chat.press(pressed(GROUP, buttons[0], message_id, EVE))
        await chat.settle()
        assert chat.toasts()[-1] == BLOCKED
        await chat.press(pressed(GROUP, buttons[0], message_id, ANN))  # an owner, not asked
        await chat.settle()
        assert chat.toasts()[-1] == "✓ Running: echo:risky"
        assert echo.calls == [{"x": "risky"}]
        assert chat.texts(GROUP) == ["ran it"]


async def test_an_approval_nobody_in_the_chat_may_answer_says_so_and_how_to_name_an_owner(
    open_chat: OpenChat,
) -> None:
    setup, echo = roles_setup(owners=False)
    async with open_chat(setup) as chat:
        chat.llm.enqueue(risky_call())
        await chat.scheduled_task(DM, "run the risky thing")
        await chat.settle()
        message_id, _, buttons = chat.approval(DM)
        sid = await chat.registry.chat_session((DM.gateway, DM.chat_id, "bot"))
        (note,) = chat.texts(DM)
        assert note.startswith(
            "Only an owner can answer this approval (it was not asked by anyone in this chat)"
        )
        assert f"spec.access.owners.{GATEWAY} in agents/bot/agent.yaml" in note
        assert f"POST /api/v1/sessions/{sid}/approve" in note
        await chat.press(pressed(DM, buttons[0], message_id, ANN))  # the DM's own person
        await chat.settle()
        assert chat.toasts() == [UNASKED_OWNERS_ONLY]
        assert echo.calls == []


async def test_a_press_by_someone_else_while_the_requesters_decision_is_applied_is_refused(
    open_chat: OpenChat,
) -> None:
    """Rights come first: Bob's press on Ann's prompt, made as Ann presses it, is refused as
    not his, not told that nothing waits (which hides why: a missing check, from outside)."""
    setup, echo = echo_setup()
    async with open_chat(setup) as chat:
        chat.llm.enqueue(risky_call(), Reply(text="ran it"))
        await chat.message(said(GROUP, "please run it", ANN))
        await chat.settle()
        message_id, _, buttons = chat.approval(GROUP)
        await asyncio.gather(
            chat.press(pressed(GROUP, buttons[0], message_id, ANN)),
            chat.press(pressed(GROUP, buttons[0], message_id, BOB)),
        )
        await chat.settle()
        toasts = sorted(chat.toasts())
        bobs = "Only the original requester can approve this command"
        if not chat.presses_at_once:  # read after Ann's decision: true, and nothing taken
            bobs = NO_PENDING
        assert toasts == sorted([bobs, "✓ Running: echo:risky"]), toasts
        assert echo.calls == [{"x": "risky"}]
