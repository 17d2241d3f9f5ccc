"""Server CPU per Telegram message, and per HTTP turn on the same model, in one ``duragent serve``.

Why a Telegram turn of the simulated year (``bench/year``) costs the serving process so
much more CPU than an HTTP turn (``bench/http/api.py``), measured without the year's machinery
(no tools, summaries, schedules, faults or kills): one plain DM agent, the fake Bot API
(``python -m duragent.testing.fake_telegram``, a process of its own), and three models:

- ``offline``: the instant offline model (no HTTP: the front end and the session only);
- ``short``: a scripted model over real HTTP (the OpenAI wire, through the SDK) answering one
  line, streamed word by word (~10 chunks);
- ``prose``: the same server answering ~1 KB of English prose streamed word by word (~170
  chunks), the length of the year's DM replies (150–1,500 characters).

For each model and each chat count (1 and 100) the same ``duragent serve`` child takes a
closed loop of Telegram DMs (every chat writes its next message once the reply to its last
one arrived, after one unmeasured message per chat), then a closed loop of HTTP turns
(``POST /api/v1/sessions/{id}/messages``, one session per chat, same count) on the same
agent. CPU is the child's utime + stime from ``/proc`` over each phase, divided by the
messages answered (for Telegram also split into user and system time). The scripted model
runs in this process (its CPU is not the server's).

    .venv/bin/python -m bench.gateways.telegram_cpu            # 1 and 100 chats, all three models
    .venv/bin/python -m bench.gateways.telegram_cpu --quick    # fewer messages
    .venv/bin/python -m bench.gateways.telegram_cpu --models prose --chats 100
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path

import aiohttp

from bench.gateways.rig import TOKEN_RE, Driver, FakeProcess
from bench.gateways.telegram import CONFIG
from bench.rigs.corpus import english
from bench.rigs.table import print_boxed, row
from duragent.testing import RecordedRequest, Reply, ScriptedLLMServer
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_campaign import TOKEN

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: bot
spec:
  model:
{model}"""

OFFLINE = "    provider: offline\n    name: duragent-offline\n"
SCRIPTED = """\
    provider: scripted
    name: bench-model
    base_url: {base_url}/v1
    max_input_tokens: 400000
    max_output_tokens: 2000
"""

MODELS = ("offline", "short", "prose")
_HTTP_TOKEN = re.compile(r"#h(\d+)n(\d+)#")


class Responder:
    """The scripted model: quotes the newest token it was asked about, then some text."""

    def __init__(self, prose_chars: int) -> None:
        self.prose_chars = prose_chars
        self.text = english()

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.json.get("messages") or []
        asked = next(
            (str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), ""
        )
        tokens = TOKEN_RE.findall(asked) or _HTTP_TOKEN.findall(asked)
        mark = f"#c{tokens[-1][0]}n{tokens[-1][1]}#" if tokens else ""
        if not self.prose_chars:
            return Reply(text=f"re {mark}: use logrotate, daily, rotate 7, compress.")
        start = random.Random(mark).randrange(0, len(self.text) - self.prose_chars)
        return Reply(text=f"re {mark}: {self.text[start : start + self.prose_chars]}")


def user_system(pid: int) -> tuple[float, float]:
    """User and system CPU seconds the process has used (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


async def http_turns(base_url: str, sessions: int, per_session: int) -> int:
    """Closed loop of HTTP turns: ``sessions`` users, ``per_session`` turns each; turns done."""
    timeout = aiohttp.ClientTimeout(total=120)
    connector = aiohttp.TCPConnector(limit=sessions + 4)
    async with aiohttp.ClientSession(base_url, connector=connector, timeout=timeout) as http:

        async def create() -> str:
            async with http.post("/api/v1/sessions", json={"agent": "bot"}) as answer:
                answer.raise_for_status()
                return str((await answer.json())["session_id"])

        ids = await asyncio.gather(*(create() for _ in range(sessions)))

        async def user(i: int, sid: str, turns: int) -> int:
            for n in range(turns):
                body = {"content": f"benchmark message #h{i}n{n}#"}
                async with http.post(f"/api/v1/sessions/{sid}/messages", json=body) as answer:
                    answer.raise_for_status()
                    await answer.read()
            return turns

        await asyncio.gather(*(user(i, sid, 1) for i, sid in enumerate(ids)))  # warm-up
        return sum(await asyncio.gather(*(user(i, sid, per_session) for i, sid in enumerate(ids))))


async def measure(
    fake: FakeProcess, model: str, model_url: str, chats: int, per_chat: int, base: int
) -> None:
    """One fresh workspace and ``duragent serve``: the Telegram phase, then the HTTP phase."""
    root = Path(tempfile.mkdtemp(prefix="bench-telegram-cpu-"))
    try:
        (root / "duragent.yaml").write_text(CONFIG.format(token=TOKEN, base_url=fake.url))
        agent = root / ".duragent" / "agents" / "bot"
        agent.mkdir(parents=True)
        spec = OFFLINE if model == "offline" else SCRIPTED.format(base_url=model_url)
        (agent / "agent.yaml").write_text(AGENT.format(model=spec))
        serve = ServeProcess(root / "duragent.yaml")
        serve.start()
        driver = Driver(fake.url)
        try:
            await serve.wait_ready()
            pid = serve.pid
            assert pid is not None
            ids = [base + i for i in range(chats)]
            await driver.sync()
            await driver.closed_loop(ids, 1, 0)  # warm-up: sessions created
            await driver.sync()
            before = user_system(pid)
            phase = await driver.closed_loop(ids, per_chat, 1)
            after = user_system(pid)
            n = max(1, phase.answered)
            user, system = (after[0] - before[0]) / n, (after[1] - before[1]) / n
            telegram = user + system
            before = user_system(pid)
            turns = await http_turns(serve.url, chats, per_chat)
            after = user_system(pid)
            http = (sum(after) - sum(before)) / max(1, turns)
            label = f"{model}, {chats} chat{'s' if chats > 1 else ''}"
            row(
                f"{label}: serve CPU per message, Telegram / HTTP",
                f"{telegram * 1e3:.2f} / {http * 1e3:.2f} ms ({telegram / http:.1f}x)",
            )
            row(
                f"{label}: of which user / system (Telegram)",
                f"{user * 1e3:.2f} / {system * 1e3:.2f} ms",
            )
            calls = sum(phase.methods.values()) - phase.methods["getUpdates"]
            row(f"{label}: Bot API calls per reply (no getUpdates)", f"{calls / phase.replies:.2f}")
        finally:
            await driver.client.aclose()
            serve.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def main_async(args: argparse.Namespace) -> None:
    fake = FakeProcess()
    fake.start()
    try:
        for m, model in enumerate(args.models):
            responder = Responder(1000 if model == "prose" else 0)
            async with ScriptedLLMServer(responder=responder, keep_requests=1) as llm:
                for c, chats in enumerate(args.chats):
                    per_chat = args.per_chat if chats > 1 else args.single
                    base = 100_000 * (1 + m) + 10_000 * c
                    await measure(fake, model, llm.base_url, chats, per_chat, base)
    finally:
        fake.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages")
    parser.add_argument("--models", nargs="*", choices=MODELS, default=list(MODELS))
    parser.add_argument("--chats", type=int, nargs="*", default=[1, 100])
    args = parser.parse_args()
    args.single, args.per_chat = (20, 3) if args.quick else (100, 10)
    asyncio.run(main_async(args))
    print_boxed()
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
