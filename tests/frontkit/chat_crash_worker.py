"""The child program of the chat SIGKILL tests: one chat message, killed at a chosen point.

Run as ``python tests/frontkit/chat_crash_worker.py WORKSPACE SENT_FILE KILL_AT TEXT PID``
(it imports only ``duragent`` and the standard library). It offers one message to a
``SessionQueues`` over the offline model, with an outbound port that appends each text it
sends to ``SENT_FILE`` (fsync'd: what the chat platform accepted) and SIGKILLs its own
process at ``KILL_AT``:

- ``typing``: at the first "typing…", after the message was accepted, before its turn;
- ``before_send``: when the reply (already on disk) is about to be sent;
- ``after_send``: once the platform accepted the reply, before the delivery is recorded.

The parent (``test_chat_crash.py``) then recovers in its own process and checks what the
chat received. ``build`` is shared by both sides: the same workspace, store and model.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from duragent.agents import load_catalog
from duragent.agents.spec import QueueSpec
from duragent.frontkit import ChatRef, ChatTurns, Inbound, OutgoingFile, SentMessage
from duragent.frontkit.queue import SessionQueues
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.session import SessionRegistry
from duragent.store import SessionStore
from duragent.testing.local_runner import workspace_runner
from duragent.turns import ProviderPool, TurnRunner

WORKER_PATH = Path(__file__).resolve()
CHAT = ChatRef("telegram", "42")
AGENT_YAML = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: bot
spec:
  model:
    provider: offline
    name: m
"""


def prepare(workspace: Path) -> None:
    """A workspace with one agent on the offline model."""
    agent_dir = workspace / ".duragent" / "agents" / "bot"
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "agent.yaml").write_text(AGENT_YAML)


async def build(workspace: Path) -> tuple[SessionRegistry, TurnRunner, ProviderPool]:
    """The opened registry and a turn runner of ``workspace`` (close both when done)."""
    root = workspace / ".duragent"
    catalog = load_catalog(root / "agents")
    registry = SessionRegistry(SessionStore(root / "sessions"))
    await registry.open()
    providers = ProviderPool()
    return registry, workspace_runner(root, catalog, registry, providers), providers


class FileOutbound:
    """An outbound port whose chat is a file; kills its process at ``kill_at``."""

    def __init__(self, sent_file: Path, kill_at: str) -> None:
        self._sent = sent_file
        self._kill_at = kill_at
        self._count = 0

    def _die_at(self, point: str) -> None:
        if point == self._kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def pieces(self, text: str) -> tuple[str, ...]:
        return (text,) if text.strip() else ()

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        self._die_at("before_send")
        line = json.dumps({"text": text, "reply_to": reply_to}) + "\n"
        fd = os.open(self._sent, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        self._die_at("after_send")
        self._count += 1
        return SentMessage(chat, f"s{self._count}")

    async def send_file(
        self, chat: ChatRef, file: OutgoingFile, *, reply_to: str | None = None
    ) -> SentMessage:
        raise AssertionError("no files in this test")

    async def send_typing(self, chat: ChatRef) -> None:
        self._die_at("typing")

    async def ask_approval(
        self, chat: ChatRef, *, session_id: str, call_id: str, command: str
    ) -> SentMessage:
        raise AssertionError("no approvals in this test")

    async def edit(self, message: SentMessage, text: str) -> None:
        raise AssertionError("no edits in this test")

    async def answer_button(self, callback_id: str, text: str | None = None) -> None:
        raise AssertionError("no buttons in this test")


async def main(workspace: Path, sent_file: Path, kill_at: str, text: str, pid: str) -> None:
    _, runner, _ = await build(workspace)
    outbound = FileOutbound(sent_file, kill_at)
    tasks = BackgroundTasks()
    queues = SessionQueues(runner, ChatTurns(runner, outbound, tasks), outbound, tasks)
    sid = await runner.session_for_chat(CHAT.gateway, CHAT.chat_id, "bot")
    await queues.offer(sid, Inbound(CHAT, text, agent="bot", message_id=pid), QueueSpec())
    print("ACCEPTED", flush=True)
    await asyncio.sleep(60)  # killed long before
    print("NOT KILLED", flush=True)


if __name__ == "__main__":
    workspace, sent, kill_at, text, pid = sys.argv[1:6]
    asyncio.run(main(Path(workspace), Path(sent), kill_at, text, pid))
