"""How often the summaries tier calls a model (issue 38 item 2), through real turns.

A real runner and session store, the scripted model over HTTP answering the agent and its
summariser. A summary is a model call that reads the previous summary and writes the next;
in a tightly capped chat it came every other turn, and in a tool-heavy one after nearly
every turn, because the tier counted tool outputs at full size that requests carried as
pruning markers (``context.summary_plan``, ``specs/202612051200.summary-cadence.md``), and
while Layer 2 chose the history by full size one heavy turn forced a summary the next.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from duragent.context.tokens import counter_for_model
from duragent.core.events import Event, EventType
from duragent.testing import RecordedRequest, Reply, ScriptItem, ToolCallReply
from duragent.turns import Complete
from tests.turns.summary_fixtures import responder
from tests.turns.turn_fixtures import FnTool, harness

COUNTER = counter_for_model("gpt-4o")


def prose(seed: int, tokens: int) -> str:
    """Distinct words worth about ``tokens`` tokens (seeded: every run is the same)."""
    words: list[str] = []
    while COUNTER.count_text(" ".join(words)) < tokens:
        words.append(f"w{seed}x{len(words)} and")
    return " ".join(words)


def sizeable_summary(request: RecordedRequest) -> ScriptItem:
    """A summariser writing ~90 % of its allowance, as a model asked for "at most N" does."""
    allowance = int(request.json.get("max_tokens") or 256)
    text = "## Progress"
    while COUNTER.count_text(text + " more progress") <= allowance * 0.9:
        text += " more progress"
    return Reply(text=text)


def summary_turns(events: list[Event]) -> list[int]:
    """The turn (user messages so far) in which each summary was written."""
    at: list[int] = []
    users = 0
    for event in events:
        users += event.type == EventType.USER_MESSAGE
        if event.type == EventType.SUMMARY:
            at.append(users)
    return at


async def test_a_chat_capped_at_2000_tokens_summarises_at_most_once_every_three_turns(
    tmp_path: Path,
) -> None:
    """The issue's case: ``max_history_tokens: 2000``, turns of ~650 tokens (a ~325-token
    message and answer), 30 turns: 14 summary rounds, one every other turn. A summary at 70 %
    of the cap folded in two turns while re-reading and rewriting a summary about as long;
    it waits now while the request still carries the whole history, and writes when the
    history would no longer fit: every third turn, the most a 2,000-token history of
    650-token turns allows without leaving unsummarised messages out of a request."""
    async with harness(
        tmp_path,
        responder=responder(
            agent=lambda r: Reply(text=prose(len(r.json["messages"]), 325)),
            summariser=sizeable_summary,
        ),
        context="{max_history_tokens: 2000}",
    ) as h:
        sid = await h.runner.start_session("bot")
        for t in range(30):
            assert isinstance(await h.runner.run(sid, prose(1000 + t, 325)), Complete)
        events = await h.registry.handle(sid).events(include_archive=True)
    at = summary_turns(events)
    assert 3 <= len(at) <= 10, at  # 14 before
    steady = at[1:]  # the first comes when the history first fills
    assert all(b - a >= 3 for a, b in itertools.pairwise(steady)), at
    budgets = [e.data["budget"] for e in events if e.data.get("budget")]
    assert all(not b.get("history_omitted") for b in budgets)  # never cut instead


def two_calls_then_an_answer(request: RecordedRequest) -> ScriptItem:
    """The agent: after each user message, two ``fetch`` calls in turn, then a short answer."""
    messages = request.json["messages"]
    done = 0
    for message in reversed(messages):
        if message["role"] == "user":
            break
        done += message["role"] == "tool"
    if done < 2:
        return Reply(tool_calls=[ToolCallReply(name="fetch", arguments={"x": str(len(messages))})])
    return Reply(text=prose(len(messages), 60))


async def test_a_tool_heavy_chat_counts_old_outputs_as_the_markers_requests_carry(
    tmp_path: Path,
) -> None:
    """Each turn fetches two ~600-token outputs; with pruning on, requests carry all but the
    newest ~4,000–6,000 tokens of outputs as one-line markers, and Layer 2 fills the request
    by those sizes. Counted at full size the history passed the trigger (70 % of its
    20,000-token budget) every 7 turns (5 summaries in 40 turns); counted as carried but
    with Layer 2 choosing by full size, whenever the full size passed 85 % of the budget (3,
    every 9 turns); now the carried history passes its trigger (three calls a turn: ~51 %)
    once in 40 turns, and no request leaves history out meanwhile."""
    fetch = FnTool("fetch", lambda args: prose(int(args.get("x", 0)), 600))
    async with harness(
        tmp_path,
        tools=[fetch],
        responder=responder(agent=two_calls_then_an_answer, summariser=sizeable_summary),
        context="{prune: {enabled: true}}",
    ) as h:
        sid = await h.runner.start_session("bot")
        for t in range(40):
            assert isinstance(await h.runner.run(sid, prose(2000 + t, 30)), Complete)
        events = await h.registry.handle(sid).events(include_archive=True)
    at = summary_turns(events)
    assert len(at) <= 2, at  # 5, then 3 before
    assert all(t >= 20 for t in at), at
    assert all(b - a >= 8 for a, b in itertools.pairwise(at)), at
    budgets = [e.data["budget"] for e in events if e.data.get("budget")]
    assert any(b.get("results_pruned") for b in budgets)  # pruning shrank outputs
    assert all(not b.get("history_omitted") for b in budgets)


def three_calls_then_an_answer(request: RecordedRequest) -> ScriptItem:
    """The agent: after each user message, three ``fetch`` calls in turn, then an answer."""
    messages = request.json["messages"]
    done = 0
    for message in reversed(messages):
        if message["role"] == "user":
            break
        done += message["role"] == "tool"
    if done < 3:
        return Reply(tool_calls=[ToolCallReply(name="fetch", arguments={"x": str(len(messages))})])
    return Reply(text=prose(len(messages), 80))


async def test_a_tool_heavy_chat_in_an_8k_window_goes_turns_between_summaries(
    tmp_path: Path,
) -> None:
    """Each turn reads three ~1,500-token outputs in an 8K window (history budget ~5,000):
    one turn's outputs pass the budget at full size. While Layer 2 chose history by full size
    the next turn had to summarise: 28 summaries in 30 turns, one every turn from the third.
    Now old outputs count as the markers a request carries, in the summaries tier and in
    Layer 2 alike, and the newest is the only one carried whole: a summary every five turns,
    and the first request of every turn carries the whole history."""
    fetch = FnTool("fetch", lambda args: prose(int(args.get("x", 0)), 1_500))
    async with harness(
        tmp_path,
        tools=[fetch],
        responder=responder(agent=three_calls_then_an_answer, summariser=sizeable_summary),
        max_input_tokens=8_192,
        context="{prune: {enabled: true}}",
    ) as h:
        sid = await h.runner.start_session("bot")
        for t in range(30):
            assert isinstance(await h.runner.run(sid, prose(3000 + t, 30)), Complete)
        events = await h.registry.handle(sid).events(include_archive=True)
    at = summary_turns(events)
    assert 2 <= len(at) <= 7, at  # 28 before
    assert all(b - a >= 4 for a, b in itertools.pairwise(at)), at
    budgets = [e.data["budget"] for e in events if e.data.get("budget")]
    assert any(b.get("results_pruned") for b in budgets)
    assert all(not b.get("history_omitted") for b in first_of_each_turn(events))


def first_of_each_turn(events: list[Event]) -> list[dict[str, int]]:
    """The budget report of each turn's first model request."""
    firsts: list[dict[str, int]] = []
    waiting = False
    for event in events:
        if event.type == EventType.USER_MESSAGE:
            waiting = True
        elif waiting and event.type == EventType.ASSISTANT_RESPONSE:
            waiting = False
            firsts.append(event.data.get("budget") or {})
    return firsts
