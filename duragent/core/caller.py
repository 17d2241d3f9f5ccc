"""Who a turn acts for: the role of the person (or nobody) behind it, and the chat it is in.

Plain data, made once per turn by the context factory from the agent's ``spec.access`` and the
session's chat (``agents.roles``), and handed to every tool in its ``ToolContext``. A tool
that reaches beyond one chat (sessions, schedules, memory, processes) asks ``reaches_all``;
anything else sees only ``chat``. ``OPERATOR`` is the holder of the HTTP API token, the CLI
and the console: the owner, with the whole agent in reach.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["OPERATOR", "Caller", "ChatRef", "Role"]

Role = Literal["owner", "member", "stranger", "blocked"]
"""``owner``: named in ``spec.access.owners`` (or the operator); ``member``: let in by the
chat's access rules; ``stranger``: a sender the rules do not let in (unpaired, not listed);
``blocked``: ``block`` in the group's sender rules."""


@dataclass(frozen=True, slots=True)
class ChatRef:
    """A chat on a platform: the gateway's name and the platform's chat id.

    The one chat reference of every layer: a turn's caller is in one, and the front ends
    (``frontkit``, re-exported there) send to one. ``kind``: the chat's type as the platform
    said (``private``, ``group``…; None: not known); not part of the chat's identity.
    """

    gateway: str
    chat_id: str
    kind: str | None = field(default=None, compare=False)

    @property
    def target(self) -> str:
        """The chat as a delivery event names it (``telegram:12345``)."""
        return f"{self.gateway}:{self.chat_id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Caller:
    """Who a turn acts for (see module docstring).

    ``sender_id`` is None when nobody sent the message that started the turn (a scheduled
    task, a background job's notice, a hook): such a turn has a member's reach, never an
    owner's. ``agent_wide``: the agent opted into ``tool_scope: agent`` and this is an owner.
    """

    role: Role
    chat: ChatRef | None = None
    sender_id: str | None = None
    agent_wide: bool = False

    @property
    def is_owner(self) -> bool:
        """Acts with the owner's authority."""
        return self.role == "owner"

    @property
    def reaches_all(self) -> bool:
        """Its tools may see and change every chat of the agent, not only its own."""
        return self.chat is None or (self.is_owner and self.agent_wide)

    def same_chat(self, chat: ChatRef | None) -> bool:
        """Whether ``chat`` is this caller's own chat (a chat-less thing is nobody's)."""
        return chat is not None and chat == self.chat

    def may_reach(self, chat: ChatRef | None) -> bool:
        """Whether a tool acting for this caller may see or change what belongs to ``chat``."""
        return self.reaches_all or self.same_chat(chat)


OPERATOR = Caller(role="owner", agent_wide=True)
