"""Issue #20 as a user meets it: summaries, their markers, pins and saved tool outputs.

Everything goes through ``duragent serve`` (a child process), its HTTP API and the files in
``.duragent/sessions``: the offline model (no network) with a 4K window, so a dozen messages
pass the summaries threshold. The offline model writes no summary itself (it only answers
fixed text): the summaries are the extractive ones.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from duragent.testing import RecordedRequest, Reply, ScriptItem, ToolCallReply
from duragent.testing.fake_llm_server import ScriptedLLMServer
from tests.acceptance.served import Served, Workspace
from tests.turns.summary_fixtures import is_summary_request

SMALL_WINDOW = """\
    max_input_tokens: 4096
  session:
    context:
      max_tool_result_tokens: 200
      summaries:
        threshold: 0.5
  tools:
    - type: builtin
      name: bash
"""

WORDS = " ".join(f"word{k}" for k in range(60))


def events(served: Served, session_id: str) -> list[dict[str, object]]:
    """Every event of the session on disk: the archive, then the live log."""
    folder = served.workspace.root / ".duragent" / "sessions" / session_id
    lines: list[dict[str, object]] = []
    for name in ("events.archive.jsonl", "events.jsonl"):
        path = folder / name
        if path.exists():
            lines += [json.loads(line) for line in path.read_text().splitlines() if line]
    return lines


def long_chat(served: Served, turns: int = 10) -> str:
    session_id = served.new_session()
    for n in range(1, turns + 1):
        assert served.say(session_id, f"message number {n}: {WORDS}").status_code == 200
    return session_id


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    ws.agent(spec_extra=SMALL_WINDOW, policy="mode: dangerous\n")
    return ws


def test_a_served_offline_agent_writes_extractive_summaries_that_keep_the_old_messages(
    workspace: Workspace,
) -> None:
    with workspace.serve() as served:
        session_id = long_chat(served)
        summaries = [e for e in events(served, session_id) if e["type"] == "summary"]
    assert summaries, "no summary event after ten long messages in a 4K window"
    first = summaries[0]
    assert isinstance(first["through_seq"], int)
    assert first["through_seq"] >= 2
    assert first["extractive"] is True
    assert first["model"] == "extractive"
    # the summary holds what the user said, not the offline model's fixed reply
    assert "message number 1" in str(first["summary"])
    assert "[offline model]" not in str(first["summary"]).splitlines()[0]


def test_the_history_api_shows_a_summary_marker_after_the_messages_it_replaced(
    workspace: Workspace,
) -> None:
    with workspace.serve() as served:
        session_id = long_chat(served)
        history = served.history(session_id)
    markers = [m for m in history if m["role"] == "summary"]
    assert markers
    marker = markers[0]
    assert set(marker) >= {"role", "content", "round", "through_seq", "messages", "seq"}
    assert marker["round"] == 1
    position = history.index(marker)
    before = [m["seq"] for m in history[:position]]
    # the summarised messages are still listed (compaction: archive), before the marker
    assert marker["through_seq"] in before
    seqs = [int(str(m["seq"])) for m in history]
    assert seqs == sorted(seqs)


def test_a_streaming_turn_sends_a_summary_event_when_it_writes_one(
    workspace: Workspace,
) -> None:
    with workspace.serve() as served:
        session_id = long_chat(served, turns=3)
        seen: list[str] = []
        for n in range(6):
            with served.http.stream(
                "POST",
                f"/api/v1/sessions/{session_id}/stream",
                json={"content": f"streamed {n}: {WORDS}"},
            ) as answer:
                assert answer.status_code == 200
                seen += [
                    line.removeprefix("event: ")
                    for line in answer.iter_lines()
                    if line.startswith("event: ")
                ]
            if "summary" in seen:
                break
    assert "summary" in seen
    assert seen[0] == "start"
    assert seen[-1] == "done"
    assert seen.index("summary") < seen.index("done")


def test_pins_over_http_are_durable_and_listed_with_the_task(workspace: Workspace) -> None:
    with workspace.serve() as served:
        session_id = served.new_session()
        assert served.say(session_id, "the task: plan the trip").status_code == 200
        base = f"/api/v1/sessions/{session_id}/pins"
        made = served.http.post(base, json={"text": "budget 500 EUR", "kind": "decision"})
        assert made.status_code == 201, made.text
        pin_id = made.json()["pin_id"]
        note = served.http.post(base, json={"text": "vegetarian"})
        assert note.status_code == 201
        assert served.http.post(base, json={"text": "x", "kind": "wish"}).status_code == 400
        assert served.http.post(base, json={"text": ""}).status_code == 400
        assert served.http.get("/api/v1/sessions/session_none/pins").status_code == 404
        gone = served.http.delete(f"{base}/{note.json()['pin_id']}")
        assert gone.status_code == 204
        assert served.http.delete(f"{base}/{note.json()['pin_id']}").status_code == 404
    with workspace.serve() as served:  # a restart keeps them
        listed = served.http.get(f"/api/v1/sessions/{session_id}/pins").json()
    assert [(p["pin_id"], p["kind"], p["text"]) for p in listed["pins"]] == [
        (pin_id, "decision", "budget 500 EUR")
    ]
    assert listed["task"] == "the task: plan the trip"
    kinds = [e["type"] for e in events(served, session_id)]
    assert kinds.count("pin") == 2
    assert kinds.count("unpin") == 1


def test_a_cut_tool_output_is_saved_on_disk_and_read_back_with_tool_output(
    workspace: Workspace,
) -> None:
    with workspace.serve() as served:
        session_id = served.new_session()
        answer = served.say(session_id, 'go\n!call bash {"command": "seq 1 3000"}')
        assert answer.status_code == 200
        tool = next(m for m in served.history(session_id) if m["role"] == "tool")
        content = str(tool["content"])
        assert "full output saved as out_" in content
        assert "read it with tool_output" in content
        output_id = content.split("full output saved as ")[1].split(",")[0]
        saved = (
            workspace.root / ".duragent" / "sessions" / session_id / "outputs" / f"{output_id}.txt"
        )
        assert saved.read_text().splitlines()[-1] == "3000"
        args = json.dumps({"id": output_id, "mode": "grep", "pattern": "2999"})
        read = served.say(session_id, f"!call tool_output {args}")
        assert read.status_code == 200
        assert "2999: 2999" in read.json()["content"]
        other = served.new_session()
        refused = served.say(other, f"!call tool_output {args}").json()["content"]
        assert "2999: 2999" not in refused  # a session reads only its own outputs


def test_summaries_and_compaction_are_separate_settings(workspace: Workspace) -> None:
    workspace.config("sessions:\n  compaction: disabled\n")
    with workspace.serve() as served:
        on = long_chat(served)
        assert any(e["type"] == "summary" for e in events(served, on))
        # compaction: disabled keeps every event in the live log
        folder = workspace.root / ".duragent" / "sessions" / on
        assert not (folder / "events.archive.jsonl").exists()
    workspace.agent(
        spec_extra=SMALL_WINDOW.replace("threshold: 0.5", "enabled: false"),
    )
    with workspace.serve() as served:
        off = long_chat(served)
        assert not any(e["type"] == "summary" for e in events(served, off))
    doctor = workspace.cli("doctor")
    assert "summaries off" in doctor.stdout or "summaries: off" in doctor.stdout, doctor.stdout


def test_pin_and_unpin_in_a_telegram_chat_change_the_sessions_pins(tmp_path: Path) -> None:
    from duragent.testing.fake_telegram import FakeTelegram

    token = "123456:ABCdefGHIjklMNOpqrSTUvwxYZ0123456789"
    with FakeTelegram(token=token) as telegram:
        ws = Workspace(tmp_path / "ws", env={"TELEGRAM_BOT_TOKEN": token})
        ws.agent()
        ws.config(
            "gateways:\n  telegram:\n    bot_token: ${TELEGRAM_BOT_TOKEN}\n"
            f"    base_url: {telegram.url}\n    poll_timeout_seconds: 1\n"
        )

        def replies(count: int) -> list[str]:
            deadline = time.monotonic() + 120
            while len(telegram.sent_messages(77)) < count and time.monotonic() < deadline:
                time.sleep(0.05)
            return telegram.sent_messages(77)

        with ws.serve() as served:
            telegram.push_message(chat_id=77, text="plan my trip")
            replies(1)
            telegram.push_message(chat_id=77, text="/pin the budget is 500 EUR")
            told = replies(2)[-1]
            sessions = served.http.get("/api/v1/sessions").json()["sessions"]
            assert len(sessions) == 1
            pins_url = f"/api/v1/sessions/{sessions[0]['session_id']}/pins"
            pins = served.http.get(pins_url).json()["pins"]
            assert [(p["text"], p["source"]) for p in pins] == [("the budget is 500 EUR", "user")]
            assert pins[0]["pin_id"] in told  # the chat is told the id to unpin it
            telegram.push_message(chat_id=77, text=f"/unpin {pins[0]['pin_id']}")
            replies(3)
            assert served.http.get(pins_url).json()["pins"] == []


def scripted_agent(base_url: str, context: str) -> str:
    """``spec_extra`` for an agent on the scripted model server (an OpenAI-compatible one)."""
    return (
        f"    base_url: {base_url}\n    max_input_tokens: 8192\n"
        f"  session:\n    context:\n{context}"
        "  tools:\n    - type: builtin\n      name: bash\n"
    )


def model_answer(request: RecordedRequest) -> ScriptItem:
    """The agent's model: ``run N`` calls bash for a long output; after a result, ``done``."""
    if is_summary_request(request):
        return Reply(text="## Goal\n- the user runs numbered jobs (SUMMARY-BY-MODEL)")
    last = request.json["messages"][-1]
    if last["role"] == "user" and str(last["content"]).startswith("run"):
        number = str(last["content"]).split()[1]
        command = f"seq 1 300 | sed 's/^/job{number} line /'"
        return Reply(tool_calls=[ToolCallReply(name="bash", arguments={"command": command})])
    return Reply(text="done")


def test_old_tool_outputs_are_pruned_from_requests_but_kept_in_events_jsonl(
    tmp_path: Path,
) -> None:
    context = (
        "      summaries:\n        enabled: false\n"
        "      prune:\n        protect_tokens: 400\n        minimum_tokens: 100\n"
    )
    with ScriptedLLMServer(responder=model_answer) as model:
        ws = Workspace(tmp_path / "ws")
        ws.agent(
            spec_extra=scripted_agent(model.openai_base_url, context), policy="mode: dangerous\n"
        )
        ws.config("")
        text = (ws.root / ".duragent/agents/assistant/agent.yaml").read_text()
        (ws.root / ".duragent/agents/assistant/agent.yaml").write_text(
            text.replace("provider: offline", "provider: scripted")
        )
        with ws.serve() as served:
            sid = served.new_session()
            for n in range(4):
                assert served.say(sid, f"run {n}").status_code == 200
        starts = [
            r.json["messages"]
            for r in model.requests
            if r.json["messages"][-1] == {"role": "user", "content": "run 2"}
        ]
    tool_texts = [str(m.get("content")) for m in starts[0] if m["role"] == "tool"]
    assert len(tool_texts) == 2
    assert tool_texts[0].startswith("[old tool output pruned from the context: ~")
    assert "job1 line 300" in tool_texts[1]  # the newest old output is within protect_tokens
    logged = [e for e in events(served, sid) if e["type"] == "tool_result"]
    assert "job0 line 300" in json.dumps(logged[0])  # the log keeps every output


def test_a_summary_written_by_the_model_is_sent_back_in_the_reference_block(
    tmp_path: Path,
) -> None:
    context = (
        "      prune:\n        enabled: false\n"
        "      summaries:\n        threshold: 0.2\n        model: cheap-summariser\n"
    )
    with ScriptedLLMServer(responder=model_answer) as model:
        ws = Workspace(tmp_path / "ws")
        ws.agent(
            spec_extra=scripted_agent(model.openai_base_url, context), policy="mode: dangerous\n"
        )
        agent_yaml = ws.root / ".duragent/agents/assistant/agent.yaml"
        agent_yaml.write_text(
            agent_yaml.read_text().replace("provider: offline", "provider: scripted")
        )
        with ws.serve() as served:
            sid = served.new_session()
            for n in range(6):
                assert served.say(sid, f"run {n}").status_code == 200
            markers = [m for m in served.history(sid) if m["role"] == "summary"]
        asked = [r for r in model.requests if is_summary_request(r)]
        after = [r for r in model.requests if not is_summary_request(r)][-1]
    assert asked, "the summariser was never asked"
    assert all(r.json["model"] == "cheap-summariser" for r in asked)
    summaries = [e for e in events(served, sid) if e["type"] == "summary"]
    assert summaries
    assert summaries[-1]["model"] == "cheap-summariser"
    assert "extractive" not in summaries[-1] or summaries[-1]["extractive"] is False
    assert "SUMMARY-BY-MODEL" in str(markers[-1]["content"])
    reference = str(after.json["messages"][1]["content"])
    assert after.json["messages"][1]["role"] == "user"  # quoted: never system text
    assert "SUMMARY-BY-MODEL" in reference
    assert "run 0" in reference  # the task (the first message) is pinned


def test_with_compaction_discard_the_history_api_still_shows_the_window_and_its_marker(
    workspace: Workspace,
) -> None:
    workspace.config("sessions:\n  compaction: discard\n")
    with workspace.serve() as served:
        session_id = long_chat(served, turns=12)
        history = served.history(session_id)
    with workspace.serve() as served:  # a restart: rebuilt from state.yaml and the log
        after_restart = served.history(session_id)
        assert served.say(session_id, "still there?").status_code == 200
    markers = [m for m in history if m["role"] == "summary"]
    assert markers, "no summary marker: the rollover deleted the summary event"
    # the window the model still sees is listed: every message after what the summary
    # replaced, up to the latest (how many depends on where the last summary fell)
    start = int(str(markers[-1]["through_seq"]))
    window = [m for m in history if m["role"] == "user" and int(str(m["seq"])) > start]
    numbers = [int(str(m["content"]).split(":")[0].rsplit(" ", 1)[1]) for m in window]
    assert numbers == list(range(13 - len(numbers), 13))
    assert numbers
    assert after_restart == history
