"""Who may talk to an agent in a chat, and how it treats each group member (``spec.access``).

Pure functions over the agent's ``AccessSpec`` and a message, so every platform decides the
same way and tests are tables:

- the **chat gate**: direct messages by ``dm.policy`` (``open`` / ``disabled`` /
  ``allowlist`` of sender ids); groups and channels by ``groups.policy`` with an allowlist of
  ``"<gateway>:<chat_id>"``; a chat type the kit does not know is let through (as the
  reference, for forward compatibility); ``dm.policy: pairing`` lets in the allowlist and
  the senders an owner paired; an owner (``owners``) is always let in;
- the **sender disposition** in a group: an exact ``sender_overrides`` entry, else the longest
  matching wildcard entry, else ``sender_default`` — ``allow`` (answer when triggered),
  ``passive`` (recorded as history, never answered), ``silent`` (context buffer only),
  ``block`` (dropped);
- **activation**: ``mention`` (a group message triggers a turn only when it mentions the bot,
  replies to it or is a command) or ``always``.

No access block means the defaults (``agents.roles.access_of``): DMs open, groups answered
when triggered. The gate and the sender rules live in ``agents.roles`` (the turn's tools use
the same rules for the caller's role); this module adds what a message makes of them.

Patterns are exact strings or end with ``*`` (a prefix match; ``*`` alone matches all).
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Literal

from duragent.agents.roles import (
    GROUP_CHAT_TYPES,
    access_of,
    chat_allowed,
    is_owner,
    matches_pattern,
    sender_disposition,
)
from duragent.agents.spec import AccessSpec, ContextBufferSpec, GroupAccess, SenderDisposition

__all__ = [
    "GROUP_CHAT_TYPES",
    "Admission",
    "admit",
    "chat_allowed",
    "matches_pattern",
    "mention_context",
    "sender_disposition",
]


@dataclass(frozen=True, slots=True)
class Admission:
    """What the access rules make of one message.

    ``action``: ``drop`` (the gate refused it, or a blocked sender), ``buffer`` (silent:
    context buffer only), ``record`` (passive: kept as history, no reply) or ``answer``.
    ``reason`` says why, for the one log line a dropped message gets.
    """

    action: Literal["drop", "buffer", "record", "answer"]
    reason: str
    disposition: SenderDisposition = "allow"
    """The sender's disposition (``allow`` outside groups): only ``allow`` runs commands."""
    buffer: ContextBufferSpec | None = None
    """For a triggered group message under ``activation: mention`` in ``silent`` mode: the
    buffer to inject as context into the turn."""


def admit(
    access: AccessSpec | None,
    *,
    gateway: str,
    chat_type: str,
    chat_id: str,
    sender_id: str,
    triggered: bool,
    paired: Container[str] = (),
) -> Admission:
    """The gate, then (in groups) the sender's disposition and mention gating.

    ``triggered``: the message mentions the bot, replies to it or is a command. No access
    block means the defaults: a group is answered only when triggered. ``paired``: the
    direct-message senders an owner paired (``dm.policy: pairing``).
    """
    if not chat_allowed(
        access,
        gateway=gateway,
        chat_type=chat_type,
        chat_id=chat_id,
        sender_id=sender_id,
        paired=paired,
    ):
        return Admission("drop", f"refused by spec.access for {chat_type} chats")
    if chat_type.lower() not in GROUP_CHAT_TYPES:
        return Admission("answer", "allowed")
    groups = access_of(access).groups
    owner = is_owner(access, gateway, sender_id)  # never blocked, muted or passive
    disposition = "allow" if owner else sender_disposition(groups, sender_id)
    if disposition == "block":
        return Admission("drop", "sender blocked in this group", disposition)
    if disposition == "silent":
        return Admission("buffer", "silent sender", disposition)
    if disposition == "passive":
        return Admission("record", "passive sender", disposition)
    if groups.activation == "mention":
        if not triggered:
            if groups.context_buffer.mode == "silent":
                return Admission("buffer", "not mentioned")
            return Admission("record", "not mentioned")
        return Admission("answer", "mentioned", buffer=mention_context(groups))
    return Admission("answer", "allowed")


def mention_context(groups: GroupAccess) -> ContextBufferSpec | None:
    """The buffer a group turn shows the model: the silent chatter since it was mentioned.

    Only an agent that answers mentions keeps chatter silently (``activation: mention``,
    ``context_buffer.mode: silent``); in passive mode the chatter is history already.
    """
    silent = groups.activation == "mention" and groups.context_buffer.mode == "silent"
    return groups.context_buffer if silent else None
