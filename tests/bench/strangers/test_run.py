"""``python -m bench.strangers``, short: a simulated day of a public group served to a crowd.

The month (``python -m bench.strangers``: 10,000 messages, 20 SIGKILLs) and this day run the
same engine (the year's, ``bench/year/run.py``, in ``bench/strangers/world.py``'s world): two
groups with 50 members, blocked and hostile members trying every class of attack twice
(``bench/strangers/attacks.py``), strangers to a pairing and an allow-list agent, photos,
voice notes and documents in the DMs, slow replies streamed into them, a pinned and an early
fact asked for at each group's end, a Discord channel and DMs on the same server, tools in
bubblewrap, two kills of ``duragent serve``; then serve CPU by kind.
A failure's ``problems`` name the chat, message or attempt; the workspace, every serving
process's log and the fake Telegram's record stay in ``tmp_path``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bench.strangers import cpu
from bench.strangers.attacks import KINDS
from bench.strangers.run import QUICK, run_strangers
from tests.tools.sandbox_support import bwrap

__all__ = ["bwrap"]


async def test_a_day_of_strangers_escalates_nothing_leaks_nothing_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bwrap: str
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "1")
    result = await run_strangers(replace(QUICK, seed=1, workdir=tmp_path))
    table = dict(result.world_rows)
    assert result.problems == []
    assert result.ok
    assert table["escalations / secrets leaked"] == "0 / 0"
    assert result.campaign.kills == QUICK.kills
    assert result.campaign.missing == 0
    assert result.overflows == 0
    made = table["attempts made"]
    assert all(f"{kind} 2" in made for kind in KINDS), made
    refused, taken = table["others' presses on members' prompts: refused / taken"].split(" / ")
    assert int(refused) > 0
    assert taken == "0"
    paired, answered = table["strangers paired / answered after"].split(" / ")
    assert paired == answered != "0"
    seen, _tokens = table["  photos seen as images / tokens each (mean)"].split(" / ")
    assert int(seen) > 0
    assert int(table["active schedules made from a chat, most in one (quota 20)"]) == 20
    for kind in cpu.KINDS:  # measured on the day's own server once it was over
        assert table[f"  {kind}"].endswith("× a text)"), table
    shown, finished, deleted, half = table[
        "streamed replies: previews / finished in place / deleted / left half"
    ].split(" / ")
    assert int(shown) > 0  # slow replies reached the chat as previews
    assert int(finished) + int(deleted) == int(shown)
    assert half == "0"
    pinned, said = table["group intent probes answered: pinned / said at the start"].split(" / ")
    assert pinned == said == f"{2} of {2}"  # two groups in the day
    sent, once, missing, twice = table[
        "Discord: messages / answered once / missing / answered twice"
    ].split(" / ")
    offline, in_flight = table[
        "  not delivered (written while no bot connected / in flight to a kill)"
    ].split(" / ")
    assert int(sent) == QUICK.discord_messages
    assert int(once) + int(offline) + int(in_flight) == int(sent)
    assert (missing, twice) == ("0", "0")
    refused, escalations, leaks = table["  hostile presses refused / escalations / leaks"].split(
        " / "
    )
    assert int(refused) > 0
    assert (escalations, leaks) == ("0", "0")
    once_down, _again = table["  files downloaded once / again after a kill"].split(" / ")
    assert int(once_down) > 0  # a second whole download without a kill would be a problem
