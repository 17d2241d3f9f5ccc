"""How often the summaries tier summarises: turns between summaries at 4K, 8K and 32K windows.

A summary costs a model call and replaces context; if each frees too little room, the next
comes one or two turns later (the acceptance run of issue #20 found a summary every ~2 turns
at 4K and ~4 at 8K). This drives the real ``TurnRunner`` (sessions, events, the tier's model
calls) against the scripted model over HTTP, with each window tier's defaults, on two
workloads:

- **chat**: every user message and every answer ~130 tokens of prose, no tools — the
  acceptance run's case. The summariser writes ~90 % of its allowance (a real model asked
  for "at most N tokens" writes a sizeable summary; a long one costs the most room).
- **tools**: ``bench.context.turns``' seeded tool-heavy session (0–6 tool iterations a turn,
  outputs of 100 B – 60 KB cut by Layer 3a, answers of 100–2,000 characters, the faithful
  summariser at half its allowance) with pruning and summaries on.

For each: summaries written, the turn of the first, turns between consecutive summaries
(median and least), the share of the history a summary kept (``tokens_after`` /
``tokens_before``, the summary included), tokens per agent call, summary calls and their
tokens (in + out, counted with the agent's tokenizer) per 100 turns, the summary calls' share
of all model tokens (agent requests + summary calls, as table (c) of
``bench/context/fitting.py`` counts them), the agent requests that left history out (a
turn's own calls took its room mid-turn), overflows and failed turns. Issue 38's targets: a
summary share of at most 15 % at 8K and 5 % at 32K, both workloads.
To measure other code on the same workload, run it from that checkout's root with
``PYTHONPATH`` set to this one (the working directory comes first: its ``duragent`` is run).

    .venv/bin/python -m bench.context.summary_cadence          # chat 4K/8K/32K + tools, ~1 min
    .venv/bin/python -m bench.context.summary_cadence --quick  # fewer turns
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import statistics
import time
from dataclasses import dataclass
from typing import Any

from bench.context import turns as context_turns
from bench.rigs.corpus import Texts, english
from duragent.context.tokens import TokenCounter, counter_for_model
from duragent.core.messages import Message
from duragent.core.payloads import EventType, SummaryData
from duragent.testing import RecordedRequest, Reply, ScriptedLLMServer
from duragent.testing.local_runner import local_runner, request_tokens
from duragent.turns import Complete

MODEL = context_turns.MODEL
WINDOWS = (4_096, 8_192, 32_000)


@dataclass
class Cadence:
    """One session's summaries."""

    workload: str
    window: int
    turns: int
    summary_turns: list[int]
    kept: list[float]
    """Each summary's ``tokens_after`` / ``tokens_before``."""
    tokens: list[int]
    limit: int
    failed: int
    summary_tokens: int
    """Every summary call's tokens, prompt and completion (the agent's tokenizer)."""
    left_out: int
    """Agent requests that left history out (mid-turn, when the turn took the room)."""

    @property
    def gaps(self) -> list[int]:
        t = self.summary_turns
        return [b - a for a, b in itertools.pairwise(t)]

    @property
    def share(self) -> float:
        """Summary calls' tokens over all model tokens (agent requests + summary calls)."""
        total = sum(self.tokens) + self.summary_tokens
        return self.summary_tokens / total if total else 0.0

    def per_100(self, value: float) -> float:
        return 100 * value / self.turns

    def cells(self) -> list[str]:
        gaps = self.gaps
        return [
            f"{self.workload} {self.window:,}",
            f"{len(self.summary_turns)} in {self.turns}",
            str(self.summary_turns[0]) if self.summary_turns else "-",
            f"{statistics.median(gaps):.1f}" if gaps else "-",
            str(min(gaps)) if gaps else "-",
            f"{statistics.median(self.kept):.2f}" if self.kept else "-",
            f"{statistics.fmean(self.tokens):,.0f}",
            f"{self.per_100(len(self.summary_turns)):.1f}",
            f"{self.per_100(self.summary_tokens):,.0f}",
            f"{100 * self.share:.1f} %",
            f"{self.left_out} / {len(self.tokens)}",
            f"{sum(1 for t in self.tokens if t > self.limit)} / {self.failed}",
        ]


class ChatScript:
    """~130-token answers; summaries of ~90 % of the allowance, keeping the user's lines."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.prose = english().split()
        self.summary_tokens = 0

    def words(self, seed: int, tokens: int = 130) -> str:
        """Prose of about ``tokens`` tokens, from a seeded place."""
        rng = random.Random(seed)
        start = rng.randrange(0, len(self.prose) - 400)
        count = 40
        while self.counter.count_text(" ".join(self.prose[start : start + count])) < tokens:
            count += 5
        return " ".join(self.prose[start : start + count])

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.json.get("messages") or []
        first = str(messages[0].get("content") or "") if messages else ""
        if first.startswith(context_turns.SUMMARY_MARK):
            allowance = int(request.json.get("max_tokens") or 1024)
            body = str(messages[-1].get("content") or "")
            text = "## Progress\n"
            for n, line in enumerate(body.splitlines() * 8):
                candidate = f"{text}- {line[:200]} ({n})\n"
                if self.counter.count_text(candidate) > allowance * 0.9:
                    break
                text = candidate
            texts = [str(m.get("content") or "") for m in messages]
            prompt = self.counter.count_messages(
                [Message.system(texts[0]), *(Message.user(t) for t in texts[1:])]
            )
            out = self.counter.count_text(text)
            self.summary_tokens += prompt + out
            return Reply(text=text, prompt_tokens=prompt, completion_tokens=out)
        return Reply(text=self.words(len(messages) * 7919))


def agent_yaml(base_url: str, window: int) -> str:
    return (
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: bench\nspec:\n"
        f"  model:\n    provider: fake\n    name: {MODEL}\n    base_url: {base_url}\n"
        f"    max_input_tokens: {window}\n"
        "  session:\n    on_disconnect: pause\n"
    )


async def chat_session(window: int, turns: int) -> Cadence:
    """``turns`` chat turns of ~130-token messages through the real runner."""
    counter = counter_for_model(MODEL)
    script = ChatScript(counter)
    async with (
        ScriptedLLMServer(responder=script, keep_requests=1) as server,
        local_runner(agent_yaml(server.openai_base_url, window), agent="bench") as local,
    ):
        sid = await local.runner.start_session("bench")
        failed = 0
        for t in range(1, turns + 1):
            said = f"message number {t}: {script.words(t)}"
            failed += not isinstance(await local.runner.run(sid, said), Complete)
        events = await local.events(sid)
        limit = local.limit
    return Cadence(
        workload="chat",
        window=window,
        turns=turns,
        summary_turns=context_turns.summary_turns(events),
        kept=kept_shares(events),
        tokens=request_tokens(events),
        limit=limit,
        failed=failed,
        summary_tokens=script.summary_tokens,
        left_out=context_turns.history_left_out(events),
    )


def kept_shares(events: list[Any]) -> list[float]:
    """Each summary's ``tokens_after`` / ``tokens_before``: the share of the history it kept."""
    summaries = [SummaryData.of(e.data) for e in events if e.type == EventType.SUMMARY]
    return [s.tokens_after / s.tokens_before for s in summaries if s.tokens_before]


def tools_session(window: int, turns: int) -> Cadence:
    context = "{prune: {enabled: true}, summaries: {enabled: true}}"
    result = asyncio.run(context_turns.run_variant(window, context, turns, Texts()))
    return Cadence(
        workload="tools",
        window=window,
        turns=turns,
        summary_turns=result.summary_turns,
        kept=[],
        tokens=result.tokens,
        limit=result.limit,
        failed=result.failed,
        summary_tokens=result.summary_tokens,
        left_out=result.history_left_out,
    )


def main(quick: bool) -> None:
    started = time.perf_counter()
    chat_turns = {4_096: 40, 8_192: 60, 32_000: 240}
    tool_turns = 40 if quick else 100
    rows = [
        asyncio.run(chat_session(window, chat_turns[window] // (2 if quick else 1)))
        for window in WINDOWS
    ]
    rows += [tools_session(window, tool_turns) for window in WINDOWS]
    head = [
        "session",
        "summaries",
        "first at",
        "turns between (median)",
        "(least)",
        "kept",
        "tokens/call",
        "summaries/100 turns",
        "summary tokens/100 turns",
        "summary share",
        "history left out",
        "overflows / failed",
    ]
    widths = [max(len(h), *(len(r.cells()[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r.cells(), widths, strict=True)))
    print(
        json.dumps(
            {
                "seconds": round(time.perf_counter() - started),
                "summary_turns": {f"{r.workload} {r.window}": r.summary_turns for r in rows},
                "summary_share": {f"{r.workload} {r.window}": round(r.share, 4) for r in rows},
            }
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
