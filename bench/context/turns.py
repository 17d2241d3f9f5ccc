"""Table (c) of ``bench/context/fitting.py``: a long tool-heavy session through the turn runner.

Every number comes from the code path a deployment runs: ``TurnRunner`` over a real
``SessionRegistry`` and ``SessionStore`` (events fsync'd, ``state.yaml`` written), the
OpenAI provider over real HTTP to ``duragent.testing.ScriptedLLMServer``. Only the model is
scripted, by a responder that answers the two kinds of request it gets:

- the agent's: a seeded plan per turn (0–6 tool iterations of 1–3 calls, then an answer of
  real prose), identical in every variant, so the columns differ only by context settings;
- the summariser's (recognised by ``SUMMARY_PROMPT``): a *faithful* summary that keeps what
  the user gave (task, secret, instructions; as ``tests/turns/summary_fixtures.py`` does)
  plus a progress line per user message, about half the summary's allowance in size, so the
  intent-survival checks test what the tier carries, not what a model guessed, and the
  block costs what a real summary would.

Each reply reports usage counted with the agent's tokenizer, so a summary event's usage is
the real size of the summariser's call. Tool outputs are slices of real prose, code and JSON
(``bench/rigs/corpus.py``), 100 B – 60 KB log-uniform, cut by Layer 3a as in production.

Intent survival (issue #20's checks, ``tests/turns/test_intent_survival.py``): the first
message gives a task and a secret; every agent request must carry both. Three turns before
the end a newer instruction replaces the first one's; every later request must carry it
after the reference block, whose header tells the model the latest message wins.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.rigs.corpus import Texts
from duragent.context.summaries import REFERENCE_HEADER
from duragent.context.tokens import TokenCounter, counter_for_model
from duragent.core.messages import Message, ToolDefinition
from duragent.core.payloads import EventType, SummaryData
from duragent.testing import RecordedRequest, Reply, ScriptedLLMServer, ToolCallReply
from duragent.testing.local_runner import local_runner, request_tokens
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome
from duragent.turns import Complete
from duragent.turns.summariser import SUMMARY_PROMPT

MODEL = "gpt-4o"
TASK = "TASK: audit the payment service's retry logic and list every unsafe retry."
SECRET = "SECRET: the staging token is kestrel-7731."
FIRST = f"{TASK} {SECRET} Instruction: report in English, as a bullet list."
NEWER = "New instruction: report in French from now on; it replaces the earlier instruction."
SUMMARY_MARK = SUMMARY_PROMPT.splitlines()[0][:40]
ITERATION_WEIGHTS = (0.15, 0.20, 0.20, 0.15, 0.10, 0.10, 0.10)  # 0..6 tool iterations

VARIANTS: list[tuple[str, str]] = [
    ("layers 1–3", "{prune: {enabled: false}, summaries: {enabled: false}}"),
    ("+ pruning", "{prune: {enabled: true}, summaries: {enabled: false}}"),
    ("+ summaries", "{prune: {enabled: false}, summaries: {enabled: true}}"),
    ("+ both", "{prune: {enabled: true}, summaries: {enabled: true}}"),
]
"""Columns of table (c): a name and the agent's ``spec.session.context`` (tier defaults for
everything else). Every column runs the same seeded session."""


@dataclass
class OutputTool:
    """``fetch_log``: returns a seeded slice of real text named by its ``ref`` argument."""

    texts: Texts
    name: str = "fetch_log"
    policy_type: PolicyType = "builtin"

    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            name=self.name,
            description="Fetch a log, file or page by reference and return its text.",
            parameters={
                "type": "object",
                "properties": {"ref": {"type": "string", "description": "What to fetch."}},
                "required": ["ref"],
            },
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        return self.name

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        rng = random.Random(str(args.get("ref", "")))
        return ToolOutcome(True, self.texts.result(100, 60_000, rng))


@dataclass
class Script:
    """The scripted model: the agent's seeded plan and a faithful summariser."""

    texts: Texts
    counter: TokenCounter
    turn: int = 0
    iteration: int = 0
    newer_from: int = 0
    agent_requests: int = 0
    task_missing: int = 0
    secret_missing: int = 0
    newer_checked: int = 0
    newer_missing: int = 0
    newer_in_summary: int = 0
    summary_calls: int = 0
    summary_tokens: int = 0
    summary_texts: list[str] = field(default_factory=list)

    def plan(self, turn: int) -> int:
        return random.Random(turn * 7919).choices(range(7), weights=ITERATION_WEIGHTS)[0]

    def user_text(self, turn: int) -> str:
        if turn == 1:
            return FIRST
        if turn == self.newer_from:
            return NEWER
        return self.texts.chat(20, 600, random.Random(turn * 31))

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.json.get("messages") or []
        texts = [str(m.get("content") or "") for m in messages]
        prompt = self.counter.count_messages(
            [Message.system(texts[0]), *(Message.user(t) for t in texts[1:])]
        )
        if texts and texts[0].startswith(SUMMARY_MARK):
            allowance = int(request.json.get("max_tokens") or 1024)
            reply = faithful_summary(texts[-1], allowance, self.counter)
            out = self.counter.count_text(reply)
            self.summary_calls += 1
            self.summary_tokens += prompt + out
            self.summary_texts.append(reply)
            return Reply(text=reply, prompt_tokens=prompt, completion_tokens=out)
        self._check(messages, texts)
        if self.iteration < self.plan(self.turn):
            rng = random.Random(f"{self.turn}/{self.iteration}")
            n = rng.choices((1, 2, 3), weights=(0.75, 0.2, 0.05))[0]
            calls = [
                ToolCallReply(
                    name="fetch_log", arguments={"ref": f"{self.turn}/{self.iteration}/{i}"}
                )
                for i in range(n)
            ]
            self.iteration += 1
            return Reply(tool_calls=calls, prompt_tokens=prompt, completion_tokens=20 * n)
        answer = self.texts.chat(100, 2_000, random.Random(-self.turn))
        return Reply(
            text=answer, prompt_tokens=prompt, completion_tokens=self.counter.count_text(answer)
        )

    def _check(self, messages: list[dict[str, Any]], texts: list[str]) -> None:
        """Intent survival on every agent request (module docstring)."""
        self.agent_requests += 1
        whole = "\n".join(texts)
        self.task_missing += TASK not in whole
        self.secret_missing += SECRET not in whole
        if self.newer_from and self.turn >= self.newer_from:
            # The newer instruction is in the request: as a message, or (once summarised)
            # in the summary, which records it as replacing the old one; a block is always
            # framed as background the latest message overrides.
            self.newer_checked += 1
            block = next((t for t in texts[1:] if t.startswith(REFERENCE_HEADER)), "")
            as_message = any(t == NEWER for t in texts[1:])
            in_summary = NEWER in block and REFERENCE_HEADER in block
            self.newer_in_summary += in_summary and not as_message
            self.newer_missing += not (as_message or in_summary)
            self.newer_missing += bool(block) and REFERENCE_HEADER not in block


ESSENTIAL = ("TASK:", "SECRET:", "Instruction:", "New instruction:")
"""What the user gave that a summary must carry (a summariser keeps facts, not every line of
code that happens to contain the word "task")."""


def faithful_summary(body: str, max_tokens: int, counter: TokenCounter) -> str:
    """The summariser's answer: the essentials, then progress, within half its allowance.

    Essentials (``ESSENTIAL``) are kept in the order they appear — the previous summary's
    first, so a newer instruction lands after the one it replaces. Progress is one line per
    user message (the previous summary's progress lines included), the oldest dropped first
    to keep the summary at about half of ``max_tokens``: a real model asked for "at most N
    tokens" writes a sizeable summary, and the benchmark must pay for carrying it.
    """
    lines = [line.strip() for line in body.splitlines()]
    essentials = [
        line.removeprefix("- ")
        for line in lines
        if any(mark in line for mark in ESSENTIAL) and not line.startswith("- asked:")
    ]
    progress = [
        f"- asked: {line.removeprefix('USER: ')[:160]}" if line.startswith("USER: ") else line[:170]
        for line in lines
        if line.startswith(("USER: ", "- asked: "))
    ]
    head = "## Goal\n- continue the work\n## Key facts and identifiers\n" + "\n".join(
        f"- {line[:200]}" for line in dict.fromkeys(essentials)
    )
    while progress:
        text = f"{head}\n## Progress\n" + "\n".join(progress)
        if counter.count_text(text) <= max_tokens // 2:
            return text
        del progress[0]
    return head


def agent_yaml(base_url: str, window: int, context: str) -> str:
    return (
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: bench\nspec:\n"
        f"  model:\n    provider: fake\n    name: {MODEL}\n    base_url: {base_url}\n"
        f"    max_input_tokens: {window}\n    max_output_tokens: 1000\n"
        f"  session:\n    on_disconnect: pause\n    context: {context}\n"
    )


@dataclass
class Result:
    """One column of one window."""

    tokens: list[int]
    limit: int
    turns: int
    failed: int
    summaries: int
    summary_tokens: int
    summary_rounds_ok: bool
    script: Script
    seconds: float
    summary_turns: list[int] = field(default_factory=list)
    """The turn each summary was written in (``summary_turns``)."""
    history_left_out: int = 0
    """Agent requests that left history out (``history_left_out``)."""

    @property
    def overflows(self) -> int:
        return sum(1 for t in self.tokens if t > self.limit)


async def run_variant(window: int, context: str, turns: int, texts: Texts) -> Result:
    """Drive ``turns`` turns of the seeded session through the real runner."""
    counter = counter_for_model(MODEL)
    script = Script(texts, counter, newer_from=max(2, turns - 3))
    started = time.perf_counter()
    tool = OutputTool(texts)
    async with (
        ScriptedLLMServer(responder=script, keep_requests=1) as server,
        local_runner(
            agent_yaml(server.openai_base_url, window, context),
            agent="bench",
            extra_tools=lambda agent, sid: [tool],
            prefix="duragent-bench-",
        ) as local,
    ):
        sid = await local.runner.start_session("bench")
        failed = 0
        for t in range(1, turns + 1):
            script.turn, script.iteration = t, 0
            result = await local.runner.run(sid, script.user_text(t))
            failed += not isinstance(result, Complete)
        events = await local.events(sid)
        limit = local.limit
    budgets = request_tokens(events)
    rounds = [SummaryData.of(e.data) for e in events if e.type == EventType.SUMMARY]
    return Result(
        tokens=budgets,
        limit=limit,
        turns=turns,
        failed=failed,
        summaries=len(rounds),
        summary_tokens=script.summary_tokens,
        summary_rounds_ok=[r.round for r in rounds] == list(range(1, len(rounds) + 1)),
        script=script,
        seconds=time.perf_counter() - started,
        summary_turns=summary_turns(events),
        history_left_out=history_left_out(events),
    )


def history_left_out(events: list[Any]) -> int:
    """Agent requests whose budget report says history was left out (``history_omitted``)."""
    budgets = [e.data.get("budget") for e in events if e.type == EventType.ASSISTANT_RESPONSE]
    return sum(1 for budget in budgets if budget and budget.get("history_omitted"))


def summary_turns(events: list[Any]) -> list[int]:
    """The turn (1-based: user messages recorded so far) in which each summary was written."""
    turns: list[int] = []
    users = 0
    for event in events:
        if event.type == EventType.USER_MESSAGE:
            users += 1
        elif event.type == EventType.SUMMARY:
            turns.append(users)
    return turns


def survival(script: Script) -> str:
    """Share of agent requests that carried the task and the secret, and the newer rule."""
    n = script.agent_requests
    ok = n - max(script.task_missing, script.secret_missing)
    newer = script.newer_checked - script.newer_missing
    return f"{100 * ok / n:.0f} % / {100 * newer / max(1, script.newer_checked):.0f} %"


def table(turns: int, windows: tuple[int, ...]) -> tuple[list[str], dict[str, Any]]:
    """Table (c) and the figures the verdicts read (``{window: {variant: Result}}``)."""
    texts = Texts()
    names = [name for name, _ in VARIANTS]
    width = max(14, *(len(n) for n in names))
    lines = [
        f"{'measure':<36}" + "".join(f"{n:>{width + 2}}" for n in names),
        "-" * (36 + (width + 2) * len(names)),
    ]
    figures: dict[str, Any] = {}
    for window in windows:
        results = [asyncio.run(run_variant(window, ctx, turns, texts)) for _, ctx in VARIANTS]
        figures[str(window)] = dict(zip(names, results, strict=True))
        label = f"{window // 1000}K" if window % 1000 == 0 else f"{window // 1024}K"
        lines.append(f"{label} window ({window:,}; request limit {results[0].limit:,})")
        for name, cells in rows(results):
            lines.append(f"  {name:<34}" + "".join(f"{c:>{width + 2}}" for c in cells))
    return lines, figures


def total(result: Result) -> int:
    """Tokens of every call the session made: the agent's and the summariser's."""
    return sum(result.tokens) + result.summary_tokens


def rows(results: list[Result]) -> list[tuple[str, list[str]]]:
    """The measures of one window, one cell per variant."""
    base = total(results[0])

    def each(fmt: Callable[[Result], str]) -> list[str]:
        return [fmt(r) for r in results]

    return [
        ("LLM calls (agent)", each(lambda r: f"{len(r.tokens):,}")),
        ("tokens/call mean", each(lambda r: f"{sum(r.tokens) / len(r.tokens):,.0f}")),
        ("tokens/call max", each(lambda r: f"{max(r.tokens):,}")),
        ("total tokens (agent calls)", each(lambda r: f"{sum(r.tokens):,}")),
        ("summary calls", each(lambda r: f"{r.summaries:,}")),
        ("summary calls' tokens (in + out)", each(lambda r: f"{r.summary_tokens:,}")),
        ("total incl. summaries", each(lambda r: f"{total(r):,}")),
        ("total vs layers 1–3", each(lambda r: f"{100 * (total(r) / base - 1):+.1f} %")),
        ("overflows / failed turns", each(lambda r: f"{r.overflows} / {r.failed}")),
        ("task+secret in requests / newer", each(lambda r: survival(r.script))),
        ("wall time", each(lambda r: f"{r.seconds:.0f} s")),
    ]


if __name__ == "__main__":  # a quick look: python -m bench.context.turns [turns]
    import sys

    out, _ = table(int(sys.argv[1]) if len(sys.argv) > 1 else 40, (8_192, 32_000))
    print("\n".join(out))
    print(json.dumps({"note": "see bench/context/fitting.py (c)"}))
