"""Attachment storage at scale (issue 36): 10,000 attachments, and what they cost the rest.

Prints one table. Real files, real fsyncs, in a temporary folder beside the working directory.

    .venv/bin/python -m bench.components.attachments            # 10,000 attachments
    .venv/bin/python -m bench.components.attachments --quick    # 1,000, a smoke check

(a) keeping 10,000 attachments (4–64 KiB, random bytes, over 100 sessions) through the turn
    runner's port (``SessionAttachments.keep``: content-addressed, fsync'd, atomic): keeps/s,
    p50/p99 of one keep, bytes on disk against bytes kept.
(b) keeping the same bytes again (a redelivered update): p50 (nothing is written).
(c) recovery: a session with 100 attachments and one without, each 200 events, cold (its
    actor stopped): the time to its first answer. Blobs are never read on recovery, so both
    should match.
(d) a durable text turn (user message + reply, fsync'd) in a session without attachments,
    in a store that holds the 10,000 attachments against an empty store, interleaved round
    by round: the ratio (target: unchanged, within noise).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from bench.rigs.table import pct, print_rows, row
from duragent.core.attachments import Attachment, AttachmentKind
from duragent.session import NewSession, SessionRegistry
from duragent.store import SessionStore
from duragent.turns.attachments import SessionAttachments

SESSIONS = 100


def disk_bytes(folder: Path) -> int:
    """Bytes the folder's files take on disk (blocks, as ``du`` counts them)."""
    total = 0
    for path in folder.rglob("*"):
        if path.is_file():
            total += path.stat().st_blocks * 512
    return total


async def keep_many(base: Path, count: int) -> tuple[SessionRegistry, list[str], list[Attachment]]:
    """(a) and (b): ``count`` attachments over ``SESSIONS`` sessions; the registry stays open."""
    registry = SessionRegistry(SessionStore(base))
    await registry.open()
    port = SessionAttachments(registry)
    ids = [await registry.create(NewSession(agent="a")) for _ in range(SESSIONS)]
    rng = random.Random(36)
    kept: list[Attachment] = []
    times: list[float] = []
    raw = 0
    started = time.perf_counter()
    for i in range(count):
        data = rng.randbytes(rng.randint(4 * 1024, 64 * 1024))
        raw += len(data)
        one = time.perf_counter()
        kept.append(
            await port.keep(ids[i % SESSIONS], data, kind=AttachmentKind.IMAGE, mime="image/jpeg")
        )
        times.append(time.perf_counter() - one)
    took = time.perf_counter() - started
    row(f"(a) keep {count:,} attachments", f"{count / took:,.0f}/s")
    row("(a) one keep, p50 / p99", f"{pct(times, 0.5) * 1e3:.2f} / {pct(times, 0.99) * 1e3:.2f} ms")
    blobs = sum(disk_bytes(base / sid / "attachments") for sid in ids)
    row("(a) on disk / kept", f"{blobs / 2**20:,.0f} / {raw / 2**20:,.0f} MiB")
    again: list[float] = []
    for i in range(min(1000, count)):
        sid = ids[i % SESSIONS]
        data = await port.read(sid, kept[i].sha256)  # the same bytes, kept again
        one = time.perf_counter()
        await port.keep(sid, data, kind=AttachmentKind.IMAGE, mime="image/jpeg")
        again.append(time.perf_counter() - one)
    row("(b) keep the same bytes again, p50", f"{pct(again, 0.5) * 1e3:.2f} ms")
    return registry, ids, kept


async def recovery(registry: SessionRegistry, with_blobs: str, rounds: int) -> None:
    """(c): the cold start of a session with attachments against one without."""
    without = await registry.create(NewSession(agent="a"))
    for sid in (with_blobs, without):
        handle = registry.handle(sid)
        for i in range(100):
            await handle.add_user_message(f"question {i}")
            await handle.add_assistant_response(f"answer {i}")
    cold: dict[str, list[float]] = {with_blobs: [], without: []}
    for _ in range(rounds):
        for sid in (with_blobs, without):
            await registry.stop(sid)
            started = time.perf_counter()
            await registry.info(sid)
            cold[sid].append(time.perf_counter() - started)
    a, b = statistics.median(cold[with_blobs]), statistics.median(cold[without])
    row("(c) cold start, 100 attachments / none", f"{a * 1e3:.1f} / {b * 1e3:.1f} ms")
    row("(c) ratio", f"{a / b:.2f}x", "<= 1.2x", a / b <= 1.2)


async def turn_cost(full: SessionRegistry, empty_base: Path, rounds: int, turns: int) -> None:
    """(d): text turns in a store full of attachments against an empty store, interleaved."""
    empty = SessionRegistry(SessionStore(empty_base))
    await empty.open()
    sessions = {
        "full": full.handle(await full.create(NewSession(agent="a"))),
        "empty": empty.handle(await empty.create(NewSession(agent="a"))),
    }
    medians: dict[str, list[float]] = {"full": [], "empty": []}
    for _ in range(rounds):
        for name, handle in sessions.items():
            times = []
            for i in range(turns):
                started = time.perf_counter()
                await handle.add_user_message(f"question {i}")
                await handle.add_assistant_response(f"answer {i}")
                times.append(time.perf_counter() - started)
            medians[name].append(statistics.median(times))
    await empty.aclose()
    ratio = statistics.median(f / e for f, e in zip(medians["full"], medians["empty"], strict=True))
    full_ms = statistics.median(medians["full"]) * 1e3
    empty_ms = statistics.median(medians["empty"]) * 1e3
    row("(d) durable text turn, full store / empty", f"{full_ms:.2f} / {empty_ms:.2f} ms")
    row("(d) ratio", f"{ratio:.2f}x", "<= 1.1x", ratio <= 1.1)


async def main(quick: bool) -> None:
    count = 1000 if quick else 10_000
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        base = Path(tmp)
        registry, ids, _ = await keep_many(base / "full", count)
        try:
            await recovery(registry, ids[0], 5 if quick else 15)
            await turn_cost(registry, base / "empty", 5 if quick else 15, 50)
        finally:
            await registry.aclose()
    print_rows(target_width=9)
    print(f"cores: {os.cpu_count()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 attachments")
    asyncio.run(main(parser.parse_args().quick))
