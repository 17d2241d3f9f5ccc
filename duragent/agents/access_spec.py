"""``spec.access``: who may talk to an agent, with what authority, and how much one chat may ask.

The reference's fields (``dm``, ``groups``) plus what a bot serving many people needs
(``specs/202612050000.many-people-one-bot.md``):

- ``owners``: per platform (a gateway's name: ``telegram``, ``discord`` or an external
  gateway's), the sender ids that act with the owner's authority: they answer any approval
  (and alone "allow always" or one nobody asked for), are never blocked, and with
  ``tool_scope: agent`` their tools reach every chat of the agent. ``admins`` is read as a
  synonym. Everyone else a chat lets in is a member; a sender the gate refuses is a stranger.
- ``dm.policy: pairing``: an unknown direct-message sender gets a one-time code an owner
  approves (``/pair <code>`` in a chat with the bot, or ``duragent pairing approve``).
- ``tool_scope``: ``chat`` (default) keeps the ``session``, ``schedule``, ``memory`` and
  ``background_process`` tools to the chat they are called from; ``agent`` lets an owner's
  turn reach every chat of the agent.
- ``quotas``: what one chat (or sender) may make the bot do, refused with a message naming
  the limit and the field that raises it.

No access block means the defaults below: direct messages open, groups answered when the bot
is mentioned, replied to or given a command (``groups.activation: mention``), tools scoped to
the chat, default quotas.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, field_validator, model_validator

from duragent.config.section import Section as SpecModel

__all__ = [
    "AccessPolicy",
    "AccessSpec",
    "ContextBufferSpec",
    "DebounceSpec",
    "DmAccess",
    "DmPolicy",
    "GroupAccess",
    "QueueSpec",
    "QuotaSpec",
    "SenderDisposition",
    "ToolScope",
]

AccessPolicy = Literal["open", "disabled", "allowlist"]
DmPolicy = Literal["open", "disabled", "allowlist", "pairing"]
SenderDisposition = Literal["allow", "passive", "silent", "block"]
ToolScope = Literal["chat", "agent"]


def _ids_as_text(value: object) -> object:
    """Ids as text: Telegram and Discord ids are numbers, and YAML reads ``12345`` as one."""
    if isinstance(value, list):
        return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
    return value


class DmAccess(SpecModel):
    """Who may talk to the agent in direct messages."""

    policy: DmPolicy = Field(
        default="open",
        description="open, disabled, allowlist (only the ids in allowlist), or pairing (an "
        "unknown sender gets a one-time code an owner approves; allowlisted ids need none).",
    )
    allowlist: list[str] = []

    @field_validator("allowlist", mode="before")
    @classmethod
    def _text_ids(cls, value: object) -> object:
        return _ids_as_text(value)


class ContextBufferSpec(SpecModel):
    """What the agent remembers of group chatter it was not mentioned in."""

    mode: Literal["silent", "passive"] = "silent"
    max_messages: int = Field(default=100, gt=0)
    max_age_hours: int = Field(default=24, gt=0)


class DebounceSpec(SpecModel):
    """Merge a sender's rapid messages into one turn."""

    enabled: bool = True
    window_ms: int = Field(default=1500, ge=0)


class QueueSpec(SpecModel):
    """What happens to messages that arrive while the agent is busy."""

    mode: Literal["batch", "sequential", "drop"] = "batch"
    max_pending: int = Field(default=10, gt=0)
    overflow: Literal["drop_old", "drop_new", "reject"] = "drop_old"
    reject_message: str | None = None
    debounce: DebounceSpec = DebounceSpec()
    approval_wait_seconds: int = Field(
        default=120,
        ge=0,
        description="In a group, how long someone else's message waits for a pending "
        "approval's requester to decide before it cancels the approval (0: at once)",
    )


class GroupAccess(SpecModel):
    """Which groups the agent serves and how it treats each sender there."""

    policy: AccessPolicy = "open"
    allowlist: list[str] = []
    sender_default: SenderDisposition = "allow"
    sender_overrides: dict[str, SenderDisposition] = {}
    activation: Literal["mention", "always"] = Field(
        default="mention",
        description="mention: answer a group message only when it mentions the bot, replies "
        "to it or is a command; always: answer every message.",
    )
    context_buffer: ContextBufferSpec = ContextBufferSpec()
    queue: QueueSpec = QueueSpec()


class QuotaSpec(SpecModel):
    """What one chat or sender may make the bot do (0 turns a limit off where noted)."""

    schedules_per_chat: int = Field(
        default=20, ge=0, description="Active schedules one chat may have made (0: none)."
    )
    min_schedule_interval_seconds: int = Field(
        default=60,
        ge=1,
        description="Shortest interval between two runs of a schedule made from a chat.",
    )
    messages_per_sender_per_minute: int = Field(
        default=60,
        ge=0,
        description="Messages one sender (owners excepted) may send in a minute (0: no limit).",
    )
    tokens_per_chat_per_day: int = Field(
        default=1_000_000,
        ge=0,
        description="Model tokens (prompt + reply) one chat may use per UTC day (0: no limit).",
    )
    background_processes_per_chat: int = Field(
        default=3, ge=0, description="Background processes one chat may have running."
    )


class AccessSpec(SpecModel):
    """``spec.access``: see the module docstring (no block = the defaults)."""

    owners: dict[str, list[str]] = Field(
        default={},
        validation_alias=AliasChoices("owners", "admins"),
        description="Per gateway name (telegram, discord, an external gateway's name): the "
        "sender ids with the owner's authority. Alias: admins.",
    )
    dm: DmAccess = DmAccess()
    groups: GroupAccess = GroupAccess()
    tool_scope: ToolScope = Field(
        default="chat",
        description="chat: the session, schedule, memory and background_process tools see "
        "only the current chat; agent: an owner's turn reaches every chat of the agent.",
    )
    quotas: QuotaSpec = QuotaSpec()

    @field_validator("owners", mode="before")
    @classmethod
    def _text_owner_ids(cls, value: object) -> object:
        if isinstance(value, dict):
            return {str(k): _ids_as_text(v) for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _owner_ids_are_exact(self) -> AccessSpec:
        for gateway, ids in self.owners.items():
            for sender in ids:
                if not str(sender).strip() or str(sender).endswith("*"):
                    raise ValueError(
                        f"owners.{gateway}: {sender!r} is not a sender id; owners are exact "
                        "ids (no wildcards: an owner's authority is never given by a pattern)"
                    )
        return self

    def owner_ids(self, gateway: str) -> frozenset[str]:
        """The owners' sender ids on ``gateway`` (ids written as numbers are read as text)."""
        return frozenset(str(i).strip() for i in self.owners.get(gateway, ()))
