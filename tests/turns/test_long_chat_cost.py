"""A turn in a long chat costs about what a turn in a short one does, through both providers.

Ratios within one run, not timed assertions: two sessions of the same agent, one with 10
messages and one with 1,000 (recorded straight into the session, as months of chat leave
them), take turns in alternation against the scripted model over HTTP, through the real turn
runner, session store and SDK-based provider. What the scripted server spends answering
(``ScriptedLLMServer.served``: receiving and parsing a history of 100 KB grows with the chat
whatever the client does) is taken out turn by turn; what is left is duragent's overhead.

When a turn paid the SDK's per-message transform the ratio was ~100× (~0.5 ms a message);
``bench/http_api.py`` (f) holds the 1.2× target on a quiet machine, so the bound here only has
to catch a cost per message coming back (1 µs a message is already +1 ms, a third of a
turn), with room for a machine busy with other work: measured 0.8–1.55× on medians with the
load average at 6, so the least of 25 turns per size is compared, against 2×.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from duragent.testing.script import Reply
from tests.turns.turn_fixtures import Harness, harness

_ROUNDS = 25
_MAX_RATIO = 2.0
_QUESTION = "How do I rotate a log file every day and keep a week of them? (request {i})"
_ANSWER = "Use logrotate: daily, rotate 7, compress."


async def _seed(h: Harness, sid: str, messages: int) -> None:
    """``messages`` plain messages of history, user and assistant in turn (no model call)."""
    session = h.registry.handle(sid)
    for i in range(messages // 2):
        await session.add_user_message(_QUESTION.format(i=i))
        await session.add_assistant_response(_ANSWER)


async def _overhead(h: Harness, sid: str, i: int) -> float:
    """One turn's seconds minus what the model server spent on it."""
    _, served_before = h.server.served
    started = time.perf_counter()
    result = await h.runner.run(sid, _QUESTION.format(i=i))
    took = time.perf_counter() - started
    _, served_after = h.server.served
    assert result.status == "complete", result
    return took - (served_after - served_before)


_EVERYTHING_SENT = "{max_history_tokens: 0, summaries: {enabled: false}}"
"""No history cap and no summaries: every one of the 1,000 messages goes to the model."""


@pytest.mark.parametrize("provider", ["fake", "anthropic"])
@pytest.mark.parametrize("context", ["defaults", "everything sent"])
async def test_a_turn_after_1000_messages_costs_about_what_one_after_10_does(
    tmp_path: Path, provider: str, context: str
) -> None:
    """With the defaults the history is capped and summarised (the summaries tier checks the
    whole history before every turn); with everything sent, every message is fitted,
    serialised and sent on every call."""
    settings: dict[str, Any] = {"context": _EVERYTHING_SENT} if context == "everything sent" else {}
    async with harness(
        tmp_path,
        provider=provider,
        max_input_tokens=400_000,
        responder=lambda request: Reply(text=_ANSWER),
        **settings,
    ) as h:
        sessions = {size: await h.runner.start_session("bot") for size in (10, 1000)}
        for size, sid in sessions.items():
            await _seed(h, sid, size - 2)  # the measured turn adds the last two
            for i in range(3):  # warm: the session's caches and the connection
                await h.runner.run(sid, _QUESTION.format(i=-1 - i))
        overheads: dict[int, list[float]] = {size: [] for size in sessions}
        for r in range(_ROUNDS):
            for size, sid in sessions.items():
                overheads[size].append(await _overhead(h, sid, r))
    short, long = (min(overheads[size]) for size in (10, 1000))  # the least disturbed
    assert long <= _MAX_RATIO * short, (long, short)
