"""``gateways.discord``: the reference's fields, and a token checked before Discord is asked."""

from __future__ import annotations

import pytest

from duragent.config.workspace import DiscordConfig

TOKEN = "MTI0MjQyNDI0MjQyNDI0MjQy.GAbc12.abcdefghijklmnopqrstuvwxyz0123456789AB"


def test_a_well_formed_token_has_no_problem() -> None:
    assert DiscordConfig(bot_token=TOKEN).token_problem() is None


@pytest.mark.parametrize(
    ("token", "said"),
    [
        (None, "is empty"),
        ("", "is empty"),
        ("paste-it-here", "does not look like a bot token"),
        ("a.b", "does not look like a bot token"),
        ("MTI0.GAbc.x y", "does not look like a bot token"),
        (f"Bot {TOKEN}", "starts with 'Bot '"),
    ],
)
def test_a_token_that_cannot_be_one_is_said_with_the_fix(token: str | None, said: str) -> None:
    problem = DiscordConfig(bot_token=token).token_problem()
    assert problem is not None
    assert problem.startswith("gateways.discord.bot_token ")
    assert said in problem
    assert "Developer Portal" in problem


def test_base_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="must start with http"):
        DiscordConfig(base_url="discord.example")
