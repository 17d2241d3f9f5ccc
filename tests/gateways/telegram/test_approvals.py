"""Approvals over Telegram end to end: the prompt's buttons, the requester's decision, restarts.

The agent's bash tool needs approval (policy ``mode: ask``); the scripted model asks to run
``echo ok``. The prompt is one message with three inline buttons; users press them by sending
``callback_query`` updates through the fake Bot API server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duragent.testing import FaultRule, Reply, ToolCallReply
from tests.gateways.telegram.rig import ASK_POLICY, BASH_TOOL, Rig, telegram_rig
from tests.polling import eventually

GROUP = -100777
ANN, BOB = 7, 8
RUN_ECHO = Reply(tool_calls=[ToolCallReply(name="bash", arguments={"command": "echo ok"}, id="c1")])


def buttons(message: dict[str, Any]) -> list[str]:
    return [b["text"] for row in message["reply_markup"]["inline_keyboard"] for b in row]


async def prompt_in(rig: Rig, chat_id: int) -> dict[str, Any]:
    """The approval prompt the bot sent to the chat (the one message with buttons)."""

    def prompts() -> list[dict[str, Any]]:
        sent = [c for c in rig.tg.calls("sendMessage", chat_id=chat_id) if c.ok]
        return [c.answer["result"] for c in sent if c.answer and "reply_markup" in c.params]

    assert await eventually(lambda: len(prompts()) == 1), "no approval prompt was sent"
    return prompts()[0]


def toasts(rig: Rig) -> list[str]:
    return [c.params.get("text", "") for c in rig.tg.calls("answerCallbackQuery") if c.ok]


@pytest.mark.parametrize("restart", [False, True], ids=["same-process", "after-restart"])
async def test_only_the_requester_approves_and_then_the_tool_runs(
    tmp_path: Path, restart: bool
) -> None:
    access = {"groups": {"activation": "always"}}
    async with telegram_rig(tmp_path, access=access, tools=BASH_TOOL, policy=ASK_POLICY) as rig:
        rig.llm.enqueue(RUN_ECHO, Reply(text="It printed ok."))
        rig.tg.push_message(GROUP, "please run echo", user_id=ANN, first_name="Ann")
        prompt = await prompt_in(rig, GROUP)
        assert buttons(prompt) == ["Allow Once", "Allow Always", "Deny"]
        assert "echo ok" in prompt["text"]
        await rig.settle()
        if restart:
            await rig.restart()
        rig.tg.push_callback_query(GROUP, prompt["message_id"], button="Allow Once", user_id=BOB)
        assert await eventually(lambda: len(toasts(rig)) == 1)
        assert toasts(rig) == ["Only the original requester can approve this command"]
        assert len(rig.llm.requests) == 1  # nothing ran
        rig.tg.push_callback_query(GROUP, prompt["message_id"], button="Allow Once", user_id=ANN)
        assert await rig.replies(GROUP, 2)
        await rig.settle()
        assert toasts(rig)[1].startswith("✓ Running: ")
        texts = rig.tg.sent_messages(GROUP)
        assert texts[-1] == "It printed ok."
        edited = rig.tg.message(GROUP, prompt["message_id"])
        assert edited is not None
        assert "reply_markup" not in edited  # the decision replaced the buttons
    tool_results = [m for m in rig.llm.requests[-1].json["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 1
    assert "ok" in str(tool_results[0]["content"])


async def test_a_press_whose_toast_telegram_refuses_still_decides(tmp_path: Path) -> None:
    """Telegram refuses to answer a press it delivered late ("query is too old"): the person
    pressed the button all the same, so the decision stands (the toast is a courtesy)."""
    too_old = "Bad Request: query is too old and response timeout expired or query ID is invalid"
    access = {"groups": {"activation": "always"}}
    async with telegram_rig(tmp_path, access=access, tools=BASH_TOOL, policy=ASK_POLICY) as rig:
        rig.llm.enqueue(RUN_ECHO, Reply(text="It printed ok."))
        rig.tg.push_message(GROUP, "please run echo", user_id=ANN, first_name="Ann")
        prompt = await prompt_in(rig, GROUP)
        rig.tg.add_fault(
            FaultRule.server_failure(
                400, method="answerCallbackQuery", description=too_old, times=1
            )
        )
        rig.tg.push_callback_query(GROUP, prompt["message_id"], button="Allow Once", user_id=ANN)
        assert await rig.replies(GROUP, 2)
        await rig.settle()
    assert rig.tg.sent_messages(GROUP)[-1] == "It printed ok."
    assert [c.status for c in rig.tg.calls("answerCallbackQuery")] == [400]
