"""Intent probes in the groups: what a group was told at the start, asked at the end of the month.

The year asks its probes in DMs; a public group is where a month of crowd talk buries what
was said (summaries) and where anyone may ``/pin``. Each group is told two facts at its start
and asked for both at its end:

- **pinned**: an owner writes ``/pin the meeting code of this group is osprey-<i>`` just
  before the group's first mention. A pin goes with every request and is never summarised
  (``turns/pins.py``), however much the crowd wrote since (and the hostile members' own pins,
  ``attacks.py``, sit beside it, quoted);
- **said**: the group's first mention carries ``SECRET: the vault code of chat <i> is
  kestrel-<i>.`` (``bench.year.model.secret_of``); by the end it lives only in the group's
  summaries (the scripted summariser keeps ``SECRET:`` lines, as a faithful one would).

The second-to-last plain mention asks for the meeting code, the last for the vault code
(``PROBE``, no chatter before them: their reply gives the code, not the buffer).
``StrangersModel`` looks for the code in the probe's request, anywhere but the question
itself (``found``), and answers with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bench.year.model import secret_of
from duragent.testing.campaign_verdict import CampaignMessage, Chat

__all__ = ["GroupProbes", "asked_code", "code_of", "pin_text"]

_INDEX = re.compile(r"#q(\d+)n\d+#")
PINNED, SAID = "pinned", "said"
QUESTIONS = {PINNED: "what is the meeting code of this group?", SAID: "what is the vault code?"}


def pin_text(index: int) -> str:
    """What the owner pins in group ``index``."""
    return f"/pin the meeting code of this group is {code_of(PINNED, index)}"


def code_of(kind: str, index: int) -> str:
    """The code a ``kind`` probe in group ``index`` asks for."""
    return f"osprey-{index}" if kind == PINNED else f"kestrel-{index}"


def asked_code(asked: str) -> str | None:
    """The code a probe message (``asked``) asks for, or None when it is no probe."""
    found = _INDEX.search(asked)
    if "PROBE" not in asked or found is None:
        return None
    for kind, question in QUESTIONS.items():
        if question in asked:
            return code_of(kind, int(found.group(1)))
    return None


@dataclass
class GroupProbes:
    """Which group mentions carry a fact or ask for one (module docstring)."""

    asks: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Probe token → (``PINNED`` or ``SAID``, the group's index)."""
    tells: dict[str, int] = field(default_factory=dict)
    """Token of a group's first mention (the pin goes before it; it says the vault code) →
    the group's index."""

    @classmethod
    def plan(cls, chats: list[Chat]) -> GroupProbes:
        """Pick each group's first and last two plain mentions; the probes lose their chatter."""
        probes = cls()
        for chat in chats:
            plain = [m for m in chat.messages if chat.group and not m.tool]
            if len(plain) < 4:
                continue
            probes.tells[plain[0].token] = chat.index
            for kind, m in ((PINNED, plain[-2]), (SAID, plain[-1])):
                probes.asks[m.token] = (kind, chat.index)
                m.chatter = []
        return probes

    def text(self, m: CampaignMessage, mention: str, written: str) -> str:
        """What ``m`` says in its group: a probe's question, the first mention's fact, or
        ``written`` (what the year would write)."""
        if m.token in self.asks:
            kind, _index = self.asks[m.token]
            return f"{mention} PROBE {m.token}: {QUESTIONS[kind]}"
        if m.token in self.tells:
            return f"{written} {secret_of(self.tells[m.token])}"
        return written
