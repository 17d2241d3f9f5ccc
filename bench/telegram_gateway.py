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

    .venv/bin/python bench/telegram_gateway.py          # a few minutes
    .venv/bin/python bench/telegram_gateway.py --quick  # two to three minutes

Targets (issue #16): >= 300 messages/s at 1,000 chats with p99 <= 250 ms, <= 3 Bot API calls
per plain reply, RSS <= 250 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.gateways.telegram.campaign_rig import TOKEN, ServeProcess  # noqa: E402

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

TOKEN_RE = re.compile(r"#c(\d+)n(\d+)#")
ROWS: list[tuple[str, str, str, str]] = []


def row(name: str, value: str, target: str = "", ok: bool | None = None) -> None:
    ROWS.append((name, value, target, "" if ok is None else ("ok" if ok else "MISSED")))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


class FakeProcess:
    """The fake Telegram in its own process (``--keep-calls`` bounds its memory)."""

    def __init__(self, module: str = "duragent.testing.fake_telegram", token: str = TOKEN) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.module = module
        self.token = token

    def start(self) -> None:
        env = os.environ.copy()
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                self.module,
                "--port",
                "0",
                "--token",
                self.token,
                "--keep-calls",
                "20000",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.url = line.strip().removeprefix("listening on ")
        if not self.url.startswith("http"):
            raise RuntimeError(f"{self.module} did not start: {line!r}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)


@dataclass
class Phase:
    """What one load run saw."""

    pushed: dict[tuple[int, int], float] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    methods: Counter[str] = field(default_factory=Counter)
    replies: int = 0
    answered: int = 0
    """Messages answered (a reply may answer several of a chat: see ``Driver.follow``)."""
    first_push: float = 0.0
    last_reply: float = 0.0


class FakeClient:
    """The driver's HTTP client for the fake's control endpoints, on aiohttp.

    The load generator shares this 2-core machine with ``duragent serve``: on httpx it spent
    more CPU per message than the server it measured (its polls parse every call), so the
    numbers were the driver's as much as the server's. aiohttp's C parser and the fake's
    ``answers=0`` (calls without the Bot API's answers) keep it small.
    """

    def __init__(self, base_url: str) -> None:
        self._base = base_url.rstrip("/")
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=64)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=30)
            )
        return self._session

    async def get_json(self, path: str, params: dict[str, Any]) -> Any:
        async with self._open().get(self._base + path, params=params) as answer:
            answer.raise_for_status()
            return await answer.json()

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        async with self._open().post(self._base + path, json=body) as answer:
            answer.raise_for_status()
            return await answer.json()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class Driver:
    """Pushes updates to the fake and follows its call log."""

    calls_params: dict[str, str] = {"answers": "0"}  # noqa: RUF012
    """Sent with every ``/_fake/calls`` poll (the fake's own filters)."""

    def __init__(self, fake_url: str) -> None:
        self.fake = fake_url
        self.client = FakeClient(fake_url)
        self.since = 0
        self.phase = Phase()
        self.answered: dict[int, asyncio.Event] = {}
        self.drained: asyncio.Event | None = None
        """Set once every pushed update was answered (open loop's end)."""

    async def sync(self) -> None:
        """Skip every call made so far (a new phase starts counting from here)."""
        calls = await self.client.get_json(
            "/_fake/calls", {"since": str(self.since), **self.calls_params}
        )
        if calls:
            self.since = calls[-1]["index"] + 1

    async def push(self, chat: int, n: int) -> None:
        at = time.monotonic()
        self.phase.pushed[(chat, n)] = at
        if not self.phase.first_push:
            self.phase.first_push = at
        body = self.message_body(chat, f"benchmark message #c{chat}n{n}#")
        await self.client.post_json("/_fake/message", body)

    def message_body(self, chat: int, text: str) -> dict[str, Any]:
        """The ``/_fake/message`` body for a user writing ``text`` in ``chat``."""
        return {"chat_id": chat, "text": text}

    def method_of(self, call: dict[str, Any]) -> str:
        """The name a call is counted under."""
        return str(call["method"])

    def reply_text(self, call: dict[str, Any]) -> str | None:
        """The text of a reply the call delivered, or None (not a sent message)."""
        if call["method"] != "sendMessage" or call["status"] != 200:
            return None
        return str(call["params"].get("text", ""))

    async def follow(self, stop: asyncio.Event) -> None:
        """Read new calls every few ms until ``stop``; replies set their chat's event."""
        while not stop.is_set():
            calls: list[dict[str, Any]] = await self.client.get_json(
                "/_fake/calls", {"since": str(self.since), **self.calls_params}
            )
            if calls:
                self.since = calls[-1]["index"] + 1
            for call in calls:
                self.phase.methods[self.method_of(call)] += 1
                text = self.reply_text(call)
                if text is None:
                    continue
                # the offline model quotes the message its turn answers; a turn for several
                # (the DM batch queue) quotes them joined: the newest quoted is the key
                found = TOKEN_RE.findall(text)
                if not found:
                    continue
                key = max((int(c), int(n)) for c, n in found)
                if key not in self.phase.pushed:
                    continue
                # A reply quotes the newest message it answers; messages of the chat that
                # arrived while a turn ran are answered by it too (the batch queue).
                covered = [k for k in self.phase.pushed if k[0] == key[0] and k[1] <= key[1]]
                # (a scan per reply: at most a few thousand waiting, cheap next to the HTTP)
                for k in covered:
                    self.phase.latencies.append(call["time"] - self.phase.pushed.pop(k))
                self.phase.answered += len(covered)
                self.phase.replies += 1
                self.phase.last_reply = max(self.phase.last_reply, call["time"])
                event = self.answered.get(key[0])
                if event is not None:
                    event.set()
                if self.drained is not None and not self.phase.pushed:
                    self.drained.set()
            await asyncio.sleep(0.005)

    async def closed_loop(self, chats: list[int], per_chat: int, start_n: int) -> Phase:
        self.phase = Phase()
        self.answered = {c: asyncio.Event() for c in chats}
        stop = asyncio.Event()
        follower = asyncio.create_task(self.follow(stop))

        async def chat_loop(chat: int) -> None:
            for n in range(start_n, start_n + per_chat):
                event = self.answered[chat]
                event.clear()
                await self.push(chat, n)
                await asyncio.wait_for(event.wait(), 120)

        try:
            await asyncio.gather(*(chat_loop(c) for c in chats))
        finally:
            stop.set()
            await follower
        return self.phase

    async def open_loop(self, chats: list[int], rate: float, seconds: float, start_n: int) -> Phase:
        self.phase = Phase()
        self.answered = {}
        stop = asyncio.Event()
        follower = asyncio.create_task(self.follow(stop))
        total = int(rate * seconds)
        began = time.monotonic()
        pushes = []
        cycle = itertools.cycle(chats)
        for i in range(total):
            delay = began + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            chat = next(cycle)
            pushes.append(asyncio.create_task(self.push(chat, start_n + i // len(chats))))
        await asyncio.gather(*pushes)
        self.drained = asyncio.Event()
        if not self.phase.pushed:
            self.drained.set()
        with contextlib.suppress(TimeoutError):  # what stays unanswered is reported
            await asyncio.wait_for(self.drained.wait(), 300)
        self.drained = None
        stop.set()
        await follower
        return self.phase


def rss_mb(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process has used (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def print_table() -> None:
    headers = ("measure", "value", "target", "")
    widths = [max(len(r[i]) for r in [headers, *ROWS]) for i in range(4)]
    rule = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    print(rule)
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print(rule)
    for r in ROWS:
        print(
            "| "
            + " | ".join(
                (v.ljust(w) if i == 0 else v.rjust(w))
                for i, (v, w) in enumerate(zip(r, widths, strict=True))
            )
            + " |"
        )
    print(rule)


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
    print_table()
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
