"""A member's mention that waited for another's approval is still answered across a restart.

In a group, Bob's mention waits for Ann's pending approval (``turns.approval_wait``); the
server restarts (recovery gives Bob's recorded message its turn again, behind the
approval); Carol writes; Ann allows her call. Ann's turn goes on, then Bob and Carol are
answered, each quoting their own message (the month of strangers, issue 40, looks for
this across kills).
"""

from __future__ import annotations

from pathlib import Path

from duragent.testing import Reply
from tests.gateways.telegram.rig import ASK_POLICY, BASH_TOOL, BOT, telegram_rig
from tests.gateways.telegram.test_group_approval_wait import (
    BOB,
    DONE,
    GROUP,
    access,
    answered,
    ask,
    press,
    prompts,
)

CAROL = 9


async def test_a_mention_waiting_for_anothers_approval_is_answered_after_a_restart(
    tmp_path: Path,
) -> None:
    async with telegram_rig(
        tmp_path, access=access(None), tools=BASH_TOOL, policy=ASK_POLICY
    ) as rig:
        prompt = await ask(rig, GROUP, f"@{BOT} please run echo")
        bobs = rig.tg.push_message(GROUP, f"@{BOT} what time is it?", user_id=BOB, first_name="Bob")
        await rig.delivered(bobs)  # recorded: his turn waits for Ann's decision

        await rig.restart()
        carols = rig.tg.push_message(
            GROUP, f"@{BOT} and the weather?", user_id=CAROL, first_name="Carol"
        )
        await rig.delivered(carols)
        rig.llm.enqueue(Reply(text=DONE))  # the rest of Ann's turn; the others' are echoed
        assert len(prompts(rig, GROUP)) >= 1
        await press(rig, GROUP, prompt)
        await rig.replies(GROUP, 4)
        await rig.settle()
    replies = answered(rig, GROUP)
    quoted = [to for _text, to in replies]
    assert bobs["message"]["message_id"] in quoted, replies
    assert carols["message"]["message_id"] in quoted, replies
    assert (DONE, None) in replies  # Ann's turn went on first
