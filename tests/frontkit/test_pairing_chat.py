"""Pairing in the chat pipeline: a pairing lets in what the sender writes from then on.

A platform may deliver a message again after a restart (Telegram re-sends every update whose
offset was not confirmed). A stranger's message refused before an owner paired them must not
be let in by such a second delivery: it is judged by when it was written, not when it came.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path

from duragent.frontkit import ChatRef
from duragent.frontkit.pairing_chat import PAIRED_NOTICE, WRITTEN_BEFORE_PAIRING
from duragent.testing import Reply
from tests.frontkit.chat_contract_kit import ANN, BOB, DM, GATEWAY, ChatSetup, said
from tests.frontkit.memory_chat import memory_chat

PAIRING = {"owners": {GATEWAY: [ANN.id]}, "dm": {"policy": "pairing"}}
STRANGER_DM = ChatRef(GATEWAY, BOB.id)
CODE = re.compile(r"Your pairing code is ([A-Z2-9]{8}):")


async def test_a_message_refused_before_pairing_and_delivered_again_after_it_is_not_read(
    tmp_path: Path,
) -> None:
    async with memory_chat(tmp_path, ChatSetup(access=PAIRING)) as chat:
        chat.llm.enqueue(Reply(text="Hello Bob."))
        early = replace(said(STRANGER_DM, "secret plan", BOB, dm=True), sent_at=time.time() - 60)
        await chat.message(early)
        await chat.settle()
        found = CODE.search(chat.texts(STRANGER_DM)[0])
        assert found is not None
        await chat.message(said(DM, f"/pair {found[1]}", ANN))
        await chat.settle()
        await chat.message(early)  # the platform delivers it again, after the pairing
        await chat.settle()
        assert chat.texts(STRANGER_DM)[1:] == [PAIRED_NOTICE, WRITTEN_BEFORE_PAIRING]
        assert chat.llm.requests == []
        assert await chat.registry.chat_session((GATEWAY, BOB.id, "bot")) is None
        later = replace(said(STRANGER_DM, "hello", BOB, dm=True), sent_at=time.time())
        await chat.message(later)
        await chat.settle()
        assert chat.texts(STRANGER_DM)[-1] == "Hello Bob."
    assert "secret plan" not in str(chat.llm.requests[-1].json["messages"])


async def paired_bob_writes(tmp_path: Path, sent_at: float | None) -> str:
    """Bob gets a code, Ann pairs him, Bob writes dated ``sent_at``: the last reply he gets."""
    async with memory_chat(tmp_path, ChatSetup(access=PAIRING)) as chat:
        chat.llm.enqueue(Reply(text="Hi."))
        await chat.message(said(STRANGER_DM, "hello?", BOB, dm=True))
        await chat.settle()
        found = CODE.search(chat.texts(STRANGER_DM)[0])
        assert found is not None
        await chat.message(said(DM, f"/pair {found[1]}", ANN))
        await chat.message(replace(said(STRANGER_DM, "now?", BOB, dm=True), sent_at=sent_at))
        await chat.settle()
        return chat.texts(STRANGER_DM)[-1]


async def test_a_message_without_a_sending_time_from_a_paired_sender_is_answered(
    tmp_path: Path,
) -> None:
    assert await paired_bob_writes(tmp_path, None) == "Hi."


async def test_a_date_no_restart_could_bring_back_is_judged_as_the_message_arrives(
    tmp_path: Path,
) -> None:
    """A platform keeps an unconfirmed message a day at most: an older date is a clock's."""
    assert await paired_bob_writes(tmp_path, 1_700_000_000.0) == "Hi."
