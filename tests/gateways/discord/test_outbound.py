"""What the Discord gateway writes that the kit does not: the approval prompt's length."""

from __future__ import annotations

from duragent.frontkit import approval_prompt
from duragent.gateways.discord.outbound import approval_text
from duragent.gateways.discord.split import DISCORD_TEXT_LIMIT


def test_an_approval_prompt_that_fits_is_the_kits() -> None:
    assert approval_text("bash:ls -la") == approval_prompt("bash:ls -la")


def test_a_command_too_long_for_one_message_is_cut_and_says_how_much_is_hidden() -> None:
    command = "bash:" + "x" * 3000
    text = approval_text(command)
    assert len(text) <= DISCORD_TEXT_LIMIT
    assert text.startswith("Command requires approval:\n```\nbash:xxx")
    kept = text.split("```\n", 1)[1].split("\n```", 1)[0]
    assert text.endswith(
        f"[command cut here: {len(command) - len(kept)} more characters not shown]"
    )
    assert text.count("```") == 2  # the buttons go with one message: the block stays closed
