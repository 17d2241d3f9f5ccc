"""Who is in the month: owners, members, blocked and hostile members, strangers; their ids.

Telegram ids, fixed so a run can be read back from the fake's record:

- **owners** (``OWNERS``): named in every agent's ``spec.access.owners``. Their DMs reach the
  pairing agent (``desk``), where ``/pair <code>`` admits a stranger;
- **members** (``MEMBERS``): write the groups' answerable mentions in turn
  (``author_of``) and answer their own approval prompts;
- **blocked** (``BLOCKED``): ``block`` in the group agent's ``sender_overrides``; they write
  mentions and press buttons, and nothing of theirs may reach the model or be answered;
- **hostile** (``HOSTILE``): members with a member's rights, who try every class of attack
  (``attacks.py``) at random moments;
- **strangers** (``stranger``): a stream of people opening DMs, half to the pairing agent
  (an owner pairs some of them), half to the allow-list agent (refused: no turn).

Tokens tie what people wrote to what the bot did: ``#q<chat>n<k>#`` are the plan's answerable
messages (``campaign_verdict``), ``#b<n>#`` blocked members' words, ``#h<n>#`` attacks and
``#s<n>#`` strangers' words.
"""

from __future__ import annotations

import re

from duragent.testing.campaign_verdict import CampaignMessage, Chat

__all__ = [
    "BLOCKED",
    "BLOCKED_TOKEN",
    "HOSTILE",
    "HOSTILE_TOKEN",
    "MEMBERS",
    "OWNERS",
    "STRANGER_TOKEN",
    "author_of",
    "stranger",
]

OWNERS = (7_001, 7_002)
MEMBERS = tuple(range(710_000, 710_050))
BLOCKED = tuple(range(720_000, 720_005))
HOSTILE = tuple(range(730_000, 730_005))
STRANGERS = 740_000
"""The ``n``-th stranger's id (and DM chat id) is ``STRANGERS + n``."""

BLOCKED_TOKEN = re.compile(r"#b\d+#")
HOSTILE_TOKEN = re.compile(r"#h\d+#")
STRANGER_TOKEN = re.compile(r"#s\d+#")


def author_of(chat: Chat, m: CampaignMessage) -> int:
    """Who writes ``m``: a DM's own person; in a group, one of the members in turn."""
    if not chat.group:
        return chat.chat_id
    return MEMBERS[(chat.index * 7 + m.ordinal) % len(MEMBERS)]


def stranger(n: int) -> int:
    """The ``n``-th stranger's user id (their DM's chat id too)."""
    return STRANGERS + n
