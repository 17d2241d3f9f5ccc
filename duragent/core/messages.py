"""Conversation messages, tool calls, tool definitions and token usage.

These are the values every layer passes around: the session keeps them, the context layer
budgets them, providers translate them to their wire formats. They are frozen so a message
can be shared between the session actor and a render without copying, and hashable by
identity so per-message token counts can be cached.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from duragent.core.attachments import Attachment

__all__ = [
    "STEERING_PREFIX",
    "Message",
    "Role",
    "ToolCall",
    "ToolDefinition",
    "Usage",
    "is_steering",
    "steering_message",
]

STEERING_PREFIX = "[steering] "
"""How a hook's steering text reaches the model: a user message with this prefix (the
reference's wording), so providers need no role of their own for it."""


class Role(enum.StrEnum):
    """Who said a message, in the OpenAI vocabulary (providers translate)."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool invocation requested by the model.

    ``arguments`` is the raw JSON text the model produced; it may be malformed, and the agentic
    loop turns a parse failure into an error result the model can correct.
    """

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a JSON object; raises ``ValueError`` when they are not one."""
        text = self.arguments.strip() or "{}"
        try:
            value = json.loads(text)
        except RecursionError:  # nested past the parser's recursion limit
            raise ValueError("tool arguments nest too deeply") from None
        if not isinstance(value, dict):
            raise ValueError(f"tool arguments must be a JSON object, got {type(value).__name__}")
        return value


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, weakref_slot=True)
class Message:
    """One message of a conversation.

    Equality is identity (``eq=False``): two messages with the same text are still different
    turns, and the token-count cache keys on the object. ``attachments``: what a person's
    message carried (photos, voice notes, files), stored beside the session by hash.
    """

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    attachments: tuple[Attachment, ...] = ()

    @classmethod
    def system(cls, content: str) -> Message:
        """A system message."""
        return cls(role=Role.SYSTEM, content=content)

    @classmethod
    def user(cls, content: str, attachments: tuple[Attachment, ...] = ()) -> Message:
        """A user message, with what it carried."""
        return cls(role=Role.USER, content=content, attachments=attachments)

    @classmethod
    def assistant(cls, content: str | None, tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        """An assistant message, possibly carrying tool calls."""
        return cls(role=Role.ASSISTANT, content=content, tool_calls=tool_calls)

    @classmethod
    def tool(cls, tool_call_id: str, content: str) -> Message:
        """The result of the tool call ``tool_call_id``."""
        return cls(role=Role.TOOL, content=content, tool_call_id=tool_call_id)

    @property
    def text(self) -> str:
        """The content, or an empty string when there is none."""
        return self.content or ""


def steering_message(content: str) -> Message:
    """The message the model reads for an ``after_tool`` hook's steering ``content``."""
    return Message.user(STEERING_PREFIX + content)


def is_steering(message: Message) -> bool:
    """Whether ``message`` is hook steering (part of a tool exchange, not a person's turn)."""
    return message.role is Role.USER and message.text.startswith(STEERING_PREFIX)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """A tool as offered to the model: name, description and JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``tools[]`` entry for this definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Tokens a provider reports for one call (or the sum of several)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    """What the call cost, when the agent's model has ``pricing``."""

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=sum(costs) if costs else None,
        )

    def to_dict(self) -> dict[str, int | float]:
        """The reference's usage object (prompt, completion, total tokens), plus the cost."""
        out: dict[str, int | float] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.cost_usd is not None:
            out["cost_usd"] = round(self.cost_usd, 8)
        return out
