"""Slash commands: which texts are ``/reset`` and ``/status`` for this bot."""

from __future__ import annotations

import pytest

from duragent.frontkit.commands import parse_command


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
