"""What goes into and comes out of a provider call, independent of any wire format."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from duragent.core.messages import Message, ToolCall, ToolDefinition, Usage
from duragent.llm.limits import OutputLimits

__all__ = [
    "ChatRequest",
    "ChatResponse",
    "ResponseDone",
    "StreamEvent",
    "StreamProgress",
    "TextDelta",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """One call to a chat model: the already-budgeted messages and the tools on offer."""

    messages: Sequence[Message]
    tools: Sequence[ToolDefinition] = ()
    max_output_tokens: int | None = None
    temperature: float | None = None
    limits: OutputLimits = field(default_factory=OutputLimits)
    """What the answer may be (size, arguments); enforced while the stream is read."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatResponse:
    """The model's complete answer: text, any tool calls, and what it cost."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None

    def to_message(self) -> Message:
        """The assistant message to append to the conversation."""
        return Message.assistant(
            self.content if (self.content or not self.tool_calls) else None, self.tool_calls
        )


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of reply text as it streams in."""

    text: str


@dataclass(frozen=True, slots=True)
class StreamProgress:
    """Data arrived that is not reply text (tool-call arguments, metadata): the stream lives.

    Only the idle timeout needs it (``ResilientProvider`` consumes it): a long tool call
    streams for minutes without a word of text, and must not be taken for a stalled model.
    """


@dataclass(frozen=True, slots=True)
class ResponseDone:
    """The stream finished; carries the assembled response (text, tool calls, usage)."""

    response: ChatResponse


StreamEvent = TextDelta | StreamProgress | ResponseDone
