"""Slash commands: which texts are ``/reset`` and ``/status`` for this bot."""

from __future__ import annotations

import pytest

from duragent.frontkit.commands import parse_command, parse_pin


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
