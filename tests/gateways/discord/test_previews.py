"""Replies streamed into a Discord channel, end to end: the fake Discord records the edits.

A scripted model streams slowly; the real gateway (discord.py) sends a preview message, edits
it as text arrives (``PATCH``), and puts the reply in its place (``frontkit.preview``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from duragent.testing import Reply, ToolCallReply
from duragent.testing.discord_objects import Person
from tests.frontkit.chat_contract_kit import ASK, ChatSetup
from tests.gateways.discord.discord_chat import DiscordChat, discord_chat
from tests.polling import eventually
from tests.turns.turn_fixtures import FnTool

ANN = Person(1001, "ann", global_name="Ann")
DM = 1001


def slow(text: str, *, pieces: int = 20, tool_calls: Sequence[ToolCallReply] = ()) -> Reply:
    size = max(1, len(text) // pieces)
    chunks = [text[i : i + size] for i in range(0, len(text), size)]
    return Reply(text=text, chunks=chunks, chunk_delay=0.15, tool_calls=tool_calls)


def preview_id(chat: DiscordChat) -> int:
    [first, *_] = chat.dc.sent(DM)
    return int(first["id"])


async def test_a_reply_being_written_is_previewed_edited_and_finished_in_place(
    tmp_path: Path,
) -> None:
    text = "**Streaming** on Discord: " + " ".join(f"word{i}" for i in range(40)) + "."
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(slow(text))
        asked = await chat.push(DM, "tell me", ANN)
        await chat.settle()
        [preview] = chat.dc.sent(DM)
        edits = chat.dc.edits(DM, int(preview["id"]))
    assert text.startswith(preview["content"])
    assert preview["content"] != text  # a preview, then edits
    assert preview["message_reference"]["message_id"] == asked["id"]  # quoting, as replies do
    assert len(edits) >= 2
    assert edits[-1]["content"] == text
    assert chat.dc.final_texts(DM) == [text]


async def test_rate_limited_edits_only_slow_the_preview(tmp_path: Path) -> None:
    text = "Rate limits " + " ".join(f"n{i}" for i in range(40)) + " done."
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(slow(text))
        await chat.push(DM, "go", ANN)
        assert await eventually(lambda: bool(chat.dc.sent(DM)))
        path = f"/channels/{DM}/messages/{preview_id(chat)}"
        chat.dc.rate_limit("PATCH", path, 0.3, 0.3)
        await chat.settle()
        limited = [c for c in chat.dc.calls("PATCH", path) if c.status == 429]
        assert len(limited) == 2
        assert len(chat.dc.sent(DM)) == 1
        assert chat.dc.final_texts(DM) == [text]


async def test_an_approval_mid_turn_ends_the_preview_with_the_text_so_far(tmp_path: Path) -> None:
    said = "I will echo that for you, " + " ".join(f"step{i}" for i in range(30)) + "."
    echo = FnTool("echo", lambda a: "echoed")
    setup = ChatSetup(access={"owners": {"discord": [str(ANN.id)]}}, policy=ASK, tools=[echo])
    call = ToolCallReply(name="echo", arguments={"x": "hi"}, id="c1")
    async with discord_chat(tmp_path, setup) as chat:
        chat.llm.enqueue(slow(said, tool_calls=[call]))
        await chat.push(DM, "echo hi", ANN)
        await chat.settle()
        preview, prompt = chat.dc.sent(DM)
        edits = chat.dc.edits(DM, int(preview["id"]))
    assert prompt["components"]  # the request with its buttons, after the text
    assert edits[-1]["content"] == said
    assert chat.dc.final_texts(DM)[0] == said
    assert "echo" in chat.dc.final_texts(DM)[1]


async def test_a_preview_discord_posted_before_the_connection_dropped_is_known_and_finished(
    tmp_path: Path,
) -> None:
    """The preview's post took effect and its answer was lost: posted again with the same
    nonce, Discord returns that message, so the reply is finished in it; a second preview
    would leave the first half-written in the chat."""
    text = "Dropped " + " ".join(f"w{i}" for i in range(40)) + " end."
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.dc.drop("POST", f"/channels/{DM}/messages", after_applying=True)
        chat.llm.enqueue(slow(text))
        await chat.push(DM, "go", ANN)
        await chat.settle()
        sent = chat.dc.sent(DM)
        assert len(sent) == 1, [m["content"] for m in sent]
        assert chat.dc.final_texts(DM) == [text]
