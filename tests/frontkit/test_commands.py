"""Slash commands: which texts are commands for this bot; pins refused; ``/start`` and ``/help``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from duragent.agents import load_catalog
from duragent.agents.spec import ChatSpec
from duragent.frontkit import ChatRef
from duragent.frontkit.commands import addressed_to, parse_command, parse_intro, parse_pin
from duragent.frontkit.pairing_chat import parse_pair
from duragent.testing import Reply
from tests.frontkit.chat_contract_kit import (
    ANN,
    BOB,
    DM,
    EVE,
    GATEWAY,
    GROUP,
    ChatSetup,
    said,
    session_events,
)
from tests.frontkit.memory_chat import MemoryChat, memory_chat


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


# --- /start, /help (spec 202612051900.start-help-menu) --------------------------------------

OWNED = {"owners": {GATEWAY: [ANN.id]}, "dm": {"policy": "pairing", "allowlist": [BOB.id]}}
BOB_DM = ChatRef(GATEWAY, BOB.id)
EVE_DM = ChatRef(GATEWAY, EVE.id)


def use_chat_section(chat: MemoryChat, section: dict[str, Any]) -> None:
    """Give the agent ``bot`` this ``spec.chat`` and load it (as ``reload-agents`` would)."""
    path = chat.root / ".duragent" / "agents" / "bot" / "agent.yaml"
    document = json.loads(path.read_text())
    document["spec"]["chat"] = section
    path.write_text(json.dumps(document))
    chat.catalog = load_catalog(chat.root / ".duragent" / "agents")
    assert not chat.catalog.broken, chat.catalog.broken


@pytest.mark.parametrize(
    ("text", "bot", "intro"),
    [
        ("/start", "my_bot", "start"),
        ("/start ref-42", "my_bot", "start"),  # a deep link's payload
        ("/help@my_bot", "my_bot", "help"),
        ("  /help@MY_BOT\n", "@my_bot", "help"),
        ("/help@other_bot", "my_bot", None),
        ("/helpme", "my_bot", None),
        ("/Start", "my_bot", None),
        ("help", "my_bot", None),
        (None, "my_bot", None),
    ],
)
def test_start_and_help_are_recognised_for_this_bot_only(
    text: str | None, bot: str, intro: str | None
) -> None:
    assert parse_intro(text, bot) == intro


async def test_start_and_help_are_answered_by_the_runtime_and_start_no_session(
    tmp_path: Path,
) -> None:
    async with memory_chat(tmp_path, ChatSetup()) as chat:
        await chat.message(said(DM, "/start"))
        await chat.message(said(DM, "/help"))
        await chat.settle()
        start, help_ = chat.texts(DM)
        assert chat.llm.requests == []
        assert await session_events(chat, DM) == []
    assert start == (
        "Hi! I am bot.\nWrite to me here and I will answer. /help lists what else I can do."
    )
    assert help_.startswith("Write to me here and I will answer.\n\nCommands:\n/reset — ")
    for line in ("/status — ", "/pin <text> — ", "/unpin <pin id> — "):
        assert f"\n{line}" in help_
    assert "/pair" not in help_
    assert "/start" not in help_


async def test_help_shows_pair_to_an_owner_and_not_to_a_member(tmp_path: Path) -> None:
    async with memory_chat(tmp_path, ChatSetup(access=OWNED)) as chat:
        await chat.message(said(DM, "/help", ANN))
        await chat.message(said(BOB_DM, "/help", BOB, dm=True))
        await chat.settle()
        [owners] = chat.texts(DM)
        [members] = chat.texts(BOB_DM)
    assert "\n/pair [code] — Approve a pairing code" in owners
    assert "/pair" not in members
    assert members.split("\n/reset")[1] == owners.split("\n/reset")[1].split("\n/pair")[0]


async def test_a_strangers_start_under_pairing_greets_them_and_says_how_to_pair(
    tmp_path: Path,
) -> None:
    async with memory_chat(tmp_path, ChatSetup(access=OWNED)) as chat:
        await chat.message(said(EVE_DM, "/start", EVE, dm=True))
        await chat.settle()
        [told] = chat.texts(EVE_DM)
        assert await session_events(chat, EVE_DM) == []
    greeting, code = told.split("\n\n")
    assert greeting == "Hi! I am bot."
    assert code.startswith("I only answer people my owner has approved. Your pairing code is ")
    assert "/reset" not in told


async def test_a_stranger_is_not_answered_when_pairing_is_off(tmp_path: Path) -> None:
    access = {"dm": {"policy": "allowlist", "allowlist": [ANN.id]}}
    async with memory_chat(tmp_path, ChatSetup(access=access)) as chat:
        await chat.message(said(EVE_DM, "/start", EVE, dm=True))
        await chat.message(said(EVE_DM, "/help", EVE, dm=True))
        await chat.settle()
        assert chat.texts(EVE_DM) == []


async def test_in_a_group_help_says_to_mention_the_bot_and_a_passive_member_gets_nothing(
    tmp_path: Path,
) -> None:
    access = {**OWNED, "groups": {"sender_overrides": {BOB.id: "passive"}}}
    async with memory_chat(tmp_path, ChatSetup(access=access)) as chat:
        await chat.message(said(GROUP, "/help", ANN))  # bare: a command of the bot's
        await chat.message(said(GROUP, f"/start@{chat.bot_username}", BOB))
        await chat.settle()
        [help_] = chat.texts(GROUP)
    assert help_.startswith(
        f"Mention me (@{chat.bot_username}) or reply to one of my messages and I will answer."
    )
    assert "/pair" not in help_  # an owner's, but it works in a direct message only


async def test_the_agents_own_texts_and_commands_are_used(tmp_path: Path) -> None:
    async with memory_chat(tmp_path, ChatSetup()) as chat:
        use_chat_section(
            chat,
            {
                "start_message": "Welcome to Acme support.",
                "help_message": "Ask me about your orders.\n{commands}",
                "commands": [{"command": "order", "description": "Look up an order"}],
            },
        )
        chat.llm.enqueue(Reply(text="Order 123 shipped."))
        await chat.message(said(DM, "/start"))
        await chat.message(said(DM, "/help"))
        await chat.message(said(GROUP, "/order 123", ANN))  # bare, in a group: addressed
        await chat.settle()
        start, help_ = chat.texts(DM)
        assert chat.texts(GROUP) == ["Order 123 shipped."]
    assert start == "Welcome to Acme support."
    assert help_.startswith("Ask me about your orders.\n/reset — ")
    assert help_.endswith("\n/order — Look up an order")
    assert "Ann: /order 123" in str(chat.llm.requests[-1].json["messages"])


@pytest.mark.parametrize(
    ("commands", "error"),
    [
        ([{"command": "reset", "description": "mine"}], "answered by the runtime"),
        ([{"command": "Order", "description": "x"}], "pattern"),
        ([{"command": "o" * 33, "description": "x"}], "pattern"),
        ([{"command": "order", "description": " "}], "must not be blank"),
        ([{"command": "order", "description": "x" * 257}], "at most 256"),
        ([{"command": "a", "description": "x"}, {"command": "a", "description": "y"}], "twice"),
    ],
)
def test_an_agents_command_telegram_would_refuse_is_a_config_error(
    commands: list[dict[str, str]], error: str
) -> None:
    with pytest.raises(ValidationError, match=error):
        ChatSpec.model_validate({"commands": commands})
