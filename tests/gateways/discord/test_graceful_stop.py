"""Discord across a graceful stop and beside other nodes: a reply arrives once, a press is
answered once.

A graceful stop while a reply is on its way to Discord: the reply arrives once.

The real gateway against the fake Discord, which answers the reply's post late (and posts it
then, as a slow Discord does). The gateway stops while the post is under way: its stop lets
the post end, so the delivery is known and recorded, before it closes discord.py's HTTP
client. A client closed under it would cut the post while Discord still makes the message,
and the next start, finding no delivery recorded, would post the reply again.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from duragent.testing import Reply
from tests.frontkit.chat_contract_kit import DM, ChatSetup, pressed, said
from tests.gateways.discord.discord_chat import discord_chat
from tests.polling import eventually


async def test_a_reply_under_way_when_the_gateway_stops_is_delivered_once(
    tmp_path: Path,
) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.dc.slow("POST", f"/channels/{DM.chat_id}/messages", 1.0)
        chat.llm.enqueue(Reply(text="the answer, once"))
        await chat.message(said(DM, "a question"))
        assert await eventually(lambda: chat.dc.slowed == 1, within=60), "no reply under way"
        await chat.stop()  # while the fake holds the reply's post
        assert chat.texts(DM) == ["the answer, once"]
        await chat.start()  # the next start finds nothing owed
        chat.llm.enqueue(Reply(text="a second answer"))
        await chat.message(said(DM, "and now?"))
        await chat.settle()
        assert chat.texts(DM) == ["the answer, once", "a second answer"]


async def test_a_press_another_node_answered_first_is_not_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each node receives every press: when another node's copy answered it first, Discord
    refuses the second answer (40060), which is no failure of this node."""
    caplog.set_level(logging.INFO)
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        prompt = chat.dc.plant_message(int(DM.chat_id), "an old prompt", ["approve:allow_once"])
        chat.dc.answered_elsewhere = 1
        await chat.press(pressed(DM, "approve:allow_once", str(prompt)))
        await chat.settle()
    assert "Ignoring exception" not in caplog.text
    assert "was answered already" in caplog.text
