"""A hostile model against a real server: it stays live, bounded, and every session answers after.

One ``duragent serve`` process (agents ``bot``, mode dangerous, and ``asker``, mode ask) and a
fake model in another process. Each attack runs while a probe polls ``/livez``; afterwards the
same session must answer a normal turn, and the last test kills the server and checks every
attacked session again after a restart. The sizes are kept small enough for the default
suite; ``bench/http/hostile_model.py`` runs the issue's full sizes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml

from duragent.testing import Reply
from duragent.testing.hostile import (
    LivenessProbe,
    endless_reply,
    huge_argument,
    huge_reply,
    invalid_unicode_call,
    many_calls,
    nested_arguments,
    peak_rss_bytes,
)
from duragent.testing.hostile_rig import HostileRig

LIVE_SECONDS = 3.0
"""Worst /livez answer tolerated here (the target is 1 s; this machine is shared and noisy:
the measured numbers are in the spec). Before the fixes, these attacks held it for 10+ s."""
MEMORY_BYTES = 500 << 20

ATTACKED: list[tuple[str, str]] = []
"""(session, agent) of every session a test attacked, checked again after a restart."""


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileRig]:
    rig = HostileRig(tmp_path_factory.mktemp("hostile")).start()
    try:
        yield rig
    finally:
        rig.stop()


def _answers_normally(rig: HostileRig, sid: str) -> None:
    rig.script(Reply(text="all fine"))
    answer = rig.send(sid, "are you there?")
    assert answer.status_code == 200, answer.text
    assert answer.json()["content"] == "all fine"


def _bounded(rig: HostileRig, probe: LivenessProbe) -> None:
    assert probe.samples > 0
    assert probe.worst < LIVE_SECONDS, f"/livez took {probe.worst:.1f}s"
    assert peak_rss_bytes(rig.server_pid) < MEMORY_BYTES


def test_a_huge_reply_is_cut_at_the_limit_and_recorded_with_a_note(rig: HostileRig) -> None:
    sid = rig.new_session()
    ATTACKED.append((sid, "bot"))
    rig.script(*huge_reply(8 << 20))
    with LivenessProbe(rig.url) as probe:
        answer = rig.send(sid, "say a lot")
    assert answer.status_code == 200, answer.text
    content = answer.json()["content"]
    assert len(content.encode()) < (512 << 10) + 1024
    assert "max_reply_bytes" in content
    stored = rig.history(sid)[-1]["content"]
    assert stored == content
    _bounded(rig, probe)
    _answers_normally(rig, sid)


def test_an_endless_reply_is_cut_at_the_limit(rig: HostileRig) -> None:
    sid = rig.new_session()
    ATTACKED.append((sid, "bot"))
    rig.script(*endless_reply())
    with LivenessProbe(rig.url) as probe:
        answer = rig.send(sid, "never stop")
    assert answer.status_code == 200, answer.text
    assert "max_reply_bytes" in answer.json()["content"]
    _bounded(rig, probe)
    _answers_normally(rig, sid)


def test_a_huge_tool_argument_is_refused_with_a_clear_result(rig: HostileRig) -> None:
    sid = rig.new_session()
    ATTACKED.append((sid, "bot"))
    rig.script(*huge_argument(8 << 20), Reply(text="understood"))
    with LivenessProbe(rig.url) as probe:
        answer = rig.send(sid, "run it")
    assert answer.status_code == 200, answer.text
    assert answer.json()["content"] == "understood"
    tool = next(m for m in rig.history(sid) if m["role"] == "tool")
    assert tool["success"] is False
    assert "max_tool_argument_bytes" in tool["content"]
    _bounded(rig, probe)
    _answers_normally(rig, sid)


def test_deeply_nested_arguments_are_refused_and_the_response_is_recorded(
    rig: HostileRig,
) -> None:
    sid = rig.new_session()
    ATTACKED.append((sid, "bot"))
    rig.script(*nested_arguments(100_000), Reply(text="flat then"))
    answer = rig.send(sid, "nest")
    assert answer.status_code == 200, answer.text
    history = rig.history(sid)
    assert any(m["role"] == "assistant" and m.get("tool_calls") for m in history)
    tool = next(m for m in history if m["role"] == "tool")
    assert "max_tool_argument_depth" in tool["content"]
    _answers_normally(rig, sid)


def test_calls_beyond_the_per_response_limit_are_skipped_with_a_result(rig: HostileRig) -> None:
    sid = rig.new_session()
    ATTACKED.append((sid, "bot"))
    rig.script(*many_calls(200), Reply(text="did some"))
    answer = rig.send(sid, "run them all")
    assert answer.status_code == 200, answer.text
    results = [m for m in rig.history(sid) if m["role"] == "tool"]
    assert len(results) == 200  # every call has its result: the history stays valid
    skipped = [m for m in results if "max_tool_calls_per_response" in m["content"]]
    assert len(skipped) == 200 - 32
    _answers_normally(rig, sid)


def test_invalid_unicode_from_the_model_is_repaired_where_it_enters(rig: HostileRig) -> None:
    sid = rig.new_session()
    ATTACKED.append((sid, "bot"))
    rig.script(*invalid_unicode_call(), Reply(text="ran"))
    answer = rig.send(sid, "go")
    assert answer.status_code == 200, answer.text
    call = next(m for m in rig.history(sid) if m.get("tool_calls"))["tool_calls"][0]
    assert "\ufffd" in json.dumps(call["arguments"], ensure_ascii=False)
    _answers_normally(rig, sid)


def test_a_streamed_turn_with_invalid_unicode_ends_with_done(rig: HostileRig) -> None:
    sid = rig.new_session()
    ATTACKED.append((sid, "bot"))
    rig.script(*invalid_unicode_call(), Reply(text="ran"))
    names = rig.stream(sid, "go")
    assert names[-1] == "done", names
    _answers_normally(rig, sid)


def test_allow_always_on_a_call_with_invalid_unicode_keeps_the_agent_working(
    rig: HostileRig,
) -> None:
    sid = rig.new_session("asker")
    ATTACKED.append((sid, "asker"))
    rig.script(*invalid_unicode_call(), Reply(text="ran"))
    paused = rig.send(sid, "go")
    assert paused.status_code == 202, paused.text
    call_id = paused.json()["call_id"]
    done = rig.client.post(
        f"/api/v1/sessions/{sid}/approve", json={"call_id": call_id, "decision": "allow_always"}
    )
    assert done.status_code == 200, done.text
    local = rig.root / ".duragent" / "agents" / "asker" / "policy.local.yaml"
    allow = yaml.safe_load(local.read_text(encoding="utf-8"))["allow"]
    assert any("\ufffd" in pattern for pattern in allow)
    _answers_normally(rig, sid)
    _answers_normally(rig, rig.new_session("asker"))


def test_every_attacked_session_answers_after_a_restart(rig: HostileRig) -> None:
    assert ATTACKED
    rig.kill_server()
    rig.start_server()
    with LivenessProbe(rig.url) as probe:
        for sid, _agent in ATTACKED:
            _answers_normally(rig, sid)
    assert probe.worst < LIVE_SECONDS
    assert peak_rss_bytes(rig.server_pid) < MEMORY_BYTES
