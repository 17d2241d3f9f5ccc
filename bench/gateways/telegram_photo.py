"""A photo message end to end (issue 36): Telegram update → image part in the model request.

One ``duragent serve`` child, the fake Bot API in a process of its own, and a scripted model
that can see (``vision: true``) answering one line; the same closed loop as
``bench.gateways.telegram_cpu`` (each chat writes its next message once its last one was
answered), first with text messages, then with photo messages (a 1600×1200 JPEG, captioned),
on the same agent and chats. Measured:

- update → reply latency p50/p99, text and photo;
- serve CPU per message (the run time of the child's threads, to the nanosecond, from
  ``/proc/<pid>/task/*/schedstat``), text and photo, and the ratio (target ≤ 2× a text
  message's, excluding the image resize);
- the image resize itself, reported separately. The server fits each image once and caches
  it: a "same photo" phase sends one image over and over (downloaded, hashed, kept and sent
  to the model each time, fitted once), so its CPU per message is a photo's cost without the
  resize, as the server measures it, and the target's ratio is read from it; the difference
  to the first photo phase (a new image each time) is the resize, and ``fit_image`` of the
  same JPEG in this process is shown beside it. The ratio is read from ``ROUNDS`` text and
  same-photo phases alternated (order swapped each round), as the median of each round's
  ratio with its range: neighbouring phases see the same machine, so a busy moment does not
  decide it;
- the model requests: that every agent request of a photo turn carried an image part (the
  scripted server decodes it; summary calls carry none).

    .venv/bin/python -m bench.gateways.telegram_photo            # 1 and 10 chats
    .venv/bin/python -m bench.gateways.telegram_photo --quick
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.gateways.rig import Driver, FakeProcess
from bench.gateways.telegram import CONFIG
from bench.gateways.telegram_cpu import Responder
from bench.rigs.process import run_seconds
from bench.rigs.table import pct, print_boxed, row
from duragent.testing import ScriptedLLMServer
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_campaign import TOKEN

ROUNDS = 6
"""Text and same-photo phases alternated this many times each (the ratio is their median)."""

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
    vision: true
    max_input_tokens: 400000
    max_output_tokens: 2000
  access:
    quotas:
      messages_per_sender_per_minute: 0  # one sender writes 80 messages in a minute here
"""


def jpeg(seed: int, width: int = 1600, height: int = 1200) -> bytes:
    """A photo-like JPEG, different for every ``seed`` (so each one is fitted afresh)."""
    from PIL import Image

    image = Image.effect_noise((width // 8, height // 8), 40 + seed % 50).convert("RGB")
    image = image.resize((width, height))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=88)
    return out.getvalue()


class PhotoDriver(Driver):
    """Pushes each message as a captioned photo (``/_fake/media``)."""

    def __init__(self, fake_url: str, photos: list[bytes]) -> None:
        super().__init__(fake_url)
        self.photos = [base64.b64encode(p).decode() for p in photos]
        self.pushes = 0

    async def push(self, chat: int, n: int) -> None:
        at = time.monotonic()
        self.phase.pushed[(chat, n)] = at
        if not self.phase.first_push:
            self.phase.first_push = at
        photo = self.photos[self.pushes % len(self.photos)]
        self.pushes += 1
        body: dict[str, Any] = {
            "chat_id": chat,
            "kind": "photo",
            "data_base64": photo,
            "caption": f"benchmark message #c{chat}n{n}#",
        }
        await self.client.post_json("/_fake/media", body)


def resize_cost(photo: bytes, rounds: int) -> float:
    """Seconds ``fit_image`` takes on ``photo`` for the OpenAI formula (median)."""
    from duragent.llm.images import fit_image

    times = []
    for _ in range(rounds):
        started = time.process_time()
        fit_image(photo, "openai")
        times.append(time.process_time() - started)
    return statistics.median(times)


async def phase_cpu(pid: int, driver: Driver, ids: list[int], per_chat: int) -> tuple[float, Any]:
    """CPU seconds of the child per answered message over one closed loop, and the phase."""
    await driver.sync()
    before = run_seconds(pid)
    phase = await driver.closed_loop(ids, per_chat, 1)
    after = run_seconds(pid)
    return (after - before) / max(1, phase.answered), phase


async def alternating(
    pid: int, text: Driver, same: Driver, ids: list[int], per_chat: int, rounds: int
) -> tuple[list[float], list[float]]:
    """Text and same-photo phases in turn, ``rounds`` of each, the order swapped every round.

    CPU per message of each, per round: a ratio read from neighbouring phases, so what else
    the machine does drifts out of it (its median is the target's).
    """
    texts: list[float] = []
    photos: list[float] = []
    for i in range(rounds):
        for driver in (text, same) if i % 2 == 0 else (same, text):
            driver.since = max(text.since, same.since)
            cpu, _ = await phase_cpu(pid, driver, ids, per_chat)
            (texts if driver is text else photos).append(cpu)
    return texts, photos


async def measure(fake: FakeProcess, chats: int, per_chat: int, base: int) -> None:
    """Text, then photos, on one fresh workspace and ``duragent serve``."""
    photos = [jpeg(base + i) for i in range(chats * (per_chat + 1))]  # one per message
    root = Path(tempfile.mkdtemp(prefix="bench-telegram-photo-"))
    async with ScriptedLLMServer(responder=Responder(0), keep_requests=chats * 4) as llm:
        try:
            (root / "duragent.yaml").write_text(CONFIG.format(token=TOKEN, base_url=fake.url))
            agent = root / ".duragent" / "agents" / "bot"
            agent.mkdir(parents=True)
            (agent / "agent.yaml").write_text(AGENT.format(base_url=llm.base_url))
            serve = ServeProcess(root / "duragent.yaml")
            serve.start()
            text, pictures = Driver(fake.url), PhotoDriver(fake.url, photos)
            try:
                await serve.wait_ready()
                pid = serve.pid
                assert pid is not None
                ids = [base + i for i in range(chats)]
                await text.sync()
                await text.closed_loop(ids, 1, 0)  # warm-up: sessions created
                text_cpu, text_phase = await phase_cpu(pid, text, ids, per_chat)
                pictures.since = text.since
                photo_cpu, photo_phase = await phase_cpu(pid, pictures, ids, per_chat)
                images = [  # the agent's requests (a summary call carries no image)
                    len(llm.images(i))
                    for i, request in enumerate(llm.requests)
                    if not str(request.json["messages"][0].get("content", "")).startswith(
                        "You maintain the running summary"
                    )
                ]
                same = PhotoDriver(fake.url, photos[:1])
                same.since = pictures.since
                texts, sames = await alternating(
                    pid, text, same, ids, max(10, per_chat // 3), ROUNDS
                )
                await same.client.aclose()
            finally:
                await text.client.aclose()
                await pictures.client.aclose()
                serve.stop()
        finally:
            shutil.rmtree(root, ignore_errors=True)
    resize = resize_cost(photos[0], 5)
    label = f"{chats} chat{'s' if chats > 1 else ''}"
    for name, phase in (("text", text_phase), ("photo", photo_phase)):
        lat = phase.latencies
        row(
            f"{label}: {name} update → reply, p50 / p99",
            f"{pct(lat, 0.5) * 1e3:.0f} / {pct(lat, 0.99) * 1e3:.0f} ms",
        )
    same_cpu = statistics.median(sames)
    cpu = f"{text_cpu * 1e3:.2f} / {photo_cpu * 1e3:.2f} / {same_cpu * 1e3:.2f} ms"
    row(f"{label}: serve CPU per message, text / photo / same photo", cpu)
    alternated = f"{statistics.median(texts) * 1e3:.2f} / {same_cpu * 1e3:.2f} ms"
    row(f"{label}: text / same photo, {ROUNDS} rounds alternated (medians)", alternated)
    resized = f"{(photo_cpu - same_cpu) * 1e3:.1f} ms (fit_image here: {resize * 1e3:.1f} ms)"
    row(f"{label}: image resize, served", resized)
    ratios = sorted(p / t for t, p in zip(texts, sames, strict=True))
    ratio = statistics.median(ratios)
    spread = f"{ratio:.2f}x ({ratios[0]:.2f}–{ratios[-1]:.2f})"
    row(
        f"{label}: photo / text CPU, resize taken out (median, range)",
        spread,
        "<= 2x",
        ratio <= 2.0,
    )
    seen = sum(1 for n in images if n)
    row(f"{label}: kept agent requests with an image part", f"{seen} of {len(images)}")


async def main_async(args: argparse.Namespace) -> None:
    fake = FakeProcess()
    fake.start()
    try:
        for c, chats in enumerate(args.chats):
            await measure(
                fake, chats, args.single if chats == 1 else args.per_chat, 10_000 * (c + 1)
            )
    finally:
        fake.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages")
    parser.add_argument("--chats", type=int, nargs="*", default=[1, 10])
    args = parser.parse_args()
    args.single, args.per_chat = (10, 3) if args.quick else (120, 8)
    asyncio.run(main_async(args))
    print_boxed()
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
