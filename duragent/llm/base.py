"""The provider interface every model backend implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from duragent.llm.types import ChatRequest, ChatResponse, StreamEvent

__all__ = ["LLMProvider"]


class LLMProvider(Protocol):
    """A chat model: one complete call, or a stream of text ending with the full response.

    Implementations raise only ``duragent.errors.LLMError`` subclasses, so callers never see
    an SDK's exception types. They do not retry; ``ResilientProvider`` does.
    """

    name: str
    """Provider name as written in agent.yaml (``openai``, ``anthropic``, …)."""

    model: str
    """Model name sent to the provider."""

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Run the call and return the whole answer."""
        ...

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Yield ``TextDelta`` as text arrives, then exactly one ``ResponseDone``."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
