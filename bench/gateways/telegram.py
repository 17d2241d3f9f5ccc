"""Telegram gateway throughput and latency: the instant offline model against the fake Bot API.

What is measured is our own overhead (python-telegram-bot, the kit's queue, the session's
fsyncs, rendering) between an update appearing at Telegram and the reply's ``sendMessage``:

- the fake Telegram (``python -m duragent.testing.fake_telegram``) runs in a process of its
  own, so it does not share the serving process's CPU; this script pushes updates through its
  ``/_fake/message`` endpoint and reads every Bot API call from ``/_fake/calls``;
- ``duragent serve`` runs as a real subprocess (one fresh workspace per chat count), with the
  rate limiter raised (``max_messages_per_second``, ``…_per_minute_per_group`` and
  ``…_per_second_per_chat`` 100000; Telegram's real limits are about 30/s overall, 20/min per
  group and 1/s per chat);
- one offline-model DM agent, no tools: every reply is one plain message.

Load patterns, per chat count (1, 50, 1,000 chats):

- **closed loop** (throughput): every chat writes its next message as soon as the reply to
  its previous one arrived, so 1, 50 or 1,000 messages are in flight; messages/s = replies /
  (last reply - first update). One message per chat first, unmeasured, creates the sessions.
  Latencies of this phase include the wait behind the other chats' messages.
- **open loop** (latency, 50 and 1,000 chats): updates arrive at a fixed rate (``--rate``,
  default 300/s, the target) round-robin over the chats, whatever the replies do; p50/p99 of
  update → ``sendMessage`` at that load. Messages of a chat that arrive while its turn runs
  are answered by one reply (DMs use the ``batch`` queue); each is counted answered by the
  reply quoting it or a later message of its chat, and how many shared a reply is shown.
  (One chat is not driven open-loop: at any useful rate nearly all replies would be shared.)

Latency is from just before the update is pushed to the fake to the fake receiving the
``sendMessage`` (both ``time.monotonic()``, the same clock in every process). Bot API calls
per reply count every call during the closed-loop phase (``sendChatAction`` too), without and
with ``getUpdates``. RSS of the serving process is read from ``/proc`` after the 1,000-chat
phase (VmRSS now, VmHWM peak).

    .venv/bin/python -m bench.gateways.telegram          # a few minutes
    .venv/bin/python -m bench.gateways.telegram --quick  # two to three minutes

Targets (issue #16): >= 300 messages/s at 1,000 chats with p99 <= 250 ms, <= 3 Bot API calls
per plain reply, RSS <= 250 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from bench.gateways.rig import Driver, FakeProcess
from bench.rigs.process import cpu_seconds, rss_mb
from bench.rigs.table import pct, print_boxed, row
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_campaign import TOKEN

CONFIG = """\
server:
  host: 127.0.0.1
sessions:
  max_live_actors: 2000
gateways:
  telegram:
    bot_token: '{token}'
    base_url: {base_url}
    poll_timeout_seconds: 10
    max_messages_per_second: 100000
    max_messages_per_minute_per_group: 100000
    max_messages_per_second_per_chat: 100000
"""

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


async def run_chats(
    fake: FakeProcess, chats_count: int, per_chat: int, rate: float, seconds: float, base: int
) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-telegram-"))
    keep = False
    try:
        (root / "duragent.yaml").write_text(CONFIG.format(token=TOKEN, base_url=fake.url))
        agent = root / ".duragent" / "agents" / "bot"
        agent.mkdir(parents=True)
        (agent / "agent.yaml").write_text(AGENT)
        serve = ServeProcess(root / "duragent.yaml")
        serve.start()
        driver = Driver(fake.url)
        try:
            await serve.wait_ready()
            chats = [base + i for i in range(chats_count)]
            await driver.sync()
            await driver.closed_loop(chats, 1, 0)  # warm-up: sessions created
            await driver.sync()
            pid = serve.pid
            assert pid is not None
            cpu0 = cpu_seconds(pid)
            phase = await driver.closed_loop(chats, per_chat, 1)
            cpu = cpu_seconds(pid) - cpu0
            elapsed = phase.last_reply - phase.first_push
            rate_seen = phase.answered / elapsed if elapsed > 0 else float("nan")
            label = f"{chats_count} chat{'s' if chats_count > 1 else ''}"
            big = chats_count >= 1000
            row(
                f"{label}: messages/s (closed loop, {phase.replies} msgs)",
                f"{rate_seen:.0f}",
                ">= 300" if big else "",
                rate_seen >= 300 if big else None,
            )
            row(
                f"{label}: duragent serve CPU per message (closed loop)",
                f"{cpu / max(1, phase.answered) * 1e3:.1f} ms",
            )
            lat = phase.latencies
            row(
                f"{label}: closed-loop latency p50 / p99",
                f"{pct(lat, 0.5) * 1e3:.0f} / {pct(lat, 0.99) * 1e3:.0f} ms",
            )
            calls = sum(phase.methods.values())
            without = calls - phase.methods["getUpdates"]
            per_reply = without / max(1, phase.replies)
            row(
                f"{label}: Bot API calls per reply (no getUpdates)",
                f"{per_reply:.2f}",
                "<= 3",
                per_reply <= 3,
            )
            row(
                f"{label}: Bot API calls per reply (with getUpdates)",
                f"{calls / max(1, phase.replies):.2f}",
            )
            if chats_count > 1:
                await driver.sync()
                open_phase = await driver.open_loop(chats, rate, seconds, 1 + per_chat)
                lat = open_phase.latencies
                p99 = pct(lat, 0.99)
                lost = len(open_phase.pushed)
                if lost:  # name them, and keep the workspace to read their sessions
                    keep = True
                    some = sorted(open_phase.pushed)[:10]
                    print(f"{label}: unanswered (chat, n): {some}; workspace {root}", flush=True)
                shared = open_phase.answered - open_phase.replies
                row(
                    f"{label}: open loop {rate:.0f}/s, latency p50 / p99",
                    f"{pct(lat, 0.5) * 1e3:.0f} / {p99 * 1e3:.0f} ms"
                    + (f" ({lost} unanswered)" if lost else ""),
                    "p99 <= 250 ms" if big else "",
                    (p99 <= 0.25 and not lost) if big else None,
                )
                row(
                    f"{label}: open loop, messages answered in a shared reply",
                    f"{shared} of {open_phase.answered}",
                )
            if big:
                assert serve.pid is not None
                now, peak = rss_mb(serve.pid)
                row(
                    f"{label}: RSS of duragent serve (now / peak)",
                    f"{now:.0f} / {peak:.0f} MB",
                    "<= 250 MB",
                    peak <= 250,
                )
        finally:
            await driver.client.aclose()
            serve.stop()
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


async def main_async(args: argparse.Namespace) -> None:
    fake = FakeProcess()
    fake.start()
    try:
        plan = [(1, args.single), (50, args.per_chat_50), (1000, args.per_chat_1000)]
        for i, (count, per_chat) in enumerate(plan):
            if args.chats and count not in args.chats:
                continue
            await run_chats(fake, count, per_chat, args.rate, args.seconds, 10_000 * (i + 1))
    finally:
        with contextlib.suppress(Exception):
            fake.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--rate", type=float, default=300.0, help="open-loop updates per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="open-loop duration")
    parser.add_argument(
        "--chats", type=int, nargs="*", default=None, help="only these chat counts (1 50 1000)"
    )
    args = parser.parse_args()
    args.single, args.per_chat_50, args.per_chat_1000 = 300, 40, 4
    if args.quick:
        args.single, args.per_chat_50, args.per_chat_1000, args.seconds = 50, 6, 1, 3.0
    asyncio.run(main_async(args))
    print_boxed()
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
