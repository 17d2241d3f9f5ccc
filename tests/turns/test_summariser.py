"""The extractive summary (no model): what it keeps when the messages do not fit."""

from __future__ import annotations

import pytest

from duragent.context.tokens import counter_for_model
from duragent.core.messages import Message
from duragent.turns.summariser import extractive_summary


@pytest.mark.parametrize("previous", [None, "## Goal\n- count the sheep (from round 1)"])
def test_a_cut_extractive_summary_keeps_how_the_conversation_began_and_its_newest_lines(
    previous: str | None,
) -> None:
    """Cut to its length, the first round kept only the newest lines: the opening was lost.

    Summarising more at once (a summary now leaves the history well below the threshold)
    made that the common case at a 4K window, where the summary has ~400 tokens.
    """
    counter = counter_for_model("gpt-4o")
    filler = " ".join(f"word{k}" for k in range(60))
    messages: list[Message] = []
    for n in range(1, 13):
        messages += [Message.user(f"message number {n}: {filler}"), Message.assistant("ok")]
    text = extractive_summary(previous, messages, counter, 300)
    assert counter.count_text(text) <= 300
    assert "message number 12" in text
    assert ("message number 1:" in text) if previous is None else ("count the sheep" in text)
