"""The session snapshot (``state.yaml``) and the message ↔ dict mapping it uses.

A snapshot holds the *checkpointed* messages and the session's metadata; recovery loads it
and replays the events after ``checkpoint_seq``. Messages are stored in the OpenAI chat shape
(role, content, tool_calls with function name/arguments, tool_call_id), as the reference's
``state.json`` does, so either file can be read.

Schema versions: "1" and "2" are the reference's ``state.json`` (v1: replay from
``last_event_seq``, v2: from ``checkpoint_seq``); 3 is ours (``state.yaml``, same fields plus
inbound de-duplication and delivery bookkeeping, and the group context buffer: the
reference keeps it in memory only and loses it on restart). A snapshot written before the
buffer existed reads as an empty buffer. The summaries tier added ``summary``, ``pins`` and
``task`` (optional keys, absent in older files: none of them); a user message's
``attachments`` (issue 36) likewise, written only when it has some.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from duragent.core.attachments import attachments_of
from duragent.core.messages import Message, Role, ToolCall

__all__ = [
    "DEFAULT_SILENT_BUFFER_CAP",
    "SNAPSHOT_SCHEMA_VERSION",
    "BufferedMessage",
    "SessionSnapshot",
    "SessionStatus",
    "message_from_dict",
    "message_to_dict",
]

SNAPSHOT_SCHEMA_VERSION = 3
DEFAULT_SILENT_BUFFER_CAP = 200
"""Group chatter a session keeps when its agent sets no ``context_buffer.max_messages``."""


class SessionStatus(enum.StrEnum):
    """Lifecycle status of a session (reference names)."""

    ACTIVE = "active"
    PAUSED = "paused"
    RUNNING = "running"
    COMPLETED = "completed"


def message_to_dict(message: Message) -> dict[str, Any]:
    """A message in the OpenAI chat shape, omitting empty fields."""
    out: dict[str, Any] = {"role": message.role.value}
    if message.content is not None:
        out["content"] = message.content
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.attachments:  # ours (issue 36): written only when there are some
        out["attachments"] = [a.to_data() for a in message.attachments]
    return out


def message_from_dict(data: Mapping[str, Any]) -> Message:
    """Inverse of ``message_to_dict``; raises ``ValueError`` on an unknown role."""
    role = Role(str(data.get("role")))
    calls = tuple(
        ToolCall(
            id=str(c.get("id", "")),
            name=str((c.get("function") or {}).get("name", "")),
            arguments=str((c.get("function") or {}).get("arguments") or "{}"),
        )
        for c in (data.get("tool_calls") or [])
    )
    content = data.get("content")
    carried = data.get("attachments")
    return Message(
        role=role,
        content=None if content is None else str(content),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        attachments=() if carried is None else attachments_of(carried),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BufferedMessage:
    """One ``silent_message`` held in the session's context buffer (never model history)."""

    seq: int
    timestamp: str
    content: str
    """As the model will read it: ``<sender label>: <text>``."""
    platform_message_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The mapping ``state.yaml``'s ``silent_buffer`` holds."""
        out: dict[str, Any] = {
            "seq": self.seq,
            "timestamp": self.timestamp,
            "content": self.content,
        }
        if self.platform_message_id is not None:
            out["platform_message_id"] = self.platform_message_id
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BufferedMessage:
        """Inverse of ``to_dict``; raises ``ValueError`` on a malformed entry."""
        if not isinstance(data, Mapping):
            raise ValueError("silent_buffer entries must be mappings")
        pid = data.get("platform_message_id")
        return cls(
            seq=int(data.get("seq") or 0),
            timestamp=str(data.get("timestamp") or ""),
            content=str(data.get("content") or ""),
            platform_message_id=None if pid is None else str(pid),
        )


@dataclass(slots=True, kw_only=True)
class SessionSnapshot:
    """Everything ``state.yaml`` holds."""

    session_id: str
    agent: str
    status: SessionStatus = SessionStatus.ACTIVE
    created_at: str
    updated_at: str
    snapshot_at: str = ""
    last_event_seq: int = 0
    checkpoint_seq: int = 0
    conversation: list[Message] = field(default_factory=list)
    conversation_seqs: list[int] = field(default_factory=list)
    """The seq of the event each conversation message came from (parallel to
    ``conversation``; written as each message's ``seq`` key). Empty for a snapshot written
    before it existed: its messages then count as coming from ``checkpoint_seq``."""
    on_disconnect: str = "pause"
    gateway: str | None = None
    gateway_chat_id: str | None = None
    gateway_chat_type: str | None = None
    """The chat's type as its platform said (``dm``, ``group``…): recovery treats a group's
    messages by the group's rules even where a chat id does not tell."""
    pending_approval: dict[str, Any] | None = None
    actor_message_limit: int = 1000
    compaction: str | None = None
    """The session's rollover mode; named after the ``state.yaml`` key (the reference's)."""
    recent_platform_ids: list[str] = field(default_factory=list)
    recent_platform_seqs: list[int] = field(default_factory=list)
    """Seq of the user message that carried each id (parallel to ``recent_platform_ids``)."""
    last_final_reply_seq: int = 0
    last_delivered_seq: int = 0
    delivering_seq: int = 0
    delivered_parts: int = 0
    """The reply after ``last_delivered_seq`` whose first ``delivered_parts`` parts reached
    its chat (a ``delivery`` event with ``parts``); 0: none is part-way. Written only then."""
    last_user_seq: int = 0
    """The newest user message owed an answer (a passive one is not; a chat's recovery compares
    it with ``last_answered_seq``)."""
    last_settled_seq: int = 0
    """The newest event that ends a turn for the person: a final reply, a recorded failure,
    a request for approval."""
    last_answered_seq: int = 0
    """The newest user message a turn's end answered: ``last_settled_seq``, except that a
    reply of a ``sequential`` chat queue answers only up to its own message (its event's
    ``answers_seq``). A user message after it has not been answered yet."""
    last_decided_seq: int = 0
    """The newest decision on an approval. Later than ``last_settled_seq``, the turn it let
    go on has not ended yet (a crash stopped it): a chat's recovery finishes it."""
    last_failed_seq: int = 0
    """The newest recorded failure (an ``error`` event). Once delivered (``last_delivered_seq``
    at or past it), a redelivered copy of the message it answered is not run again."""
    silent_buffer_cap: int = DEFAULT_SILENT_BUFFER_CAP
    """The context buffer's bound (the agent's ``context_buffer.max_messages`` at creation)."""
    silent_buffer: list[BufferedMessage] = field(default_factory=list)
    """The context buffer, oldest first (events after the snapshot are replayed onto it)."""
    summary: dict[str, Any] | None = None
    """The current summary (round, summary, through_seq, seq): what replaced the oldest
    messages of the window. Recovery uses it as is and never asks a model again."""
    pins: list[dict[str, Any]] = field(default_factory=list)
    """Pinned sections (pin_id, kind, text, source), oldest first: never summarised."""
    task: str | None = None
    """The session's first user message (its original task, pinned unless turned off)."""
    tokens_day: str = ""
    """The UTC day (``YYYY-MM-DD``) ``tokens_today`` counts; empty: no model call yet."""
    tokens_today: int = 0
    """Model tokens (prompt + completion, summaries included) the session's calls used on
    ``tokens_day``: ``spec.access.quotas.tokens_per_chat_per_day`` (``turns.token_quota``)."""
    schema_version: int = SNAPSHOT_SCHEMA_VERSION

    @property
    def replay_from_seq(self) -> int:
        """Events with a seq above this are replayed on top of the snapshot."""
        if self.schema_version == 1:
            return self.last_event_seq
        return self.checkpoint_seq

    def to_dict(self) -> dict[str, Any]:
        """The mapping written to state.yaml."""
        return {**self.header_dict(), "conversation": self.conversation_dicts()}

    def conversation_dicts(self) -> list[dict[str, Any]]:
        """The conversation as written: each message with the seq it came from, when known."""
        return [self.message_dict(i) for i in range(len(self.conversation))]

    def message_dict(self, index: int) -> dict[str, Any]:
        """Message ``index`` as written (``message_to_dict`` plus its origin ``seq``)."""
        out = message_to_dict(self.conversation[index])
        if len(self.conversation_seqs) == len(self.conversation):
            out["seq"] = self.conversation_seqs[index]
        return out

    def header_dict(self) -> dict[str, Any]:
        """Everything but the conversation (which state.yaml writes last)."""
        config: dict[str, Any] = {
            "on_disconnect": self.on_disconnect,
            "actor_message_limit": self.actor_message_limit,
            "silent_buffer_cap": self.silent_buffer_cap,
        }
        for key in (
            "gateway",
            "gateway_chat_id",
            "gateway_chat_type",
            "pending_approval",
            "compaction",
        ):
            value = getattr(self, key)
            if value is not None:
                config[key] = value
        return {
            "schema_version": self.schema_version,
            "session_id": self.session_id,
            "agent": self.agent,
            "status": self.status.value,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "snapshot_at": self.snapshot_at,
            "last_event_seq": self.last_event_seq,
            "checkpoint_seq": self.checkpoint_seq,
            "last_final_reply_seq": self.last_final_reply_seq,
            "last_delivered_seq": self.last_delivered_seq,
            "last_user_seq": self.last_user_seq,
            "last_settled_seq": self.last_settled_seq,
            "last_answered_seq": self.last_answered_seq,
            "last_decided_seq": self.last_decided_seq,
            "last_failed_seq": self.last_failed_seq,
            "recent_platform_ids": list(self.recent_platform_ids),
            "recent_platform_seqs": list(self.recent_platform_seqs),
            "silent_buffer": [m.to_dict() for m in self.silent_buffer],
            **(
                {"delivering": {"seq": self.delivering_seq, "parts": self.delivered_parts}}
                if self.delivering_seq
                else {}
            ),
            **({"summary": dict(self.summary)} if self.summary else {}),
            **({"pins": [dict(p) for p in self.pins]} if self.pins else {}),
            **({"task": self.task} if self.task is not None else {}),
            **(
                {"tokens_today": {"day": self.tokens_day, "tokens": self.tokens_today}}
                if self.tokens_day
                else {}
            ),
            "config": config,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionSnapshot:
        """Parse state.yaml or the reference's state.json; raises ValueError when invalid."""
        version = int(str(data.get("schema_version", "1")))
        if version not in (1, 2, SNAPSHOT_SCHEMA_VERSION):
            raise ValueError(f"unsupported snapshot schema_version {version}")
        config = data.get("config") or {}
        if not isinstance(config, Mapping):
            raise ValueError("config must be a mapping")
        for required in ("session_id", "agent", "created_at"):
            if not data.get(required):
                raise ValueError(f"snapshot has no {required}")
        conversation = data.get("conversation") or []
        if not isinstance(conversation, list):
            raise ValueError("conversation must be a list")
        buffered = data.get("silent_buffer") or []
        if not isinstance(buffered, list):
            raise ValueError("silent_buffer must be a list")
        created = str(data["created_at"])
        summary = data.get("summary")
        if summary is not None and not isinstance(summary, Mapping):
            raise ValueError("summary must be a mapping")
        pins = data.get("pins") or []
        if not isinstance(pins, list) or not all(isinstance(p, Mapping) for p in pins):
            raise ValueError("pins must be a list of mappings")
        task = data.get("task")
        tokens = data.get("tokens_today") or {}
        if not isinstance(tokens, Mapping):
            raise ValueError("tokens_today must be a mapping (day, tokens)")
        delivering = data.get("delivering") or {}
        if not isinstance(delivering, Mapping):
            raise ValueError("delivering must be a mapping (seq, parts)")
        return cls(
            schema_version=version,
            session_id=str(data["session_id"]),
            agent=str(data["agent"]),
            status=SessionStatus(str(data.get("status", "active"))),
            created_at=created,
            updated_at=str(data.get("updated_at") or data.get("snapshot_at") or created),
            snapshot_at=str(data.get("snapshot_at") or ""),
            last_event_seq=int(data.get("last_event_seq") or 0),
            checkpoint_seq=int(data.get("checkpoint_seq") or 0),
            conversation=[message_from_dict(m) for m in conversation],
            conversation_seqs=_origin_seqs(conversation),
            on_disconnect=str(config.get("on_disconnect") or "pause"),
            gateway=config.get("gateway"),
            gateway_chat_id=config.get("gateway_chat_id"),
            gateway_chat_type=config.get("gateway_chat_type"),
            pending_approval=config.get("pending_approval"),
            actor_message_limit=int(config.get("actor_message_limit") or 1000),
            compaction=config.get("compaction"),
            recent_platform_ids=[str(x) for x in (data.get("recent_platform_ids") or [])],
            recent_platform_seqs=[int(x) for x in (data.get("recent_platform_seqs") or [])],
            last_final_reply_seq=int(data.get("last_final_reply_seq") or 0),
            last_delivered_seq=int(data.get("last_delivered_seq") or 0),
            delivering_seq=int(delivering.get("seq") or 0),
            delivered_parts=int(delivering.get("parts") or 0),
            last_user_seq=int(data.get("last_user_seq") or 0),
            last_settled_seq=int(data.get("last_settled_seq") or 0),
            last_answered_seq=int(
                data.get("last_answered_seq") or data.get("last_settled_seq") or 0
            ),
            last_decided_seq=int(data.get("last_decided_seq") or 0),
            last_failed_seq=int(data.get("last_failed_seq") or 0),
            silent_buffer_cap=int(config.get("silent_buffer_cap") or DEFAULT_SILENT_BUFFER_CAP),
            silent_buffer=[BufferedMessage.from_dict(m) for m in buffered],
            summary=dict(summary) if summary else None,
            pins=[dict(p) for p in pins],
            task=None if task is None else str(task),
            tokens_day=str(tokens.get("day") or ""),
            tokens_today=int(tokens.get("tokens") or 0),
        )


def _origin_seqs(conversation: list[Any]) -> list[int]:
    """Each message's ``seq`` key, or [] unless every message has one (an older snapshot)."""
    seqs = [m.get("seq") if isinstance(m, Mapping) else None for m in conversation]
    valid = [s for s in seqs if isinstance(s, int) and not isinstance(s, bool)]
    return valid if len(valid) == len(seqs) else []
