"""A turn in a long chat costs about what a turn in a short one does, through both providers.

Work counted, not timed: two sessions of the same agent, one with 10 messages and one with
1,000 (recorded straight into the session, as months of chat leave them), take turns against
the scripted model over HTTP, through the real turn runner, session store and SDK-based
provider, and the function calls the event loop's thread makes during each turn are counted
(``tests/work.py``; the in-process scripted server's share is the same for both, its JSON
parse one call). A busy machine changes timings (0.8–1.55× measured on medians with the load
average at 6), not these counts: ~1.1× when written.

When a turn paid the SDK's per-message transform it did hundreds of calls per message (~100×
here); 2× catches ~7 calls a message coming back. The timed version, with its 1.2× target on
a quiet machine, is ``bench/http/api.py`` (f).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duragent.testing.script import Reply
from tests.turns.turn_fixtures import Harness, harness
from tests.work import calls_awaiting

_ROUNDS = 3
_MAX_RATIO = 2.0
_QUESTION = "How do I rotate a log file every day and keep a week of them? (request {i})"
_ANSWER = "Use logrotate: daily, rotate 7, compress."


async def _seed(h: Harness, sid: str, messages: int) -> None:
    """``messages`` plain messages of history, user and assistant in turn (no model call)."""
    session = h.registry.handle(sid)
    for i in range(messages // 2):
        await session.add_user_message(_QUESTION.format(i=i))
        await session.add_assistant_response(_ANSWER)


async def _overhead(h: Harness, sid: str, i: int) -> int:
    """One turn's work: the function calls made on the event loop's thread while it ran."""
    calls, result = await calls_awaiting(h.runner.run(sid, _QUESTION.format(i=i)))
    assert result.status == "complete", result
    return calls


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
        overheads: dict[int, list[int]] = {size: [] for size in sessions}
        for r in range(_ROUNDS):
            for size, sid in sessions.items():
                overheads[size].append(await _overhead(h, sid, r))
    short, long = (min(overheads[size]) for size in (10, 1000))
    assert long <= _MAX_RATIO * short, (long, short)
