"""Telegram's flood limits: overall, per group, and per private chat.

Telegram lets a bot send about 30 messages a second overall, 20 a minute into one group and
about one a second into one chat; beyond that it answers 429 with a ``retry_after``. PTB's
``AIORateLimiter`` paces the first two and, on a 429, holds every send until ``retry_after``
has passed. ``ChatRateLimiter`` adds the third for private chats (a long reply split into
several messages would otherwise go out in one burst) and then hands the request to it.

A server runs for months and meets many chats: a chat's bucket is dropped once it has been
idle long enough to be full again, so the table holds only chats sent to recently.

It also caps the requests in flight (``MAX_IN_FLIGHT``). A thousand chats answered at once
would otherwise queue a thousand requests inside httpx's connection pool, whose bookkeeping
scans its whole queue on every request: the cost grows with the square of the backlog, and
the event loop spent most of a busy second there. An ``asyncio.Semaphore`` in front keeps
that queue short at O(1) a request.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from aiolimiter import AsyncLimiter
from telegram.error import RetryAfter
from telegram.ext import AIORateLimiter, BaseRateLimiter

__all__ = ["ChatRateLimiter", "RateCounts"]

JSON = bool | dict[str, Any] | list[dict[str, Any]]

MAX_IN_FLIGHT = 64
"""Bot API requests sent at once (the rest wait their turn here, not in httpx's pool)."""


@dataclass(frozen=True, slots=True)
class RateCounts:
    """Where the limiter counts Telegram's 429 answers and the attempts made after one."""

    rate_limited: Callable[[], None]
    retried: Callable[[], None]


class ChatRateLimiter(BaseRateLimiter[int]):
    """``AIORateLimiter`` plus a bucket per private chat (see module docstring)."""

    def __init__(
        self,
        *,
        overall_per_second: float,
        group_per_minute: float,
        chat_per_second: float,
        max_retries: int = 5,
        max_in_flight: int = MAX_IN_FLIGHT,
        clock: Callable[[], float] = time.monotonic,
        counts: RateCounts | None = None,
    ) -> None:
        self._inner = AIORateLimiter(
            overall_max_rate=overall_per_second,
            group_max_rate=group_per_minute,
            max_retries=max_retries,
        )
        self._in_flight = asyncio.Semaphore(max_in_flight)
        self._chat_rate = chat_per_second
        self._chats: OrderedDict[int, tuple[AsyncLimiter, float]] = OrderedDict()
        self._clock = clock
        self._counts = counts
        self._idle_after = max(2.0, 2.0 / chat_per_second)

    async def initialize(self) -> None:
        """Nothing to open."""
        await self._inner.initialize()

    async def shutdown(self) -> None:
        """Nothing to close."""
        await self._inner.shutdown()

    def _bucket(self, chat_id: int) -> AsyncLimiter:
        now = self._clock()
        found = self._chats.pop(chat_id, None)
        limiter = found[0] if found else AsyncLimiter(1, 1.0 / self._chat_rate)
        self._chats[chat_id] = (limiter, now)  # most recently used last
        while self._chats:
            oldest, (_, used) = next(iter(self._chats.items()))
            if now - used < self._idle_after:
                break
            del self._chats[oldest]
        return limiter

    @property
    def tracked_chats(self) -> int:
        """Chats with a bucket right now (bounded by the chats sent to recently)."""
        return len(self._chats)

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, JSON]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> JSON:
        """Wait for the chat's bucket (private chats), then for Telegram's other limits."""
        chat_id = data.get("chat_id")
        try:
            chat = int(chat_id) if chat_id is not None else 0
        except (TypeError, ValueError):
            chat = 0
        if chat > 0 and endpoint != "sendChatAction":
            async with self._bucket(chat):
                pass
        if self._counts is not None:
            callback = _counted(callback, self._counts)
        if endpoint == "getUpdates":  # a long poll must never wait behind sends
            return await self._inner.process_request(
                callback, args, kwargs, endpoint, data, rate_limit_args
            )
        async with self._in_flight:
            return await self._inner.process_request(
                callback, args, kwargs, endpoint, data, rate_limit_args
            )


def _counted(
    callback: Callable[..., Coroutine[Any, Any, JSON]], counts: RateCounts
) -> Callable[..., Coroutine[Any, Any, JSON]]:
    """``callback`` counting its 429s and every attempt after the first (PTB retries it)."""
    attempts = 0

    async def attempt(*args: Any, **kwargs: Any) -> JSON:
        nonlocal attempts
        attempts += 1
        if attempts > 1:
            counts.retried()
        try:
            return await callback(*args, **kwargs)
        except RetryAfter:
            counts.rate_limited()
            raise

    return attempt
