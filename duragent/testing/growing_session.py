"""A growing conversation against a real model: the summaries tier's end-to-end check.

Issue #20 asks for 60 growing turns in a 2,048-token window with a real small model
(SmolLM2-135M, ``duragent.testing.local_model``): no request rejected, summaries non-empty
and reused. ``run_growing_session`` drives the real ``TurnRunner`` over a real session store
against any OpenAI-compatible ``base_url`` and returns what the test and
``bench/context/fitting.py`` check. Each user message is longer than the last (a note of 1 to
11 sentences), so the history passes the tier's threshold again and again and every summary
round after the first folds in the one before it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from duragent.core.events import EventType
from duragent.llm import RetryPolicy
from duragent.testing.local_runner import local_runner, request_tokens
from duragent.turns import Complete

__all__ = ["GrowingRun", "note", "run_growing_session"]

BIRDS = ("heron", "kestrel", "wren", "plover", "curlew", "grebe", "lapwing", "dipper")
FIRST = "We are logging bird sightings at the valley stations. The project code is VALE-17."


def note(turn: int) -> str:
    """The user's message of ``turn``: 1 + turn // 6 sentences (it grows)."""
    sentences = [
        f"At station {turn}-{i} I saw {2 + (turn * 7 + i) % 9} {BIRDS[(turn + i) % len(BIRDS)]}s "
        f"at {6 + (turn + i) % 12}:{(turn * 13 + i * 7) % 60:02d}."
        for i in range(1 + turn // 6)
    ]
    return f"Sighting note {turn}. " + " ".join(sentences) + " Please acknowledge in one line."


@dataclass
class GrowingRun:
    """What a growing session did."""

    turns: int
    limit: int
    completed: int
    request_tokens: list[int] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def over_limit(self) -> int:
        """Requests whose budget report passed the limit (the tier's guarantee says 0)."""
        return sum(1 for t in self.request_tokens if t > self.limit)


def agent_yaml(base_url: str, model: str, window: int, max_output_tokens: int) -> str:
    return (
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: local\nspec:\n"
        f"  model:\n    provider: local\n    name: {model}\n    base_url: {base_url}\n"
        f"    max_input_tokens: {window}\n    max_output_tokens: {max_output_tokens}\n"
        "    temperature: 0\n"
        "  session:\n    on_disconnect: pause\n"
    )


async def run_growing_session(
    base_url: str,
    *,
    turns: int = 60,
    window: int = 2048,
    model: str = "smollm2-135m-instruct",
    max_output_tokens: int = 96,
) -> GrowingRun:
    """Drive ``turns`` growing turns through the real runner (summaries: the tier's defaults)."""
    started = time.perf_counter()
    async with local_runner(
        agent_yaml(base_url, model, window, max_output_tokens),
        agent="local",
        ask_timeout=600,
        retry=RetryPolicy(initial_delay=0.2, max_delay=2.0),
        prefix="duragent-growing-",
    ) as local:
        sid = await local.runner.start_session("local")
        run = GrowingRun(turns=turns, limit=local.limit, completed=0)
        for turn in range(turns):
            result = await local.runner.run(sid, FIRST if turn == 0 else note(turn))
            if isinstance(result, Complete):
                run.completed += 1
                run.replies.append(result.content)
        events = await local.events(sid)
    run.request_tokens = request_tokens(events)
    run.summaries = [dict(e.data) for e in events if e.type == EventType.SUMMARY]
    run.seconds = time.perf_counter() - started
    return run
