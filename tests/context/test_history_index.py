"""``HistoryCache.message_tokens`` is ``TokenCounter.sum_messages`` answered in O(change).

Oracle test: over random conversations whose window slides (appended at the end, dropped at
the start), a message replaced by another object in the middle, histories a cache cannot
continue (shuffled, repeated messages, another
counter), the running total equals summing the history afresh.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duragent.context.history_index import HistoryCache
from duragent.context.tokens import TokenCounter
from duragent.core.messages import Message
from tests.context.test_render_properties import COUNTERS, conversations
from tests.context.test_units import replaced, windows


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(conversation=conversations(), steps=windows, random=st.randoms(use_true_random=False))
def test_the_running_total_of_a_sliding_history_is_its_sum(
    conversation: list[Message], steps: list[tuple[int, int, str]], random: Any
) -> None:
    cache = HistoryCache()
    start, end = 0, max(1, len(conversation) // 2)
    for step, (drop, add, how) in enumerate(steps):
        start, end = min(start + drop, len(conversation)), min(end + add, len(conversation))
        start = min(start, end)
        history: list[Message] = conversation[start:end]
        if how == "shuffle" and step % 3 == 2:
            history = random.sample(history, len(history))  # not a continuation
        if how == "shuffle" and step % 3 == 1 and history:
            history = [*history, *history[: random.randint(1, len(history))]]  # repeats
        if how == "replace":
            history = replaced(history, random)
        counter = COUNTERS[step % 2] if how == "swap" else COUNTERS[0]
        shown = tuple(history) if step % 4 == 3 else history
        assert cache.message_tokens(shown, counter) == counter.sum_messages(history)


class CountingCounter(TokenCounter):
    """A TokenCounter that records which messages it was asked to count."""

    asked: list[Message]

    def count_message(self, message: Message) -> int:
        self.asked.append(message)
        return super().count_message(message)


def test_a_long_history_that_slides_is_counted_once_per_new_message() -> None:
    conversation = [Message.user(f"question {i}") for i in range(1200)]
    cache, counter = HistoryCache(), COUNTERS[1]
    counting = CountingCounter(counter.text)
    asked: list[Message] = []
    counting.asked = asked
    assert cache.message_tokens(conversation[:1000], counting) == counter.sum_messages(
        conversation[:1000]
    )
    asked.clear()
    for k in range(1, 101):
        window = conversation[k * 2 : 1000 + k * 2]
        assert cache.message_tokens(window, counting) == counter.sum_messages(window)
    assert len(asked) == 200  # the two new messages of each step, nothing else


def test_a_message_that_changes_form_is_counted_again_with_what_follows_it_only() -> None:
    conversation = [Message.user(f"question {i}") for i in range(1000)]
    cache, counter = HistoryCache(), COUNTERS[1]
    counting = CountingCounter(counter.text)
    asked: list[Message] = []
    counting.asked = asked
    cache.message_tokens(conversation, counting)
    asked.clear()
    aged = Message.user("question 990 [image: seen on turn 990]")
    history = [*conversation[:990], aged, *conversation[991:]]
    assert cache.message_tokens(history, counting) == counter.sum_messages(history)
    assert asked == history[990:]  # the changed message and the nine after it, nothing else
