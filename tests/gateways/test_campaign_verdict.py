"""The campaigns' plan: a chat's outstanding messages, counted without walking its history."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from tests.gateways.campaign_verdict import IN_FLIGHT, Chat, Message


def _chat(n: int) -> Chat:
    return Chat(0, 7, False, [Message(7, i, f"t{i}") for i in range(n)])


def _naive(chat: Chat) -> int:
    return sum(
        1 for m in chat.messages[: chat.next] if m.answered_at is None and m.undelivered is None
    )


def test_outstanding_counts_sent_messages_neither_answered_nor_lost_in_any_order() -> None:
    rng = random.Random(5)
    chat = _chat(300)
    while chat.next < len(chat.messages) or _naive(chat):
        if chat.next < len(chat.messages) and rng.random() < 0.6:
            chat.next += 1
        open_ = [m for m in chat.messages[: chat.next] if m.answered_at is None]
        if open_ and rng.random() < 0.5:
            m = rng.choice(open_)  # out of order too
            if rng.random() < 0.1:
                m.undelivered = IN_FLIGHT
            else:
                m.answered_at = 1.0
        assert chat.outstanding() == _naive(chat)


def test_asking_every_tick_costs_what_is_open_not_the_whole_history() -> None:
    """A ratio in one run: 20,000 settled messages and one open, against walking them all."""
    chat = _chat(20_001)
    chat.next = len(chat.messages)
    for m in chat.messages[:-1]:
        m.answered_at = 1.0
    chat.outstanding()  # the cursor catches up once

    def best(count: Callable[[Chat], int]) -> float:
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(20):
                count(chat)
            runs.append(time.perf_counter() - start)
        return min(runs)

    assert best(Chat.outstanding) * 50 < best(_naive)
