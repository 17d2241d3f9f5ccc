"""Context-window management: render cost, and tokens per call in a long tool-heavy session.

Prints one table (and a plateau table for (b)). Everything is real: ``fit_request`` from
``duragent.context.render``, the settings of ``BudgetSettings.for_model`` and the o200k_base
tokenizer of gpt-4o (tiktoken, loaded offline). Text comes from the running Python's own files
(``bench/rigs/corpus.py``), so token counts are those of real prose, code and JSON. Deterministic:
every random choice is seeded.

    .venv/bin/python -m bench.context.fitting            # full run (under a minute)
    .venv/bin/python -m bench.context.fitting --quick    # fewer repetitions and turns

(a) Render time vs history length (100, 1,000, 2,000 and 10,000 messages: user and assistant
    text of varied length, about a quarter of the exchanges with assistant tool calls and
    their results) for gpt-4o (128K window) with the default ``max_history_tokens`` (20,000)
    and with no cap (0). Called as the loop calls it (tool definitions offered, their cost
    passed as ``tools_tokens``). "cold" is the first call on freshly built messages (their
    token counts are not cached yet); "warm" is the median of many calls after it. Target:
    warm ≤ 1 ms at 2,000 messages with the default settings.
(b) A scripted 500-turn session with a 32K window (``max_input_tokens: 32000``): each turn is
    a user message, 0–6 tool iterations (1–3 calls each; results of 100 B – 60 KB, log-uniform,
    capped with ``truncate_tool_result`` at ``max_tool_result_tokens`` as the loop does) and a
    final answer. Before every simulated LLM call the request is built with ``fit_request``
    exactly as ``duragent/session/loop.py`` does (same ``TurnCache`` for the calls of a turn,
    one ``HistoryCache`` for the session, ``tools_tokens`` passed); ``history`` is the
    session's messages up to and including the
    turn's user message, held to ``actor_message_limit(32000)`` messages as the session actor
    does (Layer 1; oldest dropped first, never starting on a tool result). The request's cost
    is ``report.request_tokens`` (also re-counted from the returned messages as a check).
    The naive baseline sends everything: system prompt + every message of the session so far
    (tool results uncapped) + tool definitions, counted with the same counter. An overflow is
    a request above window − output reserve (27,904 tokens).
(c) A 500-turn tool-heavy session at 8K (8,192) and 32K (32,000) windows with each window
    tier's defaults, one column per context setting (``bench.context.turns.VARIANTS``): Layers 1–3
    only, + pruning, + summaries, + both. Unlike (b) this drives the real ``TurnRunner``
    (sessions, events, the summaries tier's model calls) against the scripted model over
    HTTP (``bench/context/turns.py``): tokens per call (mean, max) from each response's budget
    report, total tokens, number and cost of summary calls, overflows (a request above the
    limit) and failed turns, and the intent-survival checks of issue #20. Target: with both,
    ≥ 40 % fewer total tokens (summary calls included) than Layers 1–3 only at 32K.
(d) Opt-in (``DURAGENT_REAL_LLM=1``, ``duragent[local-model]``): 60 growing turns with
    SmolLM2-135M served by llama.cpp in a 2,048-token window (``testing.growing_session``):
    0 requests rejected by the server, summaries written by the model, non-empty, reused.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from bench.context import turns as context_turns
from bench.rigs.corpus import Texts
from bench.rigs.table import pct, print_rows, row
from duragent.context.budget import BudgetSettings, ContextOverflowError
from duragent.context.render import HistoryCache, TurnCache, fit_request
from duragent.context.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    REQUEST_OVERHEAD_TOKENS,
    TokenCounter,
    counter_for_model,
)
from duragent.context.truncation import truncate_tool_result
from duragent.core.messages import Message, Role, ToolCall, ToolDefinition
from duragent.session.state import actor_message_limit
from duragent.testing.growing_session import GrowingRun, run_growing_session
from duragent.testing.local_model import LocalModelServer, why_unavailable

MODEL = "gpt-4o"

SYSTEM_PROMPT = """\
You are bench, a calm and precise assistant that helps engineers operate their services.
You say what you know, say when you do not know, and keep answers short unless asked for
detail. You can run shell commands, read and write files in the workspace, search the web
and fetch pages. Before changing anything, explain what you are about to do and why. Prefer
read-only commands when you are investigating. When a command fails, read the error and try
a different approach rather than repeating the same command. Quote the exact lines of output
that support your conclusions. Never print secrets, tokens or passwords, even if a file you
read contains them. When you are done, summarise what you changed and how to undo it.

Workspace conventions: services live under ./services/<name>, each with a README.md, a
config.yaml and a Makefile. Logs are under ./logs/<service>/<date>.log. Use `make test` in a
service folder to run its tests. The on-call runbook is ./docs/runbook.md.
"""


def _schema(**props: str) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {n: {"type": "string", "description": d} for n, d in props.items()},
        "required": list(props)[:1],
    }


TOOLS = [
    ToolDefinition(
        name="bash",
        description="Run a shell command in the workspace and return its output.",
        parameters=_schema(command="The command line to run.", cwd="Working directory."),
    ),
    ToolDefinition(
        name="read_file",
        description="Read a text file from the workspace.",
        parameters=_schema(path="Path relative to the workspace.", range="Optional 'a-b' lines."),
    ),
    ToolDefinition(
        name="write_file",
        description="Create or overwrite a text file in the workspace.",
        parameters=_schema(path="Path relative to the workspace.", content="The new content."),
    ),
    ToolDefinition(
        name="web_fetch",
        description="Fetch a URL and return its text content.",
        parameters=_schema(url="The http(s) URL to fetch."),
    ),
    ToolDefinition(
        name="web_search",
        description="Search the web and return the top results with snippets.",
        parameters=_schema(query="What to search for."),
    ),
    ToolDefinition(
        name="memory_add",
        description="Remember a fact for later sessions.",
        parameters=_schema(fact="The fact, one sentence."),
    ),
]


def tool_calls(texts: Texts, prefix: str, n: int) -> tuple[ToolCall, ...]:
    """``n`` tool calls with plausible JSON arguments (drawn by ``texts``' generator)."""
    out = []
    for i in range(n):
        tool = texts.rng.choice(TOOLS).name
        arg = texts.chat(10, 120).replace("\n", " ")
        key = "command" if tool == "bash" else "path" if "file" in tool else "query"
        out.append(ToolCall(id=f"call_{prefix}_{i}", name=tool, arguments=json.dumps({key: arg})))
    return tuple(out)


# --- (a) render time vs history length ------------------------------------------------------


def make_history(texts: Texts, n: int) -> list[Message]:
    """``n`` messages of past exchanges ending with the latest user message."""
    rng = texts.rng
    out: list[Message] = []
    exchange = 0
    while len(out) < n - 1:
        exchange += 1
        room = n - 1 - len(out)
        out.append(Message.user(texts.chat(20, 600)))
        if room >= 6 and rng.random() < 0.25:
            for it in range(rng.randint(1, 2)):
                calls = tool_calls(texts, f"{exchange}_{it}", 1)
                out.append(Message.assistant("", calls))
                out.extend(Message.tool(c.id, texts.result(100, 8_000)) for c in calls)
        if len(out) < n - 1:
            out.append(Message.assistant(texts.chat(50, 2_000)))
    out.append(Message.user(texts.chat(20, 600)))
    return out


def time_render(
    history: list[Message], settings: BudgetSettings, counter: TokenCounter, quick: bool
) -> tuple[float, float, float, int]:
    """(cold seconds, warm median and best seconds, messages sent) for ``history``."""
    tools_tokens = counter.count_tools(TOOLS)
    history_cache = HistoryCache()  # the session's, as the loop passes it

    def call() -> int:
        _, report = fit_request(
            system=SYSTEM_PROMPT,
            history=history,
            tools=TOOLS,
            counter=counter,
            settings=settings,
            history_cache=history_cache,
            tools_tokens=tools_tokens,
        )
        return report.history_sent

    start = time.perf_counter()
    sent = call()
    cold = time.perf_counter() - start
    times: list[float] = []
    deadline = time.perf_counter() + (0.5 if quick else 3.0)
    most = 100 if quick else 1000
    while len(times) < 20 or (len(times) < most and time.perf_counter() < deadline):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return cold, statistics.median(times), min(times), sent


def bench_render(counter: TokenCounter, quick: bool) -> None:
    default = BudgetSettings.for_model(MODEL)
    uncapped = replace(default, max_history_tokens=0)
    for label, settings in (("default cap", default), ("no cap", uncapped)):
        for n in (100, 1_000, 2_000, 10_000):
            history = make_history(Texts(seed=n), n)  # fresh objects: nothing cached yet
            gc.collect()
            cold, warm, best, sent = time_render(history, settings, counter, quick)
            is_target = label == "default cap" and n == 2_000
            row(
                f"(a) render {n:,} msgs, {label}, warm median (best)",
                f"{warm * 1e3:.3f} ms ({best * 1e3:.3f})",
                "<= 1 ms" if is_target else "",
                warm <= 0.001 if is_target else None,
            )
            row(
                f"(a) render {n:,} msgs, {label}, cold (sent {sent})",
                f"{cold * 1e3:.2f} ms",
            )


# --- (b) scripted tool-heavy session ---------------------------------------------------------

ITERATION_WEIGHTS = (0.15, 0.20, 0.20, 0.15, 0.10, 0.10, 0.10)  # 0..6 tool iterations


@dataclass
class Run:
    tokens: list[int] = field(default_factory=list)  # per call
    turn_of_call: list[int] = field(default_factory=list)

    def overflows(self, threshold: int) -> int:
        return sum(1 for t in self.tokens if t > threshold)

    def first_overflow(self, threshold: int) -> int | None:
        return next((i + 1 for i, t in enumerate(self.tokens) if t > threshold), None)


def hold(session: list[Message], limit: int) -> None:
    """Layer 1 as the actor applies it: drop the oldest beyond ``limit``, no leading result."""
    excess = len(session) - limit
    if excess > 0:
        del session[:excess]
        while session and session[0].role is Role.TOOL:
            del session[0]


def simulate(
    turns: int, counter: TokenCounter, settings: BudgetSettings, progress: Callable[[int], None]
) -> tuple[Run, Run, dict[str, int]]:
    texts = Texts(seed=2026)
    rng = random.Random(500)
    limit = actor_message_limit(settings.window)
    tools_tokens = counter.count_tools(TOOLS)
    system_tokens = counter.count_message(Message.system(SYSTEM_PROMPT))
    fixed = REQUEST_OVERHEAD_TOKENS + tools_tokens + system_tokens
    session: list[Message] = []  # what the actor holds (Layer 1)
    naive_sum = 0  # tokens of every message ever, tool results uncapped
    ours, naive = Run(), Run()
    stats = {
        "errors": 0,
        "recount_mismatch_max": 0,
        "results": 0,
        "results_capped": 0,
        "masked": 0,
        "omitted_calls": 0,
        "groups_dropped": 0,
        "shrunk": 0,
        "pruned": 0,
        "fit_ns": 0,
    }
    history_cache = HistoryCache()
    for t in range(1, turns + 1):
        user = Message.user(texts.chat(20, 600))
        session.append(user)
        hold(session, limit)
        naive_sum += counter.count_message(user)
        history = list(session)
        turn: list[Message] = []
        cache = TurnCache()
        iterations = rng.choices(range(7), weights=ITERATION_WEIGHTS)[0]
        for it in range(iterations + 1):
            start = time.perf_counter_ns()
            try:
                messages, report = fit_request(
                    system=SYSTEM_PROMPT,
                    history=history,
                    turn=turn,
                    tools=TOOLS,
                    counter=counter,
                    settings=settings,
                    turn_cache=cache,
                    history_cache=history_cache,
                    tools_tokens=tools_tokens,
                )
            except ContextOverflowError:
                stats["errors"] += 1
                messages, report = [], None
            stats["fit_ns"] += time.perf_counter_ns() - start
            if report is not None:
                ours.tokens.append(report.request_tokens)
                ours.turn_of_call.append(t)
                recount = counter.count_messages(messages) + tools_tokens
                stats["recount_mismatch_max"] = max(
                    stats["recount_mismatch_max"], abs(recount - report.request_tokens)
                )
                stats["masked"] += report.results_masked
                stats["omitted_calls"] += 1 if report.history_omitted else 0
                stats["groups_dropped"] += report.groups_dropped
                stats["shrunk"] += report.results_shrunk
                stats["pruned"] += report.results_pruned
            naive.tokens.append(fixed + naive_sum)
            naive.turn_of_call.append(t)
            if it == iterations:
                break
            n_calls = rng.choices((1, 2, 3), weights=(0.75, 0.2, 0.05))[0]
            calls = tool_calls(texts, f"{t}_{it}", n_calls)
            call_msg = Message.assistant(texts.chat(0, 200) if rng.random() < 0.3 else "", calls)
            turn.append(call_msg)
            naive_sum += counter.count_message(call_msg)
            for call in calls:
                raw = texts.result(100, 60_000)
                capped = truncate_tool_result(
                    raw, settings.max_tool_result_tokens, settings.truncation, counter
                )
                stats["results"] += 1
                stats["results_capped"] += capped.truncated
                turn.append(Message.tool(call.id, capped.text))
                # The naive request carries the raw result: same counter, same framing.
                naive_sum += (
                    MESSAGE_OVERHEAD_TOKENS + capped.original_tokens + counter.count_text(call.id)
                )
        answer = Message.assistant(texts.chat(100, 2_000))
        naive_sum += counter.count_message(answer)
        session.extend(turn)
        session.append(answer)
        hold(session, limit)
        progress(t)
    return ours, naive, stats


def bench_session(counter: TokenCounter, turns: int) -> list[str]:
    settings = BudgetSettings.for_model(MODEL, max_input_tokens=32_000)
    threshold = settings.window - settings.output_reserve
    start = time.perf_counter()
    ours, naive, stats = simulate(turns, counter, settings, lambda t: None)
    elapsed = time.perf_counter() - start
    calls = len(naive.tokens)
    row(f"(b) {turns} turns, 32K window: LLM calls", f"{calls:,}")
    row(
        "(b) tool results (capped at 8,000 tokens)",
        f"{stats['results']:,} ({stats['results_capped']:,} capped)",
    )
    for name, run in (("duragent", ours), ("naive", naive)):
        row(f"(b) tokens/call {name}: mean", f"{statistics.fmean(run.tokens):,.0f}")
        row(f"(b) tokens/call {name}: p50", f"{pct(run.tokens, 0.5):,}")
        row(f"(b) tokens/call {name}: max", f"{max(run.tokens):,}")
    ours_over = ours.overflows(threshold)
    row(
        f"(b) overflowing calls (> {threshold:,}) duragent",
        f"{ours_over:,}",
        "0",
        ours_over == 0 and stats["errors"] == 0,
    )
    row(f"(b) overflowing calls (> {threshold:,}) naive", f"{naive.overflows(threshold):,}")
    first = naive.first_overflow(threshold)
    row(
        "(b) naive first overflow at call",
        "never" if first is None else f"#{first} (turn {naive.turn_of_call[first - 1]})",
    )
    row(
        "(b) duragent max <= limit (window-reserve-10%)",
        f"{max(ours.tokens):,} / {settings.limit:,}",
        "<= limit",
        max(ours.tokens) <= settings.limit,
    )
    row("(b) ContextOverflowError raised", f"{stats['errors']}", "0", stats["errors"] == 0)
    row(
        "(b) |recount - report.request_tokens| max",
        f"{stats['recount_mismatch_max']} tokens",
    )
    row(
        "(b) calls with history omitted / results masked",
        f"{stats['omitted_calls']:,} / {stats['masked']:,}",
    )
    row(
        "(b) groups dropped (3c) / results shrunk",
        f"{stats['groups_dropped']:,} / {stats['shrunk']:,}",
    )
    row(
        "(b) fit_request mean per call / whole simulation",
        f"{stats['fit_ns'] / 1e6 / max(1, len(ours.tokens)):.3f} ms / {elapsed:.1f} s",
    )

    bucket = 50
    lines = [
        f"{'turns':>9}  {'calls':>6}  {'duragent mean':>13}  {'naive mean':>11}  "
        f"{'naive overflowing':>17}",
        "-" * 66,
    ]
    for lo in range(1, turns + 1, bucket):
        hi = min(turns, lo + bucket - 1)
        idx = [i for i, t in enumerate(naive.turn_of_call) if lo <= t <= hi]
        ours_b = [ours.tokens[i] for i in idx]
        naive_b = [naive.tokens[i] for i in idx]
        over = sum(1 for v in naive_b if v > threshold)
        lines.append(
            f"{lo:>4}-{hi:<4}  {len(idx):>6}  {statistics.fmean(ours_b):>13,.0f}  "
            f"{statistics.fmean(naive_b):>11,.0f}  {over:>10}/{len(idx):<6}"
        )
    return lines


# --- (c) the session per window tier, one column per context setting ---------------------------

WINDOWS = (8_192, 32_000)


def bench_variants(turns: int) -> list[str]:
    """Table (c), through the real turn runner (``bench/context/turns.py``), with verdicts."""
    lines, figures = context_turns.table(turns, WINDOWS)
    for window, results in figures.items():
        for name, result in results.items():
            script = result.script
            survived = script.task_missing == script.secret_missing == 0
            newer = script.newer_missing == 0
            summarised = "summaries" in name or "both" in name
            row(
                f"(c) {int(window):,} {name}: overflows / failed turns",
                f"{result.overflows} / {result.failed}",
                "0 / 0",
                result.overflows == 0 and result.failed == 0,
            )
            if summarised:
                row(
                    f"(c) {int(window):,} {name}: intent survival (task+secret, newer)",
                    context_turns.survival(script),
                    "100 %",
                    survived and newer and result.summary_rounds_ok,
                )
        base, both = results["layers 1–3"], results["+ both"]
        saved = 1 - (sum(both.tokens) + both.summary_tokens) / sum(base.tokens)
        row(
            f"(c) {int(window):,} + both vs layers 1–3, total tokens incl. summaries",
            f"{-100 * saved:+.1f} %",
            "<= -40 %" if int(window) == 32_000 else "",
            saved >= 0.40 if int(window) == 32_000 else None,
        )
    return lines


# --- (d) a real small model: SmolLM2-135M in a 2,048-token window --------------------------


def bench_real_model(turns: int) -> None:
    """60 growing turns through llama.cpp's server (``duragent[local-model]``), opt-in."""
    reason = (
        "set DURAGENT_REAL_LLM=1 (minutes)"
        if os.environ.get("DURAGENT_REAL_LLM") != "1"
        else why_unavailable()
    )
    if reason is not None:
        row("(d) SmolLM2-135M, 2,048 window", f"skipped: {reason}"[:60])
        return

    async def go() -> tuple[GrowingRun, int, int]:
        async with LocalModelServer(n_ctx=2048) as server:
            run = await run_growing_session(server.base_url, turns=turns, window=2048)
            return run, server.rejected(), len(server.statuses())

    run, rejected, answered = asyncio.run(go())
    summaries = run.summaries
    written = [s for s in summaries if s["summary"].strip() and s["model"] != "extractive"]
    row("(d) SmolLM2-135M, 2,048 window: turns answered", f"{run.completed} / {turns}")
    row(
        "(d) requests rejected by the server / sent",
        f"{rejected} / {answered}",
        "0",
        rejected == 0 and run.completed == turns,
    )
    row(
        "(d) tokens/call mean / max (limit)",
        f"{statistics.fmean(run.request_tokens):,.0f} / {max(run.request_tokens):,} "
        f"({run.limit:,})",
    )
    row(
        "(d) summaries written by the model, non-empty / rounds",
        f"{len(written)} / {len(summaries)}",
        "all, >= 2",
        len(summaries) >= 2 and len(written) == len(summaries),
    )
    row(
        "(d) turns per summary (reused)",
        f"{turns / max(1, len(summaries)):.1f}",
        ">= 2",
        len(summaries) >= 1 and turns / len(summaries) >= 2,
    )
    row("(d) wall time", f"{run.seconds:.0f} s")


def main(quick: bool) -> None:
    counter = counter_for_model(MODEL)
    assert counter.name == "o200k_base", counter.name
    counter.count_text("warm up the tokenizer")
    bench_render(counter, quick)
    plateau = bench_session(counter, 100 if quick else 500)
    variants = bench_variants(100 if quick else 500)
    bench_real_model(60)
    print_rows(target_width=10)
    print("\n(b) mean tokens per call, by 50-turn bucket (the plateau):")
    print("\n".join(plateau))
    print(f"\n(c) a {100 if quick else 500}-turn tool-heavy session per window, per setting:")
    print("\n".join(variants))
    print(json.dumps({"machine_cores": os.cpu_count(), "tokenizer": counter.name}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
