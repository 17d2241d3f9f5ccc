"""Discord on a bad day: 5xx answers and connections lost before or after a post took effect.

A lost connection leaves the bot unable to tell a posted reply from a lost one, so it posts
again; Discord keeps that second post from showing twice only when it carries the first one's
nonce (``enforce_nonce``). The fake Discord does what Discord does with nonces, so a sender
that made a new nonce for each try would show the reply twice here.
"""

from __future__ import annotations

from pathlib import Path

from duragent.testing import Reply
from duragent.testing.discord_objects import Person
from tests.frontkit.chat_contract_kit import ChatSetup
from tests.gateways.discord.discord_chat import discord_chat

ANN = Person(1001, "ann", global_name="Ann")
DM = 1001
POSTS = f"/channels/{DM}/messages"


async def test_a_reply_whose_connection_dropped_after_discord_posted_it_shows_once(
    tmp_path: Path,
) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.dc.drop("POST", POSTS, after_applying=True)
        chat.llm.enqueue(Reply(text="Only once."))
        await chat.push(DM, "hello", ANN)
        await chat.settle()
        posts = chat.dc.calls("POST", POSTS)
        sent = [m["content"] for m in chat.dc.sent(DM)]
    assert sent == ["Only once."]
    assert [(c.status, c.repeated) for c in posts] == [(200, False), (200, True)]
    assert posts[0].body["nonce"] == posts[1].body["nonce"]


async def test_a_reply_whose_connection_dropped_before_it_was_posted_is_sent_once(
    tmp_path: Path,
) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.dc.drop("POST", POSTS)
        chat.llm.enqueue(Reply(text="Here."))
        await chat.push(DM, "hello", ANN)
        await chat.settle()
        sent = [m["content"] for m in chat.dc.sent(DM)]
    assert sent == ["Here."]


async def test_a_reply_answered_with_server_errors_is_waited_out_and_sent_once(
    tmp_path: Path,
) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.dc.fail("POST", POSTS, 502, times=2)
        chat.llm.enqueue(Reply(text="Eventually."))
        await chat.push(DM, "hello", ANN)
        await chat.settle()
        statuses = [c.status for c in chat.dc.calls("POST", POSTS)]
        sent = [m["content"] for m in chat.dc.sent(DM)]
    assert sent == ["Eventually."]
    assert statuses == [502, 502, 200]


async def test_a_long_reply_cut_by_a_dropped_connection_shows_each_piece_once(
    tmp_path: Path,
) -> None:
    long = "\n\n".join(f"paragraph {i}: " + "word " * 150 for i in range(6))
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text=long))
        chat.dc.drop("POST", POSTS, after_applying=True, times=2)
        await chat.push(DM, "write a lot", ANN)
        await chat.settle()
        sent = [m["content"] for m in chat.dc.sent(DM)]
    assert len(sent) == len(set(sent)) >= 3
    assert "".join("".join(sent).split()) == "".join(long.split())  # every word, once
