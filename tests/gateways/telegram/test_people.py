"""People the owner did not name, on Telegram (issue 33), through a real runtime and the fake.

An agent made without an access block (as ``duragent init`` made them) answered every group
message. Now a group is answered when the bot is addressed the ways Telegram has — an
``@username`` mention (any case), a reply to one of its messages, a command — and other
messages are kept as context; and ``dm.policy: pairing`` gives a stranger a code an owner
approves with ``/pair``.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.gateways.telegram.rig import BOT, telegram_rig

GROUP = -100777
OWNER = 42
STRANGER = 77


async def test_without_an_access_block_a_group_gets_replies_only_when_it_addresses_the_bot(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.tg.push_message(GROUP, "the build is red", user_id=7, first_name="Ann")
        rig.tg.push_message(GROUP, "@someone_else_bot hello", user_id=7, first_name="Ann")
        await rig.settle()
        assert rig.tg.sent_messages(GROUP) == []
        assert rig.llm.requests == []

        rig.tg.push_message(GROUP, f"@{BOT.upper()} what broke?", user_id=8, first_name="Bob")
        assert await rig.replies(GROUP) == [f"re: Bob: @{BOT.upper()} what broke?"]
        await rig.settle()
        chatter = str(rig.llm.requests[-1].json["messages"])
        assert "Ann: the build is red" in chatter  # kept as context for the mention

        answer = rig.tg.calls("sendMessage", chat_id=GROUP)[-1].answer
        assert answer is not None
        bot_message = answer["result"]["message_id"]
        rig.tg.push_message(
            GROUP, "and why?", user_id=9, first_name="Eve", reply_to_message_id=bot_message
        )
        await rig.replies(GROUP, 2)
        rig.tg.push_message(GROUP, "/status", user_id=9, first_name="Eve")
        rig.tg.push_message(GROUP, f"/weather@{BOT}", user_id=9, first_name="Eve")
        texts = await rig.replies(GROUP, 4)
        await rig.settle()
    assert texts[1] == "re: Eve: and why?"
    assert texts[2].startswith("Session: ")
    assert texts[3] == f"re: Eve: /weather@{BOT}"
    assert len(rig.tg.sent_messages(GROUP)) == 4


async def test_a_stranger_pairs_with_a_code_the_owner_sends_back(tmp_path: Path) -> None:
    access = {"owners": {"telegram": [OWNER]}, "dm": {"policy": "pairing"}}
    async with telegram_rig(tmp_path, access=access) as rig:
        rig.tg.push_message(STRANGER, "hi, who are you?", first_name="Sam")
        told = (await rig.replies(STRANGER))[0]
        await rig.settle()
        found = re.search(r"Your pairing code is ([A-Z2-9]{8}):", told)
        assert found is not None, told
        code = found[1]
        assert told == (
            f"I only answer people my owner has approved. Your pairing code is {code}: give it "
            f"to my owner, who approves it by sending /pair {code} to me. It expires in 60 "
            "min. Until then I do not read or keep your messages."
        )
        assert rig.llm.requests == []
        assert rig.runtime.registry.sessions_of_chat("telegram", str(STRANGER)) == []
        pairing = yaml.safe_load((tmp_path / ".duragent/pairing/bot.yaml").read_text())
        assert pairing["pending"][0]["code"] == code
        assert pairing["pending"][0]["sender_id"] == str(STRANGER)

        rig.tg.push_message(OWNER, f"/pair {code}", first_name="Owner")
        assert (await rig.replies(OWNER))[0].startswith(f"Paired Sam (telegram {STRANGER})")
        rig.tg.push_message(STRANGER, "thanks!", first_name="Sam")
        texts = await rig.replies(STRANGER, 3)
        await rig.settle()
    assert texts[1:] == [
        "My owner approved you: I will answer your messages from now on.",
        "re: thanks!",
    ]
