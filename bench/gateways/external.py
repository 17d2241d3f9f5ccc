"""External gateway throughput and latency: ``duragent serve`` with the fake gateway as its child.

What is measured is the whole plugin path: the bench writes a ``message_received`` through the
fake gateway's control socket, the fake (``python -m duragent.testing.fake_gateway``, a child
of ``duragent serve``) writes it on its stdout, duragent records it, runs the instant offline
model's turn, writes ``send_message`` on the child's stdin, the fake confirms it and passes it
back to the bench. The fake's relay (JSON through a unix socket, Python threads) is part of the
number, as the fake Bot API server is part of the Telegram bench's.

- ``duragent serve`` runs as a real subprocess (a fresh workspace per chat count), one
  offline-model DM agent, no tools: every reply is one ``send_message``.
- **closed loop** (throughput): every chat writes its next message ``--think`` seconds (default
  0.05) after the reply to its previous one arrived (1, 50 or 1,000 in flight); messages/s =
  replies / (last reply - first message). One unmeasured message per chat first creates the
  sessions. Without the pause the next message arrives while its session still records the
  previous delivery (the bench sees the reply before the gateway's confirmation reaches
  duragent), and the kit's DM debounce (1.5 s, by design) holds it: a person never answers
  within milliseconds, a benchmark does.
- **open loop** (latency, 50 and 1,000 chats): messages at a fixed rate (``--rate``, default
  300/s) round-robin over the chats; p50/p99 of message → ``send_message``. Messages of a chat
  that arrive while its turn runs share one reply (the DM ``batch`` queue); each counts as
  answered by the reply to it or to a later message of its chat.

    .venv/bin/python -m bench.gateways.external          # a minute or two
    .venv/bin/python -m bench.gateways.external --quick

Targets (issue #17, as Telegram's): >= 300 messages/s at 1,000 chats with p99 <= 250 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.rigs.table import pct
from duragent.testing.gateway_control import FakeChild, GatewayControl, message
from duragent.testing.serve_process import ServeProcess

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: bot
spec:
  model:
    provider: offline
    name: duragent-offline
"""


QUOTED = re.compile(r"message (\d+)")
"""The offline model's quote of the message it answers (the bench sends ``message <n>``)."""


@dataclass
class ExternalPhase:
    """What one load run saw: when each message went, when each chat was last answered."""

    sent: dict[str, float] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    replies: int = 0
    first: float = 0.0
    last: float = 0.0


class Bench:
    """Drives one ``duragent serve`` through its external gateway (see module docstring)."""

    def __init__(self, control: GatewayControl, child: FakeChild) -> None:
        self.child = child
        self.phase = ExternalPhase()
        self.waiting: dict[str, list[str]] = {}  # chat → its messages not yet answered
        self.answered: dict[str, asyncio.Event] = {}
        self.drained = asyncio.Event()
        """Set when no message waits for its reply (the open loop's end)."""
        control.on_command = self._command

    def _command(self, _child: FakeChild, command: dict[str, Any]) -> None:
        if command.get("type") != "send_message":
            return
        now = time.monotonic()
        phase = self.phase
        phase.replies += 1
        phase.last = now
        chat = str(command["chat_id"])
        pending = self.waiting.get(chat, [])
        # The offline model quotes the newest message its turn read ("message <n>"): that one
        # and every earlier message of the chat are answered. (``reply_to`` names the first
        # message of a turn; a turn for several messages, the DM queue's batch, covers more.)
        quoted = QUOTED.search(str(command.get("content", "")))
        newest = f"{chat}-{quoted[1]}" if quoted else command.get("reply_to")
        if newest in pending:
            done = pending[: pending.index(newest) + 1]
            del pending[: len(done)]
            phase.latencies.extend(now - phase.sent[m] for m in done)
        event = self.answered.get(chat)
        if event is not None:
            event.set()
        if not pending and not any(self.waiting.values()):
            self.drained.set()

    async def send(self, chat: str, n: int) -> None:
        message_id = f"{chat}-{n}"
        at = time.monotonic()
        self.phase.sent[message_id] = at
        self.phase.first = self.phase.first or at
        self.waiting.setdefault(chat, []).append(message_id)
        await self.child.emit(message(chat, f"message {n}", message_id=message_id, sender_id=chat))

    async def closed_loop(
        self, chats: list[str], per_chat: int, start: int, think: float
    ) -> ExternalPhase:
        self.phase = ExternalPhase()

        async def one(chat: str) -> None:
            for n in range(start, start + per_chat):
                event = self.answered[chat] = asyncio.Event()
                await self.send(chat, n)
                async with asyncio.timeout(60):
                    await event.wait()
                await asyncio.sleep(think)

        await asyncio.gather(*(one(c) for c in chats))
        return self.phase

    async def open_loop(
        self, chats: list[str], rate: float, seconds: float, start: int
    ) -> ExternalPhase:
        self.phase = ExternalPhase()
        total = int(rate * seconds)
        began = time.monotonic()
        for i in range(total):
            delay = began + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await self.send(chats[i % len(chats)], start + i // len(chats))
        self.drained.clear()
        if any(self.waiting.values()):
            async with asyncio.timeout(60):
                await self.drained.wait()
        return self.phase


def report(title: str, phase: ExternalPhase, messages: int) -> None:
    span = max(phase.last - phase.first, 1e-9)
    lat = phase.latencies
    print(
        f"| {title} | {messages} | {messages / span:,.0f} | {pct(lat, 0.5) * 1000:.1f} | "
        f"{pct(lat, 0.99) * 1000:.1f} | {phase.replies} |",
        flush=True,
    )


async def run_one(chats: int, per_chat: int, rate: float, seconds: float, think: float) -> None:
    with tempfile.TemporaryDirectory(prefix="extbench") as tmp:
        root = Path(tmp)
        agent = root / ".duragent" / "agents" / "bot"
        agent.mkdir(parents=True)
        (agent / "agent.yaml").write_text(AGENT)
        async with GatewayControl() as control:
            args = ["-m", "duragent.testing.fake_gateway", "--control", str(control.path)]
            (root / "duragent.yaml").write_text(
                "server:\n  host: 127.0.0.1\nsessions:\n  max_live_actors: 2000\n"
                "gateways:\n  external:\n    - name: fake\n"
                f"      command: {sys.executable}\n      args: {args!r}\n"
            )
            serve = ServeProcess(root / "duragent.yaml")
            serve.start()
            try:
                child = await control.child(within=60)
                bench = Bench(control, child)
                ids = [str(10_000 + i) for i in range(chats)]
                await bench.closed_loop(ids, 1, 0, think)  # sessions exist from here on
                phase = await bench.closed_loop(ids, per_chat, 1, think)
                report(f"closed loop, {chats} chats", phase, chats * per_chat)
                if chats > 1:
                    phase = await bench.open_loop(ids, rate, seconds, 1 + per_chat)
                    report(f"open loop {rate:g}/s, {chats} chats", phase, len(phase.sent))
            finally:
                serve.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--think", type=float, default=0.05)
    args = parser.parse_args()
    seconds = 3.0 if args.quick else args.seconds
    print("| load | messages | messages/s | p50 ms | p99 ms | replies |")
    print("|---|---|---|---|---|---|")
    for chats, per_chat in ((1, 100), (50, 20), (1000, 2 if args.quick else 4)):
        await run_one(chats, per_chat, args.rate, seconds, args.think)


if __name__ == "__main__":
    asyncio.run(main())
