"""Issue #20 as a user meets it: summaries, their markers, pins and saved tool outputs.

Everything goes through ``duragent serve`` (a child process), its HTTP API and the files in
``.duragent/sessions``: the offline model (no network) with a 4K window, so a dozen messages
pass the summaries threshold. The offline model writes no summary itself (it only answers
fixed text): the summaries are the extractive ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.acceptance.served import Served, Workspace

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
