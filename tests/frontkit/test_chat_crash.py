"""A chat gateway SIGKILLed between accepting a message and recording its reply's delivery.

The child (``chat_crash_worker.py``) offers one message and is killed at a chosen point; the
parent recovers the gateway's chats in its own process, twice, and checks what the chat got.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from duragent.frontkit import ChatTurns, MemoryOutbound
from duragent.frontkit.queue import SessionQueues
from duragent.frontkit.recovery import recover_chats
from duragent.lifecycle.tasks import BackgroundTasks
from tests.frontkit.chat_crash_worker import CHAT, WORKER_PATH, build, prepare
from tests.polling import eventually


def run_child_until_killed(workspace: Path, sent: Path, kill_at: str) -> None:
    cmd = [sys.executable, str(WORKER_PATH), str(workspace), str(sent), kill_at, "hello", "p1"]
    done = subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]


def sent_by_child(sent: Path) -> list[tuple[str | None, str]]:
    if not sent.exists():
        return []
    lines = [json.loads(line) for line in sent.read_text().splitlines()]
    return [(line["reply_to"], line["text"]) for line in lines]


async def recover_in_parent(workspace: Path) -> tuple[list[tuple[str | None, str]], int]:
    """Recover twice (as two restarts would); what the chat got, and the delivered seq."""
    registry, runner, providers = await build(workspace)
    outbound = MemoryOutbound()
    tasks = BackgroundTasks(grace_seconds=2)
    chat = ChatTurns(runner, outbound, tasks, typing_every=0.05)
    queues = SessionQueues(runner, chat, outbound, tasks)
    try:
        await recover_chats("telegram", runner.sessions, chat.delivery, queues)
        assert await eventually(lambda: len(queues) == 0)
        await recover_chats("telegram", runner.sessions, chat.delivery, queues)
        assert await eventually(lambda: len(queues) == 0)
        sid = await runner.session_for_chat(CHAT.gateway, CHAT.chat_id, "bot")
        info = await registry.info(sid)
        assert not info.awaits_answer
        assert info.last_delivered_seq == info.last_reply_seq > 0
    finally:
        await tasks.stop()
        await registry.aclose()
        await providers.aclose()
    return [(a.reply_to, a.text) for a in outbound.of_kind("text")], info.last_delivered_seq


@pytest.mark.parametrize("kill_at", ["typing", "before_send"])
async def test_a_crash_before_the_reply_reached_the_chat_delivers_it_exactly_once(
    tmp_path: Path, kill_at: str
) -> None:
    prepare(tmp_path)
    sent = tmp_path / "sent.jsonl"
    run_child_until_killed(tmp_path, sent, kill_at)
    received, _ = await recover_in_parent(tmp_path)
    assert sent_by_child(sent) == []
    assert len(received) == 1
    reply_to, text = received[0]
    assert reply_to == "p1"
    assert "hello" in text  # the offline model quotes the message it answers


async def test_a_crash_after_the_chat_got_the_reply_sends_it_at_most_once_more(
    tmp_path: Path,
) -> None:
    """No platform lets a send and a local fsync be one step: the one duplicate per crash."""
    prepare(tmp_path)
    sent = tmp_path / "sent.jsonl"
    run_child_until_killed(tmp_path, sent, "after_send")
    received, _ = await recover_in_parent(tmp_path)
    first = sent_by_child(sent)
    assert len(first) == 1
    assert received == first  # the same reply, once more, and never again
