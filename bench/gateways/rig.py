"""The load driver of the gateway benchmarks: a fake platform in its own process, followed.

``bench/gateways/telegram.py`` defines the method (closed loop for throughput, open loop at a
fixed rate for latency); ``discord.py`` and ``telegram_cpu.py`` drive their fakes the same
way. The fake runs as a child process (so its CPU is not the serving process's); the
``Driver`` writes users' messages through its ``/_fake/message`` endpoint and follows every
call the bot made from ``/_fake/calls``. A message carries a token (``#c<chat>n<n>#``) that
the offline model's reply quotes, so each reply names what it answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

import duragent
from duragent.testing.telegram_campaign import TOKEN

__all__ = ["TOKEN_RE", "Driver", "FakeClient", "FakeProcess", "Phase"]

TOKEN_RE = re.compile(r"#c(\d+)n(\d+)#")
"""The token of a benchmark message (``Driver.push``), as a reply quotes it."""
SOURCE = Path(duragent.__file__).resolve().parents[1]
"""The folder holding the ``duragent`` this process runs (the fake's child runs it too)."""


class FakeProcess:
    """A fake platform (``module``: the fake Telegram by default) in its own process.

    ``--keep-calls`` bounds its memory.
    """

    def __init__(self, module: str = "duragent.testing.fake_telegram", token: str = TOKEN) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.module = module
        self.token = token

    def start(self) -> None:
        env = os.environ.copy()
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SOURCE), env.get("PYTHONPATH")]))
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
