"""Roles from ``spec.access``: who is an owner, a member, a stranger or blocked, on a chat.

Pure functions over the agent's ``AccessSpec`` so every front end and the turn's tools decide
the same way (``specs/202612050000.many-people-one-bot.md``). The chat gate and group sender
rules are the reference's (``frontkit.access`` builds admission on them); owners come first:
an owner is never blocked and never refused.

Patterns are exact strings or end with ``*`` (a prefix match; ``*`` alone matches all); owner
ids are exact only.
"""

from __future__ import annotations

from collections.abc import Container

from duragent.agents.access_spec import AccessSpec, GroupAccess, SenderDisposition
from duragent.core.caller import Caller, ChatRef, Role

__all__ = [
    "DM_CHAT_TYPES",
    "GROUP_CHAT_TYPES",
    "access_of",
    "caller_for",
    "chat_allowed",
    "is_owner",
    "matches_pattern",
    "role_of",
    "sender_disposition",
]

GROUP_CHAT_TYPES = frozenset({"group", "supergroup", "channel"})
DM_CHAT_TYPES = frozenset({"dm", "private"})
_DEFAULT = AccessSpec()


def access_of(access: AccessSpec | None) -> AccessSpec:
    """The rules in force: no access block means the defaults (groups answer mentions)."""
    return _DEFAULT if access is None else access


def matches_pattern(pattern: str, value: str) -> bool:
    """``pattern`` equals ``value``, or ends with ``*`` and the rest is a prefix of it."""
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    return pattern == value


def is_owner(access: AccessSpec | None, gateway: str, sender_id: str | None) -> bool:
    """Whether ``sender_id`` is one of the agent's owners on ``gateway``."""
    if sender_id is None or access is None:
        return False
    return sender_id in access.owner_ids(gateway)


def sender_disposition(groups: GroupAccess, sender_id: str) -> SenderDisposition:
    """Exact override → longest matching wildcard override → ``sender_default``."""
    overrides = groups.sender_overrides
    exact = overrides.get(sender_id)
    if exact is not None:
        return exact
    wildcards = [
        (len(pattern), disposition)
        for pattern, disposition in overrides.items()
        if pattern.endswith("*") and matches_pattern(pattern, sender_id)
    ]
    return max(wildcards, key=lambda w: w[0])[1] if wildcards else groups.sender_default


def chat_allowed(
    access: AccessSpec | None,
    *,
    gateway: str,
    chat_type: str,
    chat_id: str,
    sender_id: str,
    paired: Container[str] = (),
) -> bool:
    """Whether the chat gate lets the message in.

    Direct messages by ``dm.policy`` (``pairing``: the allowlist and the ``paired`` senders);
    groups and channels by ``groups.policy`` with an allowlist of ``"<gateway>:<chat_id>"``;
    a chat type the kit does not know is let through (as the reference, for forward
    compatibility). An owner is always let in.
    """
    access = access_of(access)
    if is_owner(access, gateway, sender_id):
        return True
    kind = chat_type.lower()
    if kind in DM_CHAT_TYPES:
        dm = access.dm
        if dm.policy in ("allowlist", "pairing"):
            listed = any(matches_pattern(p, sender_id) for p in dm.allowlist)
            return listed or (dm.policy == "pairing" and sender_id in paired)
        return dm.policy == "open"
    if kind in GROUP_CHAT_TYPES:
        groups = access.groups
        if groups.policy == "allowlist":
            key = f"{gateway}:{chat_id}"
            return any(matches_pattern(p, key) for p in groups.allowlist)
        return groups.policy == "open"
    return True


def role_of(
    access: AccessSpec | None,
    *,
    gateway: str,
    chat_type: str | None,
    chat_id: str,
    sender_id: str,
    paired: Container[str] = (),
) -> Role:
    """Owner, blocked (a group's ``block`` rule), member (let in) or stranger (refused)."""
    access = access_of(access)
    if is_owner(access, gateway, sender_id):
        return "owner"
    kind = (chat_type or "").lower()
    if kind in GROUP_CHAT_TYPES and sender_disposition(access.groups, sender_id) == "block":
        return "blocked"
    allowed = chat_allowed(
        access,
        gateway=gateway,
        chat_type=kind,
        chat_id=chat_id,
        sender_id=sender_id,
        paired=paired,
    )
    return "member" if allowed else "stranger"


def caller_for(
    access: AccessSpec | None,
    *,
    gateway: str | None,
    chat_type: str | None,
    chat_id: str | None,
    sender_id: str | None,
    paired: Container[str] = (),
) -> Caller:
    """Who a turn in this session acts for (``core.caller``).

    No gateway: the session is the operator's (HTTP API, CLI, console). A chat with no sender
    (a scheduled task, a notice): a member's reach. Otherwise the sender's role, with one
    cap: the owner's authority (and ``tool_scope: agent``) holds in a direct message only. In
    a group (or a chat whose type is not known) other people's words shape the turn: their
    messages are batched or steered into it and their chatter is quoted in it, so its tools
    act for a member whoever wrote first. ``paired``: the DM senders an owner paired.
    """
    if gateway is None or chat_id is None:
        return Caller(role="owner", agent_wide=True)
    rules = access_of(access)
    chat = ChatRef(gateway, chat_id, chat_type)
    if sender_id is None:
        return Caller(role="member", chat=chat)
    role = role_of(
        rules,
        gateway=gateway,
        chat_type=chat_type,
        chat_id=chat_id,
        sender_id=sender_id,
        paired=paired,
    )
    in_dm = (chat_type or "").lower() in DM_CHAT_TYPES
    if role == "owner" and not in_dm:
        role = "member"
    return Caller(
        role=role,
        chat=chat,
        sender_id=sender_id,
        agent_wide=role == "owner" and rules.tool_scope == "agent",
    )
