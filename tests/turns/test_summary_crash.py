"""SIGKILL during summarisation leaves the old state or the new one, never half; recovery
replays the summary and never asks a model to write it again.

A real child process (``summary_crash_worker.py``) runs a turn whose summariser call the
scripted server (in this process, on a real socket) holds open or answers; the parent kills
the child at a chosen moment and reopens the sessions itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from duragent.core.events import Event, EventType
from duragent.session import RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.testing import RecordedRequest, Reply, ScriptedLLMServer, ScriptItem
from tests.turns.summary_crash_worker import FILLER, SEED_TURNS, WORKER_PATH
from tests.turns.summary_fixtures import faithful_summary, is_summary_request

SEEDED = [t for i in range(SEED_TURNS) for t in (f"seed {i}: {FILLER}", f"seed answer {i}")]


def run_until(
    tmp_path: Path, server: ScriptedLLMServer, ready: Callable[[list[RecordedRequest]], bool]
) -> str:
    """Start the worker, wait until ``ready(requests)``, SIGKILL it; the session id."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, str(WORKER_PATH), str(tmp_path), server.openai_base_url],
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert line.startswith("SEEDED "), line
        sid = line.split()[1]
        deadline = time.monotonic() + 120
        while not ready(list(server.requests)):
            assert proc.poll() is None, "the worker died"
            assert time.monotonic() < deadline, "the worker never got there"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(120)
        return sid
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(120)
        if proc.stdout is not None:
            proc.stdout.close()


def logged(session_dir: Path) -> list[Event]:
    events = []
    for name in ("events.archive.jsonl", "events.jsonl"):
        path = session_dir / name
        if path.exists():
            events += [Event.from_json(x) for x in path.read_text().splitlines() if x.strip()]
    return events


async def recovered(tmp_path: Path, sid: str) -> tuple[list[str], Any]:
    registry = SessionRegistry(
        SessionStore(tmp_path / ".duragent" / "sessions"), RegistrySettings()
    )
    await registry.open()
    try:
        handle = registry.handle(sid)
        return [m.text for m in await handle.messages()], await handle.memory()
    finally:
        await registry.aclose()


def held(request: RecordedRequest) -> ScriptItem:
    return Reply(text="never seen", delay=60)


async def test_a_kill_during_the_summary_call_leaves_the_old_state(tmp_path: Path) -> None:
    def respond(request: RecordedRequest) -> ScriptItem:
        return held(request) if is_summary_request(request) else Reply(text="ok")

    with ScriptedLLMServer(responder=respond) as server:
        sid = run_until(tmp_path, server, lambda rs: any(is_summary_request(r) for r in rs))
    texts, memory = await recovered(tmp_path, sid)
    session_dir = tmp_path / ".duragent" / "sessions" / sid
    assert not [e for e in logged(session_dir) if e.type == EventType.SUMMARY]
    assert memory.summary is None
    assert texts == [*SEEDED, "go on"]  # nothing summarised away, nothing lost


async def test_a_kill_after_the_summary_leaves_the_new_state_and_recovery_never_rewrites_it(
    tmp_path: Path,
) -> None:
    def respond(request: RecordedRequest) -> ScriptItem:
        if is_summary_request(request):
            return Reply(text=faithful_summary(request) + "\n- round one")
        return held(request)  # the agent's call after the summary: killed while it waits

    with ScriptedLLMServer(responder=respond) as server:
        sid = run_until(tmp_path, server, lambda rs: any(not is_summary_request(r) for r in rs))
        before = len(server.requests)
    session_dir = tmp_path / ".duragent" / "sessions" / sid
    summaries = [e for e in logged(session_dir) if e.type == EventType.SUMMARY]
    assert len(summaries) == 1
    count = summaries[0].data["messages"]
    texts, memory = await recovered(tmp_path, sid)
    assert memory.summary is not None
    assert memory.summary.text == summaries[0].data["summary"]
    assert texts == [*SEEDED[count:], "go on"]
    state = yaml.safe_load((session_dir / "state.yaml").read_text())
    assert state["summary"]["summary"] == summaries[0].data["summary"]
    assert before == 2  # one summary call, one agent call: recovery called no model


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
async def test_a_kill_at_a_random_moment_leaves_the_old_state_or_the_new_one(
    tmp_path: Path, seed: int
) -> None:
    import random

    rng = random.Random(seed)
    delay = rng.uniform(0, 0.3)

    def respond(request: RecordedRequest) -> ScriptItem:
        if is_summary_request(request):
            return Reply(text=faithful_summary(request), delay=delay)
        return Reply(text="ok", delay=delay)

    wait_until = time.monotonic() + 10.0
    kill_at: list[float] = []

    def ready(requests: list[RecordedRequest]) -> bool:
        if requests and not kill_at:
            kill_at.append(time.monotonic() + rng.uniform(0, 0.5))
        return (bool(kill_at) and time.monotonic() >= kill_at[0]) or time.monotonic() > wait_until

    with ScriptedLLMServer(responder=respond) as server:
        sid = run_until(tmp_path, server, ready)
    session_dir = tmp_path / ".duragent" / "sessions" / sid
    summaries = [e for e in logged(session_dir) if e.type == EventType.SUMMARY]
    texts, memory = await recovered(tmp_path, sid)
    if not summaries:
        assert memory.summary is None
        assert texts[: len(SEEDED) + 1] == [*SEEDED, "go on"]
    else:
        count = sum(s.data["messages"] for s in summaries)
        assert memory.summary is not None
        assert memory.summary.text == summaries[-1].data["summary"]
        assert texts[: len(SEEDED) + 1 - count] == [*SEEDED[count:], "go on"]
