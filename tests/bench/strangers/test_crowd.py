"""The crowd's bookkeeping: the day is not over while a stranger's pairing is under way."""

from __future__ import annotations

import random
from typing import Any

from bench.strangers.attacks import Crowd
from bench.strangers.cast import OWNERS


def crowd() -> Crowd:
    unused: Any = None  # the fake Telegram and the store are not reached by ``done``
    return Crowd(unused, random.Random(1), groups=[-1001], view=unused, honeypot="http://x")


def test_the_day_waits_for_an_owners_pair_typed_or_on_its_way() -> None:
    c = crowd()
    assert c.done()
    c.approving[740001] = (OWNERS[0], "ABCD")  # typed, not sent yet
    assert not c.done()
    c.approving.clear()
    c.pairing.add(OWNERS[0])  # sent: the bot tells the stranger, then answers the owner
    assert not c.done()
    c.pairing.clear()
    c.writing[740001] = 1_000  # the stranger, told, writes again
    assert not c.done()
    c.writing.clear()
    c.unanswered_after.add("#s9#")
    assert not c.done()
    c.unanswered_after.clear()
    assert c.done()
