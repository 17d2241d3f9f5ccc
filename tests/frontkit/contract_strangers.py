"""The chat contract for people the owner did not name: group members and DM strangers.

Run per adapter like ``contract_chat`` (the including module provides ``open_chat``):

- an agent with **no access block** answers a group only when addressed — a mention, a reply
  to the bot or a command — and keeps the rest as context for the next mention (issue 33:
  it used to answer every group message);
- ``dm.policy: pairing``: a stranger's DM gets a one-time code and is neither answered nor
  kept; an owner's ``/pair <code>`` lets the stranger in; a member's ``/pair`` is refused.
"""

from __future__ import annotations

import re

from duragent.frontkit import ChatRef
from duragent.frontkit.pairing_chat import PAIR_IN_DM_ONLY, PAIR_OWNERS_ONLY, PAIRED_NOTICE
from duragent.testing import Reply
from tests.frontkit.chat_contract_kit import (
    ANN,
    BOB,
    DM,
    EVE,
    GATEWAY,
    GROUP,
    ChatSetup,
    OpenChat,
    last_prompt,
    said,
    session_events,
)

# --- no access block: groups answer when addressed ------------------------------------------


async def test_without_an_access_block_a_group_is_answered_only_when_addressed(
    open_chat: OpenChat,
) -> None:
    async with open_chat(ChatSetup(access=None)) as chat:
        chat.llm.enqueue(Reply(text="to the mention"), Reply(text="to the reply"))
        await chat.message(said(GROUP, "the build is red", ANN))
        await chat.settle()
        assert chat.texts(GROUP) == []
        assert chat.llm.requests == []
        await chat.message(said(GROUP, "what happened?", BOB, mention=True))
        await chat.settle()
        prompt = [str(m["content"]) for m in last_prompt(chat)]
        assert any("Ann: the build is red" in m for m in prompt)  # kept as context
        assert prompt[-1] == "bob: what happened?"
        await chat.message(said(GROUP, "and now?", EVE, reply_to_bot=True))
        await chat.settle()
        assert chat.texts(GROUP) == ["to the mention", "to the reply"]
        events = await session_events(chat, GROUP)
    kept = [t for t in events if t not in ("session_start", "delivery")]
    assert kept == [
        "silent_message",
        "user_message",
        "assistant_response",
        "user_message",
        "assistant_response",
    ]


async def test_without_an_access_block_commands_in_a_group_need_no_mention(
    open_chat: OpenChat,
) -> None:
    async with open_chat(ChatSetup(access=None)) as chat:
        chat.llm.enqueue(Reply(text="help from the model"))
        await chat.message(said(GROUP, "/status", ANN))
        await chat.message(said(GROUP, "/pin Standup is at 10.", ANN))
        await chat.message(said(GROUP, f"/weather@{chat.bot_username}", BOB))
        await chat.settle()
        texts = chat.texts(GROUP)
    assert texts[0] == "No active session."
    assert texts[1].startswith("Pinned (pin_")
    assert texts[2] == "help from the model"  # a command addressed to the bot triggers a turn


# --- dm.policy: pairing ---------------------------------------------------------------------

PAIRING = {"owners": {GATEWAY: [ANN.id]}, "dm": {"policy": "pairing"}}
STRANGER_DM = ChatRef(GATEWAY, BOB.id)
CODE = re.compile(r"Your pairing code is ([A-Z2-9]{8}):")


async def test_a_stranger_gets_a_code_and_nothing_of_theirs_is_kept(open_chat: OpenChat) -> None:
    async with open_chat(ChatSetup(access=PAIRING)) as chat:
        await chat.message(said(STRANGER_DM, "hello?", BOB, dm=True))
        await chat.message(said(STRANGER_DM, "anyone?", BOB, dm=True))
        await chat.settle()
        texts = chat.texts(STRANGER_DM)
        assert len(texts) == 1  # asked again within a minute: not told twice
        assert CODE.search(texts[0]), texts[0]
        assert "expires in 60 min" in texts[0]
        assert await session_events(chat, STRANGER_DM) == []
        assert chat.llm.requests == []


async def test_an_owner_pairs_a_stranger_with_the_code_and_their_next_dm_is_answered(
    open_chat: OpenChat,
) -> None:
    async with open_chat(ChatSetup(access=PAIRING)) as chat:
        chat.llm.enqueue(Reply(text="Hello Bob."))
        await chat.message(said(STRANGER_DM, "hello?", BOB, dm=True))
        await chat.settle()
        found = CODE.search(chat.texts(STRANGER_DM)[0])
        assert found is not None
        code = found[1]
        await chat.message(said(DM, f"/pair {code.lower()}", ANN))
        await chat.settle()
        assert chat.texts(DM) == [
            f"Paired bob ({GATEWAY} {BOB.id}): I answer their direct messages from now on. "
            f"To undo: duragent pairing revoke {GATEWAY} {BOB.id}"
        ]
        await chat.message(said(STRANGER_DM, "hello again", BOB, dm=True))
        await chat.settle()
        assert chat.texts(STRANGER_DM)[1:] == [PAIRED_NOTICE, "Hello Bob."], chat.texts(STRANGER_DM)
        assert last_prompt(chat)[-1] == {"role": "user", "content": "hello again"}
        await chat.message(said(DM, f"/pair {code}", ANN))
        await chat.settle()
        assert chat.texts(DM)[-1].startswith(f"No pairing code {code} is waiting")


async def test_a_member_cannot_approve_a_code(open_chat: OpenChat) -> None:
    async with open_chat(ChatSetup(access=PAIRING)) as chat:
        await chat.message(said(STRANGER_DM, "let me in", BOB, dm=True))
        await chat.settle()
        found = CODE.search(chat.texts(STRANGER_DM)[0])
        assert found is not None
        await chat.message(said(GROUP, f"/pair {found[1]}", EVE, mention=True))
        await chat.settle()
        assert chat.texts(GROUP) == [PAIR_OWNERS_ONLY]
        for asked in ("/pair", f"/pair {found[1]}"):  # the owner, in the group
            await chat.message(said(GROUP, asked, ANN, mention=True))
            await chat.settle()
            assert chat.texts(GROUP)[-1] == PAIR_IN_DM_ONLY  # codes and names stay private
        assert not any(found[1] in text for text in chat.texts(GROUP))
        await chat.message(said(DM, "/pair", ANN))
        await chat.settle()
        assert chat.texts(DM)[-1].startswith(
            f"Pairing codes waiting (approve with /pair <code>):\n{found[1]}  {GATEWAY} {BOB.id}"
        )
