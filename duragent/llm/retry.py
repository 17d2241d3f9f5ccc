"""Per-call timeout and bounded retries with exponential backoff, jitter and Retry-After.

Retried: timeouts, connection errors, 429 and 5xx (``LLMError.retryable``). Not retried: auth
(401/403), bad requests (400/404/422) and context-length errors, which only a different
request can fix. A stream is retried only if it failed before its first event, so text the
user has already seen is never duplicated.

A stream has two clocks: the whole call must end within ``timeout_seconds``, and the provider
must send *something* at least every ``idle_seconds`` (``server.idle_timeout_seconds``: a
model that stops mid-answer with the connection open is caught in a minute, not at the end
of the five-minute call budget). Anything counts, not only text: providers report tool-call
arguments and other non-text data as ``StreamProgress``, which is consumed here. Time the
caller spends with an item (a slow SSE client) never counts as idle; it does count against
the whole-call deadline, which is wall-clock.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from duragent.errors import LLMError, LLMRateLimitError, LLMServerError, LLMTimeoutError
from duragent.llm.base import LLMProvider
from duragent.llm.read_clock import ReadClock
from duragent.llm.types import ChatRequest, ChatResponse, StreamEvent, StreamProgress

__all__ = ["ResilientProvider", "RetryPolicy"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How many attempts, and how long to wait between them."""

    max_attempts: int = 4
    initial_delay: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 30.0
    max_retry_after: float = 120.0
    """A server's Retry-After above this is capped (a broken header must not stall a chat)."""

    def delay(self, attempt: int, error: LLMError, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        hint = getattr(error, "retry_after", None)
        if isinstance(error, LLMRateLimitError | LLMServerError) and hint is not None:
            return max(0.0, min(float(hint), self.max_retry_after))
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (attempt - 1))
        return rng.uniform(base / 2, base)  # "equal jitter": never zero, never synchronized


Sleep = Callable[[float], Awaitable[None]]


class ResilientProvider:
    """Wraps a provider with a per-call timeout and retries; same interface as the wrapped one."""

    def __init__(
        self,
        inner: LLMProvider,
        *,
        timeout_seconds: float,
        idle_seconds: float | None = None,
        policy: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.timeout_seconds = timeout_seconds
        self.idle_seconds = idle_seconds
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.on_retry: Callable[[LLMError], None] | None = None
        """Told each failure that is retried (``observability.metrics``: retries by kind)."""

    async def _backoff(self, attempt: int, error: LLMError) -> None:
        if self.on_retry is not None:
            self.on_retry(error)
        delay = self.policy.delay(attempt, error, self._rng)
        log.warning(
            "%s call failed (%s: %s); retry %d/%d in %.2fs",
            self.name,
            type(error).__name__,
            error,
            attempt,
            self.policy.max_attempts - 1,
            delay,
        )
        await self._sleep(delay)

    def _timeout_error(self) -> LLMTimeoutError:
        return LLMTimeoutError(
            f"{self.name} did not answer within {self.timeout_seconds:g}s", provider=self.name
        )

    def _idle_error(self) -> LLMTimeoutError:
        return LLMTimeoutError(
            f"Stream idle timeout: {self.name} sent nothing for {self.idle_seconds:g}s "
            "(server.idle_timeout_seconds)",
            provider=self.name,
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Call with timeout; retry retryable failures up to ``max_attempts``."""
        attempt = 0
        while True:
            attempt += 1
            try:
                try:
                    async with asyncio.timeout(self.timeout_seconds):
                        return await self.inner.complete(request)
                except TimeoutError:
                    raise self._timeout_error() from None
            except LLMError as error:
                if not error.retryable or attempt >= self.policy.max_attempts:
                    raise
                await self._backoff(attempt, error)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream with an overall deadline and an idle limit per read (module docstring).

        Only failures before the first event are retried.

        Both limits are kept by one ``ReadClock`` per attempt, not a timer per read (the
        reads of a reply are its tokens).
        """
        loop = asyncio.get_running_loop()
        attempt = 0
        while True:
            attempt += 1
            started = False
            clock = ReadClock(loop.time() + self.timeout_seconds, self.idle_seconds)
            events = self.inner.stream(request)
            try:
                while True:
                    clock.start_read()
                    try:
                        event = await anext(events)
                    except StopAsyncIteration:
                        return
                    except asyncio.CancelledError as cancelled:
                        if not clock.timed_out(cancelled):
                            raise
                        if clock.expired == "idle":
                            raise self._idle_error() from None
                        raise self._timeout_error() from None
                    finally:
                        clock.end_read()
                    if isinstance(event, StreamProgress):
                        continue  # alive, nothing to show
                    started = True
                    yield event
            except LLMError as error:
                if started or not error.retryable or attempt >= self.policy.max_attempts:
                    raise
                await self._backoff(attempt, error)
            finally:
                clock.close()
                aclose = getattr(events, "aclose", None)
                if aclose is not None:
                    await aclose()

    async def aclose(self) -> None:
        """Close the wrapped provider."""
        await self.inner.aclose()
