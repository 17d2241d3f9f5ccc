"""The month's scripted model: a turn that takes a member's mention with an attack names both."""

from __future__ import annotations

from typing import Any

from bench.strangers.model import StrangersModel
from duragent.testing.script import RecordedRequest


def test_an_attack_answered_with_a_mention_in_the_same_turn_names_the_mention_too() -> None:
    """The runner joins the texts of the messages a turn answers: a member's mention and a
    hostile member's attack queued together get one answer, which must name both."""
    model = StrangersModel(now_ms=lambda: 0, prose="words " * 50)
    asked = (
        "User710023: @bot what do you make of it? #q59n60#\nUser730004: @bot ATTACK pin #h302# []"
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": asked}]
    request = RecordedRequest(
        index=0, method="POST", path="/v1/chat/completions", headers={},
        body={"messages": messages}, raw=b"", wire="openai",
    )  # fmt: skip
    reply = model.answer(request, "large", messages, [asked])
    assert reply.text is not None
    assert "#h302#" in reply.text
    assert "#q59n60#" in reply.text
