"""The per-chat bucket: a private chat's burst is paced; groups and typing are not; idle chats
are forgotten."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from duragent.gateways.telegram.limits import ChatRateLimiter


def _limiter(clock: list[float] | None = None, chat_per_second: float = 20.0) -> ChatRateLimiter:
    now = clock if clock is not None else [0.0]
    return ChatRateLimiter(
        overall_per_second=100_000,
        group_per_minute=1_000_000,
        chat_per_second=chat_per_second,
        clock=lambda: now[0],
    )


async def _send(limiter: ChatRateLimiter, chat_id: int, endpoint: str = "sendMessage") -> float:
    loop = asyncio.get_running_loop()

    async def callback(*_args: Any, **_kwargs: Any) -> bool:
        return True

    await limiter.process_request(callback, (), {}, endpoint, {"chat_id": chat_id}, None)
    return loop.time()


async def test_a_burst_into_one_private_chat_is_spread_at_the_chats_rate() -> None:
    limiter = _limiter(chat_per_second=20.0)  # one send per 50 ms
    loop = asyncio.get_running_loop()
    start = loop.time()
    times = [await _send(limiter, 42) for _ in range(5)]
    # four waits of 1/20 s after the first send: at least 0.2 s in all
    assert times[-1] - start >= 0.19


async def test_groups_and_typing_are_not_held_by_the_private_chat_bucket() -> None:
    limiter = _limiter(chat_per_second=0.5)  # a private chat would wait 2 s between sends
    loop = asyncio.get_running_loop()
    start = loop.time()
    for _ in range(3):
        await _send(limiter, -100)  # a group: Telegram's group limit applies instead
        await _send(limiter, 42, "sendChatAction")
    assert loop.time() - start < 3.0  # a private chat's bucket would take 4 s
    assert limiter.tracked_chats == 0


async def test_chats_idle_long_enough_to_be_full_again_are_forgotten() -> None:
    clock = [0.0]
    limiter = _limiter(clock)
    for chat in range(1, 51):
        await _send(limiter, chat)
    assert limiter.tracked_chats == 50
    clock[0] = 60.0
    await _send(limiter, 999)
    assert limiter.tracked_chats == 1


@pytest.mark.filterwarnings("ignore:Deprecated since version v22.2:DeprecationWarning")
async def test_a_429_and_the_retry_after_it_are_counted() -> None:
    from telegram.error import RetryAfter

    from duragent.gateways.telegram.limits import RateCounts

    counted = {"rate_limited": 0, "retried": 0}
    limiter = ChatRateLimiter(
        overall_per_second=100_000,
        group_per_minute=1_000_000,
        chat_per_second=1000.0,
        counts=RateCounts(
            rate_limited=lambda: counted.__setitem__("rate_limited", counted["rate_limited"] + 1),
            retried=lambda: counted.__setitem__("retried", counted["retried"] + 1),
        ),
    )
    calls = 0

    async def flaky(*_args: Any, **_kwargs: Any) -> bool:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RetryAfter(0)  # Telegram's 429: PTB's limiter waits, then tries again
        return True

    assert await limiter.process_request(flaky, (), {}, "sendMessage", {"chat_id": 7}, None)
    assert calls == 2
    assert counted == {"rate_limited": 1, "retried": 1}
