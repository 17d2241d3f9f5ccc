"""Replies streamed into Telegram chats: edits, Telegram's limits, first text, serve CPU.

A reply shown as it is written (``frontkit.preview``) costs Bot API calls a whole reply does
not: a preview ``sendMessage`` and its ``editMessageText`` calls. This measures what they
cost and what they give, under load and Telegram's real limits:

- the fake Bot API (``python -m duragent.testing.fake_telegram``) in a process of its own;
  ``duragent serve`` as a real child with Telegram's flood limits as configured by default
  (30 messages a second overall, 20 a minute per group, 1 a second per private chat: PTB's
  rate limiter paces every call, edits included);
- a scripted model in this process streaming each reply word by word (~1 KB of English prose,
  ``--chunk-delay`` seconds between words: ~7 s a reply by default, a model writing about 25
  tokens a second), so every reply is still being written long after its first words;
- ``--chats`` chats (100; one in ten a group, addressed by a mention), each a closed loop:
  write, wait for the reply to be final, think, write again (``--messages`` times), the
  chats starting over ``--stagger`` seconds (10), as chats do, not all in one instant. Two
  loads: ``conversation`` (5-15 s to read and answer: about 40 replies being written at any
  moment, ~6 new ones a second) and ``busy`` (0.5-2 s: nearly all 100 at once, ~16 new
  replies a second: more than Telegram's 30 calls a second carry with a preview and a final
  text each, so it shows what gives way);
- each load twice, on fresh workspaces: ``stream_replies: true`` and ``false``.

Measured from the fake's call log (``time.monotonic()``, the same clock in every process):
edits per reply; calls into Telegram per second overall (most in any 1 s), per private chat
(the shortest gap between two calls into one chat) and per group (most in any 60 s); the time
from the model's first word (when the scripted server starts the stream) to the chat's first
visible text of the reply (the preview, or the whole reply when not streamed) and to the
final text; the serving process's CPU (utime + stime from ``/proc``) per reply.

    .venv/bin/python -m bench.gateways.telegram_stream             # about 6 minutes
    .venv/bin/python -m bench.gateways.telegram_stream --quick     # one message per chat
    .venv/bin/python -m bench.gateways.telegram_stream --loads conversation

Targets (issue 37): within Telegram's limits; first visible text <= 1 s after the model's
first word.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.gateways.rig import FakeClient, FakeProcess
from bench.gateways.telegram_cpu import user_system
from bench.rigs.corpus import english
from bench.rigs.table import pct, print_boxed, row
from duragent.testing import RecordedRequest, Reply, ScriptedLLMServer
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_campaign import TOKEN

CONFIG = """\
server:
  host: 127.0.0.1
gateways:
  telegram:
    bot_token: '{token}'
    base_url: {base_url}
    poll_timeout_seconds: 10
"""

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: bot
spec:
  model:
    provider: scripted
    name: bench-model
    base_url: {base_url}/v1
    max_input_tokens: 400000
    max_output_tokens: 4000
  session:
    stream_replies: {stream}
"""

BOT = "duragent_test_bot"
TOKEN_RE = re.compile(r"#c(\d+)n(\d+)#")
MESSAGE_CALLS = ("sendMessage", "editMessageText")


class Model:
    """The scripted model: ~1 KB of prose per reply, word by word, quoting what it answers."""

    def __init__(self, chunk_delay: float) -> None:
        self.text = english()
        self.chunk_delay = chunk_delay
        self.started: dict[tuple[int, int], float] = {}
        """When the stream of each reply began (its first word), by (chat, message)."""

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.json.get("messages") or []
        asked = next(
            (str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), ""
        )
        found = TOKEN_RE.findall(asked)
        key = (int(found[-1][0]), int(found[-1][1])) if found else (-1, -1)
        self.started.setdefault(key, time.monotonic())
        start = random.Random(str(key)).randrange(0, len(self.text) - 1000)
        prose = " ".join(self.text[start : start + 1000].split())
        text = f"re #c{key[0]}n{key[1]}#: {prose}"
        words = [w + " " for w in text.split(" ")]
        words[-1] = words[-1].rstrip()
        return Reply(text="".join(words), chunks=words, chunk_delay=self.chunk_delay)


@dataclass
class ChatLoad:
    """The chats, their messages and what the fake saw."""

    chats: int
    messages: int
    stagger: float
    first_n: int = 0
    """The first message number (each phase its own, so a token names one message)."""
    think: tuple[float, float] = (5.0, 15.0)
    """Seconds a person takes to read a reply and write again (uniform between the two)."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    finals: dict[tuple[int, int], float] = field(default_factory=dict)
    events: dict[int, asyncio.Event] = field(default_factory=dict)
    unanswered: list[tuple[int, int]] = field(default_factory=list)

    def telegram_id(self, chat: int) -> int:
        """One chat in ten is a group (negative id), the others private chats."""
        return -(1_000_000 + chat) if chat % 10 == 9 else 200_000 + chat

    def body(self, chat: int, n: int) -> dict[str, Any]:
        text = f"benchmark message #c{chat}n{n}#"
        if chat % 10 == 9:
            text = f"@{BOT} {text}"
        return {"chat_id": self.telegram_id(chat), "text": text, "user_id": 300_000 + chat}

    def take(self, calls: list[dict[str, Any]]) -> None:
        """Keep the calls; a reply is final when its formatted text arrives (HTML).

        An HTML edit Telegram answers "message is not modified" (400) is final too: the last
        preview already read so (a reply without formatting).
        """
        for call in calls:
            if call["method"] not in MESSAGE_CALLS:
                continue
            params = call["params"]
            if call["status"] == 200:
                self.calls.append(call)
            if params.get("parse_mode") != "HTML" or call["status"] not in (200, 400):
                continue
            for chat, n in TOKEN_RE.findall(str(params.get("text", ""))):
                key = (int(chat), int(n))
                if key not in self.finals:
                    self.finals[key] = call["time"]
                    event = self.events.get(key[0])
                    if event is not None:
                        event.set()


async def drive(fake: FakeClient, load: ChatLoad) -> None:
    """Every chat's closed loop, the chats starting over ``load.stagger`` seconds."""
    earlier = await fake.get_json("/_fake/calls", {"answers": "0"})
    since = earlier[-1]["index"] + 1 if earlier else 0  # an earlier phase's calls are not ours
    stop = asyncio.Event()

    async def follow() -> None:
        nonlocal since
        while not stop.is_set():
            calls = await fake.get_json("/_fake/calls", {"since": str(since), "answers": "0"})
            if calls:
                since = calls[-1]["index"] + 1
                load.take(calls)
            await asyncio.sleep(0.02)

    async def chat_loop(chat: int) -> None:
        rng = random.Random(chat)
        await asyncio.sleep(load.stagger * chat / load.chats)
        for n in range(load.first_n, load.first_n + load.messages):
            event = load.events[chat] = asyncio.Event()
            await fake.post_json("/_fake/message", load.body(chat, n))
            try:
                await asyncio.wait_for(event.wait(), 120)
            except TimeoutError:  # counted as unanswered in the table; the chat goes on
                load.unanswered.append((chat, n))
            await asyncio.sleep(rng.uniform(*load.think))

    follower = asyncio.create_task(follow())
    try:
        await asyncio.gather(*(chat_loop(c) for c in range(load.chats)))
        await asyncio.sleep(0.5)  # the last calls
    finally:
        stop.set()
        await follower


def most_within(times: list[float], window: float) -> int:
    """The most calls in any ``window`` seconds (a half-open window)."""
    ordered = sorted(times)
    most = start = 0
    for end, at in enumerate(ordered):
        while at - ordered[start] >= window:
            start += 1
        most = max(most, end - start + 1)
    return most


def report(label: str, load: ChatLoad, started: dict[tuple[int, int], float], cpu: float) -> None:
    by_chat: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for call in load.calls:
        by_chat[int(call["chat_id"])].append(call)
    first_seen: list[float] = []
    final_after: list[float] = []
    for key, began in started.items():
        if key not in load.finals:
            continue
        calls = by_chat[load.telegram_id(key[0])]
        shown = min(
            c["time"]
            for c in calls
            if c["method"] == "sendMessage" and f"#c{key[0]}n{key[1]}#" in c["params"]["text"]
        )
        first_seen.append(shown - began)
        final_after.append(load.finals[key] - began)
    replies = len(final_after)
    times = [c["time"] for c in load.calls]
    gaps = [
        b["time"] - a["time"]
        for chat, calls in by_chat.items()
        if chat > 0
        for a, b in itertools.pairwise(calls)
    ]
    gap = min(gaps, default=float("nan"))
    groups = max(
        (most_within([c["time"] for c in cs], 60) for chat, cs in by_chat.items() if chat < 0),
        default=0,
    )
    overall = most_within(times, 1.0)
    seen = (pct(first_seen, 0.5), pct(first_seen, 0.95), max(first_seen, default=float("nan")))
    judged = label.endswith("streamed")  # the whole replies are the baseline: no targets

    def target(name: str, value: str, goal: str, ok: bool) -> None:
        row(f"{label}: {name}", value, goal if judged else "", ok if judged else None)

    row(
        f"{label}: replies, calls per reply (send + edit)", f"{replies}, {len(times) / replies:.2f}"
    )
    row(f"{label}: edits per reply (mean / most in a chat)", _edits(load, by_chat, replies))
    target("replies not final within 120 s", f"{len(load.unanswered)}", "0", not load.unanswered)
    target("calls in any 1 s, all chats", f"{overall}", "<= 30", overall <= 30)
    target("shortest gap between calls in a DM", f"{gap:.2f} s", ">= 1 s", gap >= 0.95)
    target("calls in any 60 s in a group (most)", f"{groups}", "<= 20", groups <= 20)
    target(
        "first visible text after first word p50/p95/max",
        " / ".join(f"{v:.2f}" for v in seen) + " s",
        "<= 1 s",
        seen[1] <= 1.0,
    )
    row(
        f"{label}: final text after first word p50/p95",
        f"{pct(final_after, 0.5):.2f} / {pct(final_after, 0.95):.2f} s",
    )
    row(f"{label}: serve CPU per reply", f"{cpu / max(1, replies) * 1e3:.1f} ms")


def _edits(load: ChatLoad, by_chat: dict[int, list[dict[str, Any]]], replies: int) -> str:
    edits = sum(1 for c in load.calls if c["method"] == "editMessageText")
    most = max(
        (sum(1 for c in cs if c["method"] == "editMessageText") for cs in by_chat.values()),
        default=0,
    )
    return f"{edits / max(1, replies):.2f} / {most / max(1, load.messages):.1f}"


def keep_logs(root: Path, unanswered: list[tuple[int, int]]) -> None:
    """Keep the server's log of a run that left replies unfinished, and say where."""
    kept = Path(tempfile.mkdtemp(prefix="bench-telegram-stream-log-"))
    for log in root.glob("serve-*.log"):
        shutil.copy(log, kept / log.name)
    print(f"not final: {unanswered[:10]}; the server's log is in {kept}", file=sys.stderr)


THINK = {"conversation": (5.0, 15.0), "busy": (0.5, 2.0)}
"""How long people take before writing again: as people do, and a load beyond the limits."""


async def phase(
    fake_url: str, model: Model, llm_url: str, stream: bool, profile: str, args: Any, first_n: int
) -> None:
    """One fresh workspace and ``duragent serve``; the load; its rows."""
    root = Path(tempfile.mkdtemp(prefix="bench-telegram-stream-"))
    try:
        (root / "duragent.yaml").write_text(CONFIG.format(token=TOKEN, base_url=fake_url))
        agent = root / ".duragent" / "agents" / "bot"
        agent.mkdir(parents=True)
        (agent / "agent.yaml").write_text(
            AGENT.format(base_url=llm_url, stream="true" if stream else "false")
        )
        serve = ServeProcess(root / "duragent.yaml")
        serve.start()
        fake = FakeClient(fake_url)
        try:
            await serve.wait_ready()
            pid = serve.pid
            assert pid is not None
            load = ChatLoad(args.chats, args.messages, args.stagger, first_n, THINK[profile])
            model.started.clear()
            before = user_system(pid)
            await drive(fake, load)
            after = user_system(pid)
            cpu = sum(after) - sum(before)
            label = f"{profile}, {'streamed' if stream else 'whole'}"
            report(label, load, dict(model.started), cpu)
        finally:
            await fake.aclose()
            serve.stop()
        if load.unanswered:
            keep_logs(root, load.unanswered)
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def main_async(args: argparse.Namespace) -> None:
    fake = FakeProcess()
    fake.start()
    try:
        model = Model(args.chunk_delay)
        async with ScriptedLLMServer(responder=model, keep_requests=1) as llm:
            phases = [(p, s) for p in args.loads for s in (True, False)]
            for i, (profile, stream) in enumerate(phases):
                await phase(fake.url, model, llm.base_url, stream, profile, args, 1000 * i)
    finally:
        fake.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="one message per chat")
    parser.add_argument("--chats", type=int, default=100)
    parser.add_argument("--messages", type=int, default=3, help="messages per chat")
    parser.add_argument("--stagger", type=float, default=10.0, help="seconds the starts span")
    parser.add_argument("--chunk-delay", type=float, default=0.04, help="seconds between words")
    parser.add_argument("--loads", nargs="*", choices=sorted(THINK), default=list(THINK))
    args = parser.parse_args()
    if args.quick:
        args.messages = 1
    asyncio.run(main_async(args))
    print_boxed()
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
