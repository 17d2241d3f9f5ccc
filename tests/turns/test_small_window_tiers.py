"""A 4,096-token agent with no other setting works through a long tool-heavy chat (issue 20 item 6).

Scripted model over HTTP, real runner and store: every turn answers, every request fits the
limit, the small tier's compact prompt is sent, large outputs are cut (and saved), and old
outputs are pruned from requests while the session's log keeps them whole.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from duragent.agents.system_prompt import COMPACT_PREAMBLE, PREAMBLE
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
        max_input_tokens: 4096
    """
)


async def test_a_4096_token_agent_answers_every_turn_of_a_tool_heavy_chat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        turn_fixtures, "agent_yaml", lambda base_url, **_: AGENT.format(base_url=base_url)
    )
    logs = FnTool("logs", lambda a: f"log line for {a.get('x')}\n" * 400)

    def agent(request: RecordedRequest) -> ScriptItem:
        last = request.json["messages"][-1]
        if last["role"] == "user":  # "check service <n>": look at its logs first
            service = str(last["content"]).split()[-1]
            return Reply(tool_calls=[ToolCallReply(name="logs", arguments={"x": f"svc{service}"})])
        return Reply(text=f"answer {asked[-1]}")

    asked: list[int] = []
    async with harness(tmp_path, tools=[logs], responder=responder(agent=agent)) as h:
        sid = await h.runner.start_session("bot")
        for n in range(12):
            asked.append(n)
            result = await h.runner.run(sid, f"check service {n}")
            assert isinstance(result, Complete), result
            assert result.content == f"answer {n}"
        requests = [r.json for r in h.server.requests if not is_summary_request(r)]
        summarised = any(is_summary_request(r) for r in h.server.requests)

    system = requests[-1]["messages"][0]["content"]
    assert system.startswith(COMPACT_PREAMBLE)
    assert PREAMBLE not in system
    folder = tmp_path / ".duragent" / "sessions" / sid
    lines = [
        line
        for log in (folder / "events.archive.jsonl", folder / "events.jsonl")  # oldest first
        if log.exists()
        for line in log.read_text().splitlines()
    ]
    events = [json.loads(line) for line in lines]
    budgets = [e["budget"] for e in events if e["type"] == "assistant_response"]
    assert len(budgets) == 24
    assert all(b["window"] == 4096 and b["request_tokens"] <= b["limit"] for b in budgets)
    assert budgets[0]["limit"] == 4096 - 1024 - 409
    # old outputs left the requests (summarised away, or pruned where no summary was due)…
    assert summarised or any(b.get("results_pruned") for b in budgets)
    results = [e["result"]["content"] for e in events if e["type"] == "tool_result"]
    assert all("full output saved as out_" in r for r in results)  # …cut, saved, and kept
    assert len(results) == 12
