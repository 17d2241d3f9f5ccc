"""Intent survival: a task and a secret given in the first message survive hundreds of filler
and tool turns in an 8K and a 32K window, and a newer instruction wins over an older one the
summary records.

The agent and its summariser are the scripted model over real HTTP (``summary_fixtures``:
the summariser keeps lines naming the task, a secret or an instruction). The short run is in
the default suite; ``pytest -m slow`` runs the long one (300 turns).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duragent.core.events import EventType
from duragent.turns import Complete
from duragent.turns.agent_budget import budget_settings
from tests.turns.summary_fixtures import contents, is_summary_request, responder, tool_every
from tests.turns.turn_fixtures import FnTool, harness

FIRST = "TASK: catalogue the birds of the valley. SECRET: zebra-42. Instruction: reply in English."
NEWER = "New instruction: reply in French from now on; it replaces the earlier instruction."
OUTPUT = "wingspan measurement " * 200  # ~600 tokens of tool output per call


async def survive(tmp_path: Path, window: int, turns: int) -> dict[str, Any]:
    probe = FnTool("probe", lambda args: OUTPUT)
    async with harness(
        tmp_path,
        tools=[probe],
        responder=responder(agent=tool_every(2)),
        max_input_tokens=window,
        context="{summaries: {enabled: true}}",
    ) as h:
        sid = await h.runner.start_session("bot")
        results = [await h.runner.run(sid, FIRST)]
        for i in range(turns):
            # long enough that the history reaches the summary trigger as requests carry it
            # (old outputs counted as their pruning markers)
            text = (
                NEWER
                if i == turns - 5
                else f"filler {i}: note the heron count {i * 7}"
                + ". the herons gathered by the reeds at dusk" * 20
            )
            results.append(await h.runner.run(sid, text))
        events = await h.registry.handle(sid).events(include_archive=True)
        requests = list(h.server.requests)
        limit = budget_settings(h.agent).limit
    return {"results": results, "events": events, "requests": requests, "limit": limit}


@pytest.mark.parametrize("window", [8192, 32768])
async def test_the_task_and_secret_are_in_every_request_and_the_newest_instruction_wins(
    tmp_path: Path, window: int
) -> None:
    run = await survive(tmp_path, window, 40 if window == 8192 else 90)
    check(run)


@pytest.mark.slow
@pytest.mark.parametrize("window", [8192, 32768])
async def test_intent_survives_three_hundred_turns(tmp_path: Path, window: int) -> None:
    check(await survive(tmp_path, window, 300))


def check(run: dict[str, Any]) -> None:
    assert all(isinstance(r, Complete) for r in run["results"])
    agent = [r for r in run["requests"] if not is_summary_request(r)]
    summaries = [e.data for e in run["events"] if e.type == EventType.SUMMARY]
    assert summaries, "the workload never reached the threshold"
    assert [s["round"] for s in summaries] == list(range(1, len(summaries) + 1))
    # the task and the secret are in every request the agent's model read
    for request in agent:
        text = contents(request)
        assert "zebra-42" in text
        assert "catalogue the birds" in text
    # every request fitted (the budget report of each call)
    budgets = [e.data["budget"] for e in run["events"] if e.type == EventType.ASSISTANT_RESPONSE]
    assert all(b["request_tokens"] <= run["limit"] for b in budgets)
    # the newest instruction is in the request, after the reference block that frames the
    # summary (which may still record the old one) as background the latest message overrides
    last = agent[-1].json["messages"]
    block = last[1]["content"]
    assert "the latest message wins" in block
    assert any(m.get("content") == NEWER for m in last[2:])
    assert last[-1]["role"] in ("user", "tool")
