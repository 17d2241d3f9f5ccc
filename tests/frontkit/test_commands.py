"""Slash commands: which texts are ``/reset``, ``/status``, ``/pin`` for this bot; pins refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.frontkit.commands import addressed_to, parse_command, parse_pin
from duragent.frontkit.pairing_chat import parse_pair
from tests.frontkit.chat_contract_kit import DM, ChatSetup, said
from tests.frontkit.memory_chat import memory_chat


@pytest.mark.parametrize(
    ("text", "bot", "command"),
    [
        ("/reset", "my_bot", "reset"),
        ("  /status\n", "my_bot", "status"),
        ("/reset@my_bot", "my_bot", "reset"),
        ("/reset@My_Bot", "@my_bot", "reset"),
        ("/reset@other_bot", "my_bot", None),
        ("/reset@my_bot", None, None),  # the bot's name is not known: cannot be for it
        ("/reset now", "my_bot", None),
        ("/Reset", "my_bot", None),
        ("/help", "my_bot", None),
        ("reset", "my_bot", None),
        ("", "my_bot", None),
        (None, "my_bot", None),
    ],
)
def test_only_the_bots_own_commands_are_commands(
    text: str | None, bot: str | None, command: str | None
) -> None:
    assert parse_command(text, bot) == command


@pytest.mark.parametrize(
    ("text", "bot", "pin"),
    [
        ("/pin keep it short", "my_bot", ("pin", "keep it short")),
        ("  /pin@my_bot  metric units ", "my_bot", ("pin", "metric units")),
        ("/pin", "my_bot", ("pin", "")),
        ("/pin\nline two", "my_bot", ("pin", "line two")),
        ("/unpin pin_1", "my_bot", ("unpin", "pin_1")),
        ("/pin@other_bot x", "my_bot", None),
        ("/pinned x", "my_bot", None),
        ("pin x", "my_bot", None),
        (None, "my_bot", None),
    ],
)
def test_pin_and_unpin_take_their_argument(
    text: str | None, bot: str | None, pin: tuple[str, str] | None
) -> None:
    assert parse_pin(text, bot) == pin


async def test_a_chat_pin_the_agent_has_no_room_left_for_is_refused_with_the_limit(
    tmp_path: Path,
) -> None:
    """``/pin`` until the pins are full: the next one is answered "Not pinned", not recorded.

    Recorded, a pin past the agent's room made every later turn of the chat fail.
    """
    text = " ".join(f"fact{k} alpha{k % 7}" for k in range(130))  # < 2,000 characters
    replies: list[str] = []
    async with memory_chat(tmp_path, ChatSetup()) as chat:
        for n in range(30):
            await chat.message(said(DM, f"/pin {n} {text}"))
            replies = chat.texts(DM)
            if replies[-1].startswith("Not pinned"):
                break
        sid = await chat.registry.chat_session((DM.gateway, DM.chat_id, "bot"))
        assert sid is not None
        memory = await chat.registry.handle(sid).memory()
    refusal = replies[-1]
    assert refusal.startswith("Not pinned: it needs ~")
    assert "pins may take at most" in refusal
    assert "/unpin one of the others" in refusal
    assert len(memory.pins) == len(replies) - 1
    assert all(r.startswith("Pinned (pin_") for r in replies[:-1])


@pytest.mark.parametrize(
    ("text", "bot", "addressed"),
    [
        ("/help@my_bot", "my_bot", True),
        ("/help@MY_BOT please", "@my_bot", True),
        ("/help@other_bot", "my_bot", False),
        ("/help", "my_bot", False),  # a bare command may be for any bot in the group
        ("/help@my_bot", None, False),
        ("hello @my_bot", "my_bot", False),  # a mention: the platform's entities say so
        ("", "my_bot", False),
        (None, "my_bot", False),
    ],
)
def test_a_command_addressed_to_this_bot_by_name_addresses_it(
    text: str | None, bot: str | None, addressed: bool
) -> None:
    assert addressed_to(text, bot) is addressed


@pytest.mark.parametrize(
    ("text", "bot", "argument"),
    [
        ("/pair K7QW3MZP", "my_bot", "K7QW3MZP"),
        ("  /pair@my_bot  k7qw-3mzp ", "my_bot", "k7qw-3mzp"),
        ("/pair", "my_bot", ""),
        ("/pair@other_bot K7QW3MZP", "my_bot", None),
        ("/pairing K7QW3MZP", "my_bot", None),
        ("pair K7QW3MZP", "my_bot", None),
        (None, "my_bot", None),
    ],
)
def test_pair_takes_the_code_as_its_argument(
    text: str | None, bot: str | None, argument: str | None
) -> None:
    assert parse_pair(text, bot) == argument
