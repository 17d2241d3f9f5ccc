"""A small-window agent sees every call it made this turn (issue 38 item 1).

Scripted model over HTTP, real runner, store and fitting: the agent makes one ``bash`` call
per response, each returning a huge output. Every request it is sent must show every call
made so far (arguments visible, older results masked), or — only when the calls themselves
cannot fit — say in a runtime notice exactly how many of the first calls are left out.
Before the fix an 8K agent saw only its last two calls from the third on, with no notice.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from duragent.context.notices import calls_left_out_notice
from duragent.testing import Reply, ToolCallReply
from duragent.testing.script import RecordedRequest, ScriptItem
from duragent.turns.result import Complete
from tests.turns import turn_fixtures
from tests.turns.summary_fixtures import is_summary_request, responder
from tests.turns.turn_fixtures import FnTool, harness

AGENT = textwrap.dedent(
    """\
    apiVersion: duragent/v1alpha1
    kind: Agent
    metadata:
      name: bot
    spec:
      model:
        provider: fake
        name: local-model
        base_url: {base_url}
        max_input_tokens: {window}
      session:
        max_tool_iterations: {iterations}
    """
)

LEFT_OUT = re.compile(r"^\[tool calls left out — the first (\d+) tool calls? of this turn")


def huge_output(args: dict[str, Any], lines: int) -> str:
    step = args.get("x")
    return "".join(f"{step}: line {i} of a long build log, nothing useful\n" for i in range(lines))


async def run_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, window: int, calls: int, lines: int
) -> list[dict[str, Any]]:
    """One turn of ``calls`` bash calls; the agent's requests, in order."""
    monkeypatch.setattr(
        turn_fixtures,
        "agent_yaml",
        lambda base_url, **_: AGENT.format(base_url=base_url, window=window, iterations=calls + 5),
    )
    bash = FnTool("bash", lambda a: huge_output(dict(a), lines))
    made = 0

    def agent(request: RecordedRequest) -> ScriptItem:
        nonlocal made
        if made == calls:
            return Reply(text="all done")
        made += 1
        call = ToolCallReply(name="bash", arguments={"x": f"step {made}"}, id=f"call_{made:03d}")
        return Reply(tool_calls=[call])

    async with harness(tmp_path, tools=[bash], responder=responder(agent=agent)) as h:
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, f"run the build step {calls} times")
        assert isinstance(result, Complete), result
        assert result.content == "all done"
        return [r.json for r in h.server.requests if not is_summary_request(r)]


def budgets(tmp_path: Path) -> list[dict[str, int]]:
    """Each model call's budget report, from the session's logs (oldest first)."""
    (folder,) = (tmp_path / ".duragent" / "sessions").iterdir()
    events = [
        json.loads(line)
        for log in (folder / "events.archive.jsonl", folder / "events.jsonl")
        if log.exists()
        for line in log.read_text().splitlines()
    ]
    return [e["budget"] for e in events if e["type"] == "assistant_response"]


def calls_in(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        call
        for m in body["messages"]
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or []
    ]


def visible_calls(body: dict[str, Any]) -> list[str]:
    return [call["id"] for call in calls_in(body)]


def left_out(body: dict[str, Any]) -> int | None:
    """The count a left-out notice states, or None when the request has none."""
    for m in body["messages"]:
        if m["role"] == "system" and (found := LEFT_OUT.match(str(m["content"]))):
            return int(found[1])
    return None


def results(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


async def test_an_8k_agent_sees_all_30_of_its_calls_with_older_results_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ~120K-token outputs (about 480,000 characters each), as in the issue
    requests = await run_turn(tmp_path, monkeypatch, window=8192, calls=30, lines=9_000)
    assert len(requests) == 31
    for made, body in enumerate(requests):
        expected = [f"call_{n:03d}" for n in range(1, made + 1)]
        assert visible_calls(body) == expected, f"request {made}: calls vanished"
        arguments = [json.loads(c["function"]["arguments"]) for c in calls_in(body)]
        assert arguments == [{"x": f"step {n}"} for n in range(1, made + 1)]
        assert left_out(body) is None
        shown = results(body)
        assert len(shown) == made
        if made >= 3:
            assert shown[0].startswith("[result masked — ~"), shown[0][:80]
            assert "full output saved as out_" in shown[0]  # readable with tool_output
            assert "line 0 of a long build log" in shown[-1]  # the latest result is read


async def test_a_4k_agent_says_exactly_how_many_calls_it_leaves_out_when_they_cannot_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = await run_turn(tmp_path, monkeypatch, window=4096, calls=80, lines=600)
    notices = 0
    for made, body in enumerate(requests):
        shown = visible_calls(body)
        count = left_out(body)
        if count is None:
            assert len(shown) == made, f"request {made}: calls vanished without a notice"
        else:
            notices += 1
            assert count == made - len(shown)
            assert shown == [f"call_{n:03d}" for n in range(count + 1, made + 1)]
            system = [m["content"] for m in body["messages"] if m["role"] == "system"]
            assert calls_left_out_notice(count, count) in system  # one call per iteration
            older = results(body)[:-1]  # masking widened before any iteration was left out
            assert all(r.startswith("[result masked") for r in older), older
        if made:
            assert "line 0 of a long build log" in results(body)[-1]  # the latest is read
    assert notices  # 80 calls do not fit a 4K request, even masked
    assert left_out(requests[-1]) is not None
    reports = budgets(tmp_path)
    assert len(reports) == len(requests)
    assert all(b["request_tokens"] <= b["limit"] for b in reports)
    assert reports[-1]["calls_left_out"] == left_out(requests[-1])
