"""The summaries tier in real turns: a real runner and session store, the scripted model over
HTTP answering both the agent and its summariser."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml

from duragent.context.quoting import quote
from duragent.core.events import EventType
from duragent.testing import Fault, RecordedRequest, Reply, ScriptItem
from duragent.turns import Complete, Failed
from tests.turns.summary_fixtures import contents, is_summary_request, responder
from tests.turns.turn_fixtures import harness

ON = "{max_history_tokens: 400, summaries: {enabled: true}}"
FILLER = "lorem ipsum dolor sit amet " * 12


def agent_requests(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if not is_summary_request(r)]


async def summaries_of(h: Any, sid: str) -> list[dict[str, Any]]:
    events = await h.registry.handle(sid).events(include_archive=True)
    return [dict(e.data) for e in events if e.type == EventType.SUMMARY]


async def test_a_history_past_the_threshold_is_summarised_and_the_summary_follows_the_prompt(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, responder=responder(), context=ON) as h:
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "TASK: count the sheep. SECRET: zebra-42")
        for i in range(12):
            result = await h.runner.run(sid, f"message {i}: {FILLER}")
            assert isinstance(result, Complete)
        written = await summaries_of(h, sid)
        requests = list(h.server.requests)
    assert len(written) >= 2
    assert [s["round"] for s in written] == list(range(1, len(written) + 1))
    assert all(s["messages"] > 0 and s["tokens_after"] < s["tokens_before"] for s in written)
    summariser_calls = [r for r in requests if is_summary_request(r)]
    # chained rounds: the second summariser call reads the first summary
    assert written[0]["summary"] in contents(summariser_calls[1])
    last = agent_requests(requests)[-1].json["messages"]
    assert last[0]["role"] == "system"
    assert last[1]["role"] == "user"  # quoted: a model wrote it (issue 33)
    assert quote(written[-1]["summary"]) in last[1]["content"]
    assert "latest message wins" in last[1]["content"]
    # the task is pinned: in every request, summarised or not
    assert all("zebra-42" in contents(r) for r in agent_requests(requests))
    assert last[-1] == {"role": "user", "content": f"message 11: {FILLER}"}


async def test_the_summary_is_in_state_yaml_and_the_window_lost_what_it_replaced(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, responder=responder(), context=ON) as h:
        sid = await h.runner.start_session("bot")
        for i in range(8):
            await h.runner.run(sid, f"message {i}: {FILLER}")
        handle = h.registry.handle(sid)
        window = await handle.messages()
        memory = await handle.memory()
        written = await summaries_of(h, sid)
    state = yaml.safe_load((tmp_path / ".duragent/sessions" / sid / "state.yaml").read_text())
    assert memory.summary is not None
    assert state["summary"]["summary"] == memory.summary.text == written[-1]["summary"]
    assert state["task"] == f"message 0: {FILLER}"
    assert window[0].text != f"message 0: {FILLER}"  # summarised away from the window…
    assert len(window) < 16


async def test_a_failing_summariser_falls_back_to_an_extractive_summary_and_the_turn_answers(
    tmp_path: Path,
) -> None:
    def broken(_request: RecordedRequest) -> ScriptItem:
        return Fault.bad_request("summariser is down")

    async with harness(tmp_path, responder=responder(summariser=broken), context=ON) as h:
        sid = await h.runner.start_session("bot")
        results = [await h.runner.run(sid, f"message {i}: {FILLER}") for i in range(8)]
        written = await summaries_of(h, sid)
    assert all(isinstance(r, Complete) for r in results)
    assert written
    assert all(s["extractive"] and s["model"] == "extractive" for s in written)
    assert "message 0" in written[0]["summary"]


async def test_a_context_overflow_from_the_provider_is_summarised_and_retried_once(
    tmp_path: Path,
) -> None:
    overflowed: list[int] = []

    def agent(request: RecordedRequest) -> ScriptItem:
        if not overflowed:
            overflowed.append(1)
            return Fault.context_length_exceeded()
        return Reply(text="answered after the summary")

    context = "{summaries: {enabled: true, threshold: 1.0}}"
    async with harness(tmp_path, responder=responder(agent=agent), context=context) as h:
        sid = await h.runner.start_session("bot")
        handle = h.registry.handle(sid)
        for i in range(6):
            await handle.add_user_message(f"old {i}: {FILLER}")
            await handle.add_assistant_response(f"old answer {i}")
        result = await h.runner.run(sid, "and now?")
        written = await summaries_of(h, sid)
        kinds = ["summary" if is_summary_request(r) else "agent" for r in h.server.requests]
    assert isinstance(result, Complete)
    assert result.content == "answered after the summary"
    assert kinds == ["agent", "summary", "agent"]
    assert len(written) == 1


async def test_pins_are_in_every_request_and_pins_too_large_fail_the_turn_clearly(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, responder=responder(), context=ON) as h:
        sid = await h.runner.start_session("bot")
        handle = h.registry.handle(sid)
        pin = await handle.pin("Always answer in French.", kind="decision", source="agent")
        await h.runner.run(sid, "hello")
        assert "decision: Always answer in French." in contents(h.server.requests[-1])
        assert await handle.unpin(pin) is True
        await h.runner.run(sid, "again")
        assert "Always answer in French." not in contents(h.server.requests[-1])
        big = await handle.pin("x " * 5000, kind="note")  # past the runner's check
        result = await h.runner.run(sid, "and now?")
    assert isinstance(result, Failed)
    assert "pinned_share" in result.error
    assert result.code == "pins_over_budget"  # not the model's failure: a person must unpin
    assert big in result.error
    assert f"DELETE /api/v1/sessions/{sid}/pins/<pin_id>" in result.error
    assert "/unpin <pin_id>" in result.error


async def test_the_agent_pins_a_decision_with_a_tool_and_it_is_in_every_later_request(
    tmp_path: Path,
) -> None:
    from duragent.testing import ToolCallReply

    def agent(request: RecordedRequest) -> ScriptItem:
        last = request.json["messages"][-1]
        if last["content"] == "decide":
            call = ToolCallReply(name="record_decision", arguments={"decision": "Use SI units."})
            return Reply(tool_calls=[call])
        return Reply(text="ok")

    async with harness(
        tmp_path, responder=responder(agent=agent), builtins=["record_decision"], context=ON
    ) as h:
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "decide")
        after_call = h.server.requests[-1]
        await h.runner.run(sid, "later")
        memory = await h.registry.handle(sid).memory()
    assert [(p.kind, p.text, p.source) for p in memory.pins] == [
        ("decision", "Use SI units.", "agent")
    ]
    assert "> - decision: Use SI units." in after_call.json["messages"][1]["content"]
    assert "> - decision: Use SI units." in h.server.requests[-1].json["messages"][1]["content"]


async def test_a_streaming_client_gets_a_summary_event_when_one_is_written(
    tmp_path: Path,
) -> None:
    import json

    from sse_starlette import ServerSentEvent

    from duragent.gateways.http.api.stream import QueueSink

    async with harness(tmp_path, responder=responder(), context=ON) as h:
        sid = await h.runner.start_session("bot")
        sinks = []
        for i in range(8):
            sink = QueueSink()
            sinks.append(sink)
            await h.runner.run(sid, f"message {i}: {FILLER}", sink=sink)
        written = await summaries_of(h, sid)
    events = []
    for sink in sinks:
        while not sink.queue.empty():
            item = sink.queue.get_nowait()
            if isinstance(item, ServerSentEvent) and item.event == "summary":
                events.append(json.loads(str(item.data)))
    assert events == [
        {"round": s["round"], "through_seq": s["through_seq"], "messages": s["messages"]}
        for s in written
    ]
    assert events


async def test_an_overflow_with_the_summariser_down_still_answers_after_an_extractive_summary(
    tmp_path: Path,
) -> None:
    overflowed: list[int] = []

    def agent(request: RecordedRequest) -> ScriptItem:
        if not overflowed:
            overflowed.append(1)
            return Fault.context_length_exceeded()
        return Reply(text="answered")

    def summariser(_request: RecordedRequest) -> ScriptItem:
        return Fault.context_length_exceeded()  # the summariser overflows too

    context = "{summaries: {enabled: true, threshold: 1.0}}"
    script = responder(agent=agent, summariser=summariser)
    async with harness(tmp_path, responder=script, context=context) as h:
        sid = await h.runner.start_session("bot")
        handle = h.registry.handle(sid)
        for i in range(6):
            await handle.add_user_message(f"old {i}: {FILLER}")
            await handle.add_assistant_response(f"old answer {i}")
        result = await h.runner.run(sid, "and now?")
        written = await summaries_of(h, sid)
        last = h.server.requests[-1].json["messages"]
    assert isinstance(result, Complete)
    assert result.content == "answered"
    assert len(written) == 1
    assert written[0]["extractive"] is True
    assert "Extractive summary" in last[1]["content"]


def test_a_summary_longer_than_asked_keeps_its_goal_and_its_key_facts() -> None:
    from duragent.context.tokens import EstimateCounter, TokenCounter
    from duragent.turns.summariser import fit_summary

    counter = TokenCounter(EstimateCounter())
    progress = "\n".join(f"- step {n} done, moving on to the next one" for n in range(400))
    text = (
        "## Goal\n- audit the retry logic\n## Progress\n"
        + progress
        + "\n## Key facts and identifiers\n- token kestrel-7731"
    )
    cut = fit_summary(text, counter, 200)
    assert counter.count_text(cut) <= 200
    assert "audit the retry logic" in cut
    assert "kestrel-7731" in cut  # the exact value the user gave is what must not be lost
    assert fit_summary("short", counter, 200) == "short"


def _prose(seed: int, tokens: int = 130) -> str:
    """Distinct words worth about ``tokens`` tokens (seeded, so every run is the same)."""
    from duragent.context.tokens import counter_for_model

    counter = counter_for_model("gpt-4o")
    words: list[str] = []
    while counter.count_text(" ".join(words)) < tokens:
        words.append(f"w{seed}x{len(words)} and")
    return " ".join(words)


def _full_summary(request: RecordedRequest) -> ScriptItem:
    """A summariser that writes ~90 % of its allowance: the most room a summary takes."""
    from duragent.context.tokens import counter_for_model

    counter = counter_for_model("gpt-4o")
    allowance = int(request.json.get("max_tokens") or 256)
    text = "## Progress"
    while counter.count_text(text + " more progress") <= allowance * 0.9:
        text += " more progress"
    return Reply(text=text)


@pytest.mark.parametrize(("window", "turns", "least"), [(4_096, 30, 4), (8_192, 50, 6)])
async def test_a_summary_leaves_room_for_several_turns_before_the_next_one(
    tmp_path: Path, window: int, turns: int, least: int
) -> None:
    """Issue #20's acceptance run: at small windows a summary came every ~2 turns (4K), ~4 (8K).

    Each summary kept ``keep_recent`` (0.40) of the budget it had *before* the summary, and
    the latest message on top; the longer summary then shrank the budget (it is in the fixed
    part): the history sat at ~0.56 of it against a 0.70 threshold. Now what stays verbatim,
    latest message included, is ``keep_recent`` of the budget *after* the summary, and the
    tier keeps less of a small window (0.20 at 4K, 0.25 at 8K). ``bench/context/summary_cadence.py``
    measures the same at 32K and with tools.
    """
    async with harness(
        tmp_path,
        responder=responder(
            agent=lambda r: Reply(text=_prose(len(r.json["messages"]) * 7)),
            summariser=_full_summary,
        ),
        max_input_tokens=window,
    ) as h:
        sid = await h.runner.start_session("bot")
        for t in range(turns):
            assert isinstance(await h.runner.run(sid, _prose(t)), Complete)
        events = await h.registry.handle(sid).events(include_archive=True)
        requests = list(h.server.requests)
    at: list[int] = []
    users = 0
    for event in events:
        users += event.type == EventType.USER_MESSAGE
        if event.type == EventType.SUMMARY:
            at.append(users)
    gaps = [b - a for a, b in itertools.pairwise(at)]
    assert len(at) >= 3, at
    assert min(gaps) >= least, at
    reports = [e.data["budget"] for e in events if e.data.get("budget")]
    assert reports
    assert all(r["request_tokens"] <= r["limit"] for r in reports)  # every request fits
    assert requests[-1].json["messages"][-1]["content"] == _prose(turns - 1)
