"""Crash tests of the durable session layer: a real child process, killed with SIGKILL.

The child is ``crash_worker.py``; it writes an ack file (fsync'd after every durable call
returned), which is the ground truth checked here after restarts. See DESIGN.md §4.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from duragent.core.events import Event, EventType
from duragent.core.messages import Role
from duragent.session import RegistrySettings, SessionHandle, SessionRegistry, UserMessageResult
from duragent.session.state import INTERRUPTED_RESULT
from duragent.store import SessionStore
from tests.session.crash_worker import Worker, content_sha, read_records, run_campaign, user_text

CYCLES = 50


def sessions_and_acks(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "sessions", tmp_path / "acks.jsonl"


def run_and_kill(tmp_path: Path, script: list[list[Any]], seed: int = 1) -> list[dict[str, Any]]:
    """Run a scripted worker until it is done, SIGKILL it, and return the ack records."""
    sessions, acks = sessions_and_acks(tmp_path)
    with Worker(sessions, acks, seed, script=script) as worker:
        worker.wait_for("DONE")
        worker.kill()
    return read_records(acks)


Call = Callable[[SessionHandle], Awaitable[Any]]


async def _in_process(sessions: Path, session_id: str, *calls: Call) -> list[Any]:
    registry = SessionRegistry(SessionStore(sessions), RegistrySettings())
    await registry.open()
    try:
        return [await call(registry.handle(session_id)) for call in calls]
    finally:
        await registry.aclose()


def restart_and_call(sessions: Path, session_id: str, *calls: Call) -> list[Any]:
    """Open the sessions in this process (a restart) and run ``calls`` on one session."""
    return asyncio.run(_in_process(sessions, session_id, *calls))


def logged_events(session_dir: Path) -> list[Event]:
    """Every well-formed event line in the session's files, archive first, as written."""
    events: list[Event] = []
    for name in ("events.archive.jsonl", "events.jsonl"):
        path = session_dir / name
        if path.exists():
            lines = path.read_bytes().split(b"\n")
            events.extend(Event.from_json(line) for line in lines if line.strip())
    return events


def test_fifty_sigkills_at_random_moments_lose_nothing_and_leave_no_tool_unexplained(
    tmp_path: Path,
) -> None:
    result = run_campaign(tmp_path, cycles=CYCLES, seed=20240611)
    verdict = result.verdict
    assert result.kills == CYCLES
    assert verdict.ok, verdict.summary()
    assert not result.logged_errors, "\n".join(result.logged_errors[:20])
    assert verdict.sessions >= 5
    assert verdict.acknowledged > 10 * CYCLES  # the kills interrupted real work
    assert verdict.redeliveries > 0
    inside_writes = sum(result.kill_phases[p] for p in ("append", "snapshot", "rollover"))
    assert inside_writes > 0, result.kill_phases  # some kills landed inside a durable write
    # Some kills landed while a real tool ran: every tool that started has its call on disk
    # and exactly one result (checked in the verdict), and none of its processes survived.
    assert verdict.tools_interrupted > 0, (verdict.tools_started, result.kill_phases)
    assert not result.tool_survivors, "\n".join(result.tool_survivors)


def test_a_user_message_acknowledged_just_before_the_kill_is_there_once_after_restart(
    tmp_path: Path,
) -> None:
    records = run_and_kill(tmp_path, [["create"], ["user", "m1"], ["final"], ["user", "m2"]])
    sid = next(r["sid"] for r in records if r["kind"] == "session")
    acked = next(r for r in records if r["kind"] == "user" and r["pid"] == f"{sid}:m2")
    sessions, _ = sessions_and_acks(tmp_path)

    history, window = restart_and_call(
        sessions, sid, lambda s: s.events(include_archive=True), lambda s: s.messages()
    )

    copies = [e for e in history if e.data.get("platform_message_id") == f"{sid}:m2"]
    assert [e.seq for e in copies] == [acked["seq"]]
    assert copies[0].data["content"] == user_text(sid, f"{sid}:m2")
    assert [e.seq for e in history] == list(range(1, len(history) + 1))
    assert window[-1].role is Role.USER
    assert content_sha(window[-1].content) == acked["sha"]


def test_a_redelivered_message_after_restart_is_a_duplicate_that_says_whether_it_was_answered(
    tmp_path: Path,
) -> None:
    records = run_and_kill(tmp_path, [["create"], ["user", "a"], ["final"], ["user", "b"]])
    sid = next(r["sid"] for r in records if r["kind"] == "session")
    seq = {r["pid"]: r["seq"] for r in records if r["kind"] == "user"}
    sessions, _ = sessions_and_acks(tmp_path)
    a, b = f"{sid}:a", f"{sid}:b"

    answered, unanswered, history = restart_and_call(
        sessions,
        sid,
        lambda s: s.add_user_message(user_text(sid, a), platform_message_id=a),
        lambda s: s.add_user_message(user_text(sid, b), platform_message_id=b),
        lambda s: s.events(include_archive=True),
    )

    assert answered == UserMessageResult(seq=seq[a], duplicate=True, answered=True)
    assert unanswered == UserMessageResult(seq=seq[b], duplicate=True, answered=False)
    users = [e for e in history if e.type == EventType.USER_MESSAGE]
    assert [e.data["platform_message_id"] for e in users] == [a, b]


def test_an_unanswered_message_that_rolled_the_checkpoint_is_not_reported_answered_on_redelivery(
    tmp_path: Path,
) -> None:
    # 49 messages (one turn with two tool calls, then 22 plain turns), then the 50th message, a
    # user message, rolls the checkpoint and is snapshotted (seq 51); the kill comes before the
    # reply. The platform redelivers it after the restart: it must not count as answered.
    script: list[list[Any]] = [
        ["create"],
        ["user", "t0"],
        ["tools", ["call_1", "call_2"]],
        ["result", "call_1"],
        ["result", "call_2"],
        ["final"],
    ]
    for turn in range(1, 23):
        script += [["user", f"t{turn}"], ["final"]]
    script.append(["user", "last"])
    records = run_and_kill(tmp_path, script)
    sid = next(r["sid"] for r in records if r["kind"] == "session")
    last = f"{sid}:last"
    acked = next(r for r in records if r["kind"] == "user" and r["pid"] == last)
    sessions, _ = sessions_and_acks(tmp_path)

    (result,) = restart_and_call(
        sessions,
        sid,
        lambda s: s.add_user_message(user_text(sid, last), platform_message_id=last),
    )

    assert acked["seq"] == 51
    assert result.duplicate
    assert not result.answered, "no final reply follows it, yet the redelivery counts as answered"
    assert result.seq == acked["seq"]


def test_a_tool_call_cut_off_by_the_kill_gets_a_persisted_interrupted_result(
    tmp_path: Path,
) -> None:
    script: list[list[Any]] = [
        ["create"],
        ["user", "u1"],
        ["tools", ["call_done", "call_cut"]],
        ["result", "call_done"],
        ["flush"],
    ]
    records = run_and_kill(tmp_path, script)
    sid = next(r["sid"] for r in records if r["kind"] == "session")
    sessions, _ = sessions_and_acks(tmp_path)
    folder = sessions / sid

    def results_for(call_id: str) -> list[str]:
        return [
            e.data["result"]["content"]
            for e in logged_events(folder)
            if e.type == EventType.TOOL_RESULT and e.data.get("call_id") == call_id
        ]

    assert results_for("call_cut") == []
    for restart in (1, 2):  # recovered in a child that is SIGKILLed again: no graceful close
        run_and_kill(tmp_path, [], seed=restart)
        assert results_for("call_cut") == [INTERRUPTED_RESULT], f"after restart {restart}"
        assert len(results_for("call_done")) == 1
    raw = (folder / "events.jsonl").read_text(encoding="utf-8")
    assert json.dumps(INTERRUPTED_RESULT) in raw

    (window,) = restart_and_call(sessions, sid, lambda s: s.messages())
    assert [m.role for m in window] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL]
    assert [m.tool_call_id for m in window[2:]] == ["call_done", "call_cut"]
    assert window[3].content == INTERRUPTED_RESULT


def test_a_kill_in_the_middle_of_archiving_loses_no_event_from_the_full_history(
    tmp_path: Path,
) -> None:
    # 25 turns: the 50th message (seq 51) rolls the checkpoint; the snapshot follows and then the
    # rollover, whose append to events.archive.jsonl is cut halfway by SIGKILL.
    sessions, acks = sessions_and_acks(tmp_path)
    first: list[list[Any]] = [["create"]]
    for turn in range(25):
        first += [["user", f"a{turn}"], ["final"]]
    with Worker(sessions, acks, 1, script=first, tear_archive=True) as worker:
        assert worker.wait_exit() == -signal.SIGKILL
    sid = next(r["sid"] for r in read_records(acks) if r["kind"] == "session")
    assert (sessions / sid / "events.archive.jsonl").exists()

    # Restarted: 25 more turns roll the next checkpoint (seq 101) and roll over again.
    second: list[list[Any]] = []
    for turn in range(25):
        second += [["user", f"b{turn}"], ["final"]]
    run_and_kill(tmp_path, second, seed=2)

    (history,) = restart_and_call(sessions, sid, lambda s: s.events(include_archive=True))
    seqs = [e.seq for e in history]
    missing = sorted(set(range(1, max(seqs) + 1)) - set(seqs))
    assert not missing, f"acknowledged events missing from the full history: {missing}"
    acked = {r["seq"] for r in read_records(acks) if r["kind"] in ("user", "final")}
    assert acked <= set(seqs)
