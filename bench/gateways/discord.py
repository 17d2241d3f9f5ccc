"""Discord gateway throughput and latency: the instant offline model against the fake Discord.

What is measured is our own overhead (discord.py's gateway and REST client, the kit's queue,
the session's fsyncs, splitting) between a message being written on Discord and the reply's
``POST /channels/{id}/messages``. The method is ``bench/gateways/telegram.py``'s, whose
``Driver`` (``bench/gateways/rig.py``) and table this script reuses:

- the fake Discord (``python -m duragent.testing.fake_discord``) runs in a process of its own,
  so it does not share the serving process's CPU; this script writes messages through its
  ``/_fake/message`` endpoint (the fake dispatches MESSAGE_CREATE over the bot's gateway
  websocket) and reads every REST call from ``/_fake/calls``;
- ``duragent serve`` runs as a real subprocess (one fresh workspace per chat count); nothing
  paces sends but discord.py's rate-limit buckets, and the fake sends no rate-limit headers;
- one offline-model agent answers DMs, no tools: every reply is one plain message (a Discord
  reply to the message, so it quotes it).

Load patterns, per chat count (1, 50, 1,000 DM channels), as for Telegram:

- **closed loop** (throughput): each chat writes its next message once the reply to its
  previous one arrived; messages/s = answered / (last reply - first message). One message
  per chat first, unmeasured, creates the sessions.
- **open loop** (latency, 50 and 1,000 chats): messages arrive at ``--rate`` (default 300/s)
  round-robin over the chats whatever the replies do; p50/p99 of message → reply POST. A
  DM's ``batch`` queue answers messages that arrive during a turn with one reply; each is
  counted answered by the reply quoting it or a later message of its chat.

Latency is from just before the message is posted to the fake's control endpoint to the fake
receiving the reply's POST (``time.monotonic()``, one clock for every process). REST calls per
reply count every call of the closed-loop phase (``POST …/typing`` too). The CPU the fake and
this driver use per message is shown too: on a 2-core machine they compete with the serving
process, so a rate they cap is not the gateway's. RSS of the serving
process is read from ``/proc`` after the 1,000-chat phase (VmRSS now, VmHWM peak).

    .venv/bin/python -m bench.gateways.discord          # a few minutes
    .venv/bin/python -m bench.gateways.discord --quick  # two to three minutes

Targets, Telegram's (issue #16, #17): >= 300 messages/s at
1,000 chats, p99 <= 250 ms open loop at 300/s, <= 3 REST calls per plain reply, RSS <= 250 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.gateways.rig import Driver, FakeProcess
from bench.rigs.process import cpu_seconds, rss_mb
from bench.rigs.table import pct, print_boxed, row
from duragent.testing.discord_campaign import TOKEN
from duragent.testing.serve_process import ServeProcess

CONFIG = """\
server:
  host: 127.0.0.1
sessions:
  max_live_actors: 2000
gateways:
  discord:
    bot_token: '{token}'
    base_url: {base_url}
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


class DiscordDriver(Driver):
    """``Driver`` speaking the fake Discord's control API."""

    def message_body(self, chat: int, text: str) -> dict[str, Any]:
        return {"channel_id": chat, "content": text, "author_id": 7, "author_name": "user"}

    def method_of(self, call: dict[str, Any]) -> str:
        kind = str(call["path"]).rstrip("/").rsplit("/", 1)[-1]
        return f"{call['method']} {'<id>' if kind.isdigit() else kind}"

    def reply_text(self, call: dict[str, Any]) -> str | None:
        if call["method"] != "POST" or call["status"] != 200:
            return None
        if not str(call["path"]).endswith("/messages"):
            return None
        return str(call["body"].get("content", ""))


async def run_chats(
    fake: FakeProcess, chats_count: int, per_chat: int, rate: float, seconds: float, base: int
) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-discord-"))
    keep = False
    try:
        (root / "duragent.yaml").write_text(CONFIG.format(token=TOKEN, base_url=fake.url))
        agent = root / ".duragent" / "agents" / "bot"
        agent.mkdir(parents=True)
        (agent / "agent.yaml").write_text(AGENT)
        serve = ServeProcess(root / "duragent.yaml", gateway="discord")
        serve.start()
        driver = DiscordDriver(fake.url)
        try:
            await serve.wait_ready()
            chats = [base + i for i in range(chats_count)]
            await driver.sync()
            await driver.closed_loop(chats, 1, 0)  # warm-up: sessions created
            await driver.sync()
            pid = serve.pid
            assert pid is not None
            assert fake.proc is not None
            cpu0, fake0, own0 = cpu_seconds(pid), cpu_seconds(fake.proc.pid), time.process_time()
            phase = await driver.closed_loop(chats, per_chat, 1)
            cpu = cpu_seconds(pid) - cpu0
            fake_cpu = cpu_seconds(fake.proc.pid) - fake0
            own_cpu = time.process_time() - own0
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
            row(
                f"{label}: CPU per message, fake Discord / this driver",
                f"{fake_cpu / max(1, phase.answered) * 1e3:.1f} / "
                f"{own_cpu / max(1, phase.answered) * 1e3:.1f} ms",
            )
            lat = phase.latencies
            row(
                f"{label}: closed-loop latency p50 / p99",
                f"{pct(lat, 0.5) * 1e3:.0f} / {pct(lat, 0.99) * 1e3:.0f} ms",
            )
            calls = sum(phase.methods.values())
            per_reply = calls / max(1, phase.replies)
            row(
                f"{label}: REST calls per reply",
                f"{per_reply:.2f}",
                "<= 3",
                per_reply <= 3,
            )
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(phase.methods.items()))
            row(f"{label}: REST calls (closed loop)", kinds)
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
    fake = FakeProcess("duragent.testing.fake_discord", TOKEN)
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
    parser.add_argument("--rate", type=float, default=300.0, help="open-loop messages per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="open-loop duration")
    parser.add_argument(
        "--chats", type=int, nargs="*", default=None, help="only these chat counts (1 50 1000)"
    )
    args = parser.parse_args()
    args.single, args.per_chat_50, args.per_chat_1000 = 300, 40, 4
    if args.quick:
        args.single, args.per_chat_50, args.per_chat_1000, args.seconds = 50, 6, 1, 3.0
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    asyncio.run(main_async(args))
    print_boxed()
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
