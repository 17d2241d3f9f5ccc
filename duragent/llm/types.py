"""What goes into and comes out of a provider call, independent of any wire format."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from duragent.core.messages import Message, ToolCall, ToolDefinition, Usage
from duragent.llm.image_size import FittedImage
from duragent.llm.limits import OutputLimits

__all__ = [
    "ChatRequest",
    "ChatResponse",
    "ImageMessage",
    "ResponseDone",
    "StreamEvent",
    "StreamProgress",
    "TextDelta",
]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ImageMessage(Message):
    """A user message sent with its images as the provider's native parts.

    Made per turn by ``turns.images`` for a model that can see (``vision.can_see``), from
    the images of a message that fitted the request; every other message, and this one
    when its images do not fit, is plain text (``context.attachments``). ``images`` are
    fitted to the provider's limits (``images.fit_image``); ``image_tokens`` is what they
    cost by the provider's formula (``image_size.image_tokens``), added to the text's count
    by ``TokenCounter.count_message`` so the budget holds. A subclass rather than a request
    field: each provider's per-message fragment cache keys on the message object, so a
    message's wire form with images and without are different objects, and a text-only
    request does no work for images at all.
    """

    images: tuple[FittedImage, ...] = field(default=(), repr=False)
    image_tokens: int = 0


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
