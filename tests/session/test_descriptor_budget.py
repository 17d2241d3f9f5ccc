"""Descriptor pressure: a real server under `ulimit -n 256` with many sessions answers every
message (no 500, no reset) and has every message on disk; the plan fits the defaults."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from duragent.cli.scaffold import scaffold_workspace
from duragent.session.descriptors import (
    MIN_ACTORS,
    PER_CONNECTION,
    needed,
    plan_descriptors,
)
from tests.cli.test_serve import free_port, wait_ready

SESSIONS = 300
CLIENTS = 16


def test_the_defaults_fit_a_limit_of_1024_by_sharing_it() -> None:
    plan = plan_descriptors(1024, max_live=1000, max_connections=1024, active_asks=32)
    assert plan.reserved + PER_CONNECTION * plan.connections + plan.actors <= 1024
    assert plan.actors >= 400
    assert plan.connections >= 200


def test_a_large_limit_keeps_the_configured_numbers() -> None:
    need = needed(max_live=1000, max_connections=1024, active_asks=32)
    plan = plan_descriptors(need, max_live=1000, max_connections=1024, active_asks=32)
    assert (plan.actors, plan.connections) == (1000, 1024)


def test_a_tiny_limit_still_keeps_a_few_actors() -> None:
    plan = plan_descriptors(64, max_live=1000, max_connections=1024, active_asks=32)
    assert plan.actors == MIN_ACTORS


def test_few_actors_leave_the_rest_to_connections() -> None:
    plan = plan_descriptors(1024, max_live=10, max_connections=1024, active_asks=32)
    assert plan.actors == 10
    assert plan.reserved + PER_CONNECTION * plan.connections + plan.actors <= 1024
    assert plan.connections > 400


def _low_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


async def _talk(base: str) -> tuple[list[str], list[str]]:
    """Create SESSIONS sessions and send one message to each, CLIENTS at a time."""
    failures: list[str] = []
    sent: list[str] = []
    gate = asyncio.Semaphore(CLIENTS)
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)

    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:

        async def one(n: int) -> None:
            async with gate:
                try:
                    made = await client.post("/api/v1/sessions", json={"agent": "assistant"})
                    if made.status_code != 201:
                        failures.append(f"create {made.status_code}: {made.text}")
                        return
                    sid = made.json()["session_id"]
                    text = f"message number {n}"
                    reply = await client.post(
                        f"/api/v1/sessions/{sid}/messages", json={"content": text}
                    )
                    if reply.status_code != 200:
                        failures.append(f"send {reply.status_code}: {reply.text}")
                        return
                    sent.append(f"{sid} {text}")
                except httpx.TransportError as exc:
                    failures.append(f"transport {type(exc).__name__}: {exc}")

        await asyncio.gather(*(one(n) for n in range(SESSIONS)))
    return sent, failures


def _on_disk(sessions: Path, sid: str) -> list[dict[str, object]]:
    events = []
    for name in ("events.archive.jsonl", "events.jsonl"):
        path = sessions / sid / name
        if path.exists():
            events += [json.loads(line) for line in path.read_text().splitlines() if line]
    return events


@pytest.mark.timeout(240)
def test_a_server_with_256_descriptors_answers_every_message_of_many_sessions(
    tmp_path: Path,
) -> None:
    scaffold_workspace(tmp_path, "assistant", "offline", "echo")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "duragent", "serve", "-c", str(tmp_path), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_low_limit,
        env=os.environ.copy(),
    )
    try:
        wait_ready(port, server)
        sent, failures = asyncio.run(_talk(f"http://127.0.0.1:{port}"))
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=60)
    assert not failures, (failures[:3], out[-3000:])
    assert server.returncode == 0, out[-3000:]
    assert "sessions.max_live_actors 1000 lowered to" in out
    assert "server.max_connections 1024 lowered to" in out
    assert "Traceback" not in out
    assert "Too many open files" not in out  # the budget held: nothing had to give way
    assert len(sent) == SESSIONS
    sessions = tmp_path / ".duragent" / "sessions"
    for entry in sent:
        sid, text = entry.split(" ", 1)
        events = _on_disk(sessions, sid)
        kinds = [e["type"] for e in events]
        assert {"type": "user_message", "content": text}.items() <= next(
            e for e in events if e["type"] == "user_message"
        ).items(), (sid, kinds)
        assert "assistant_response" in kinds, (sid, kinds)


def _soft_256_hard_4096() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 4096))


def test_the_soft_limit_is_raised_to_the_hard_limit_and_then_the_defaults_fit(
    tmp_path: Path,
) -> None:
    scaffold_workspace(tmp_path, "assistant", "offline", "echo")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "duragent", "serve", "-c", str(tmp_path), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_soft_256_hard_4096,
        env=os.environ.copy(),
    )
    try:
        wait_ready(port, server)
        limits = Path(f"/proc/{server.pid}/limits").read_text()
        line = next(x for x in limits.splitlines() if x.startswith("Max open files"))
        assert line.split()[3:5] == ["4096", "4096"]
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=60)
    assert "open-file limit raised from 256 to 4096" in out
    assert "lowered" not in out
