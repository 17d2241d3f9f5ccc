"""Serve CPU per message by kind (text, photo, voice note, document), on the month's own server.

The month's serving CPU is one number for everything at once: a photo's turn and a text's
run side by side there, so the process's CPU cannot be split by kind while the crowd writes.
Once the month is over (every verdict read, before the server stops), ``measure`` lets one
DM chat of the plan, its session as long as the month left it, write ``per_phase`` messages of
one kind, each once the last was answered, kind after kind, for ``rounds`` rounds (the order
rotated each round, so a busy moment of the machine does not fall on one kind). A phase's
CPU is the serving process's (all its threads, ``schedstat``, to the nanosecond:
``bench.rigs.process.run_seconds``) less what it spends idle over as long (measured first);
per message, the median of the rounds.

What a message of each kind costs the server (the fake Telegram and the scripted model run
in this process, not in its CPU):

- **text**: the update, the turn, the reply (a few hundred words);
- **photo**: a new PNG downloaded, kept, fitted and sent to the model as an image;
- **voice**: the note downloaded, kept, sent to the transcription endpoint, then a text turn;
- **document**: kept, read back with ``bash cat`` (a child in bubblewrap), sent back with
  ``send_file`` (uploaded), then the answer: three model calls and two tool calls.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.rigs.process import run_seconds
from bench.strangers.campaign import send_medium
from bench.year.campaign import MEMORY_CHATS
from duragent.testing import FakeTelegram
from duragent.testing.campaign_verdict import Chat
from duragent.testing.telegram_campaign import writer_of

__all__ = ["KINDS", "STEP_MS", "CpuByKind", "measure", "measure_chat"]

KINDS = ("text", "photo", "voice", "document")
ANSWER_WITHIN = 120.0
"""Seconds a message may take to be answered before the measurement gives up on it."""
IDLE_SECONDS = 2.0
STEP_MS = 2_000
"""Simulated time between two measured messages (30 a minute: half the default rate)."""
FIRST_ORDINAL = 100_000
"""The measured messages' ordinals: far past any the plan writes (their tokens are new)."""


@dataclass
class CpuByKind:
    """What ``measure`` found: ms of serve CPU per message, by kind."""

    per_message_ms: dict[str, float] = field(default_factory=dict)
    """Kind → the median over rounds of a phase's serve CPU (less idle) per message."""
    spread_ms: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Kind → the lowest and highest round."""
    idle_ms_per_second: float = 0.0
    messages: int = 0
    media_bytes: int = 0
    """Bytes of the photos, voice notes and documents the phases sent."""
    problems: list[str] = field(default_factory=list)
    """Messages not answered within ``ANSWER_WITHIN`` (the measurement stopped there)."""

    def rows(self) -> list[tuple[str, str]]:
        """The table's rows: ms per message by kind, and the ratio to a text message."""
        if not self.per_message_ms:
            return [("serve CPU per message by kind", "not measured")]
        text = self.per_message_ms.get("text") or float("nan")
        rows = [
            (
                "serve CPU per message by kind (median of rounds)",
                f"{self.messages} messages after the month, one at a time",
            )
        ]
        for kind, ms in self.per_message_ms.items():
            low, high = self.spread_ms[kind]
            rows.append(
                (f"  {kind}", f"{ms:.1f} ms ({low:.1f}–{high:.1f}; {ms / text:.1f}× a text)")
            )
        return rows


def measure_chat(plan: list[Chat]) -> Chat:
    """The DM the measurement writes in: the first that the month gave media (not a memory
    chat, whose messages the year gives a part)."""
    return next(c for c in plan if not c.group and c.index % MEMORY_CHATS != 1)


async def measure(
    tg: FakeTelegram,
    pids: list[int],
    chat: Chat,
    *,
    per_phase: int,
    rounds: int,
    step: Callable[[], None] = lambda: None,
) -> CpuByKind:
    """Run the phases (module docstring) against the serving ``pids`` in ``chat``.

    Every node's CPU counts: with two nodes either may poll Telegram and run the turn.

    ``step`` is called before each message: the month moves its simulated clock there, so
    the messages are as far apart as the chat's sender may write (``STEP_MS``), not all in
    one simulated minute (over ``messages_per_sender_per_minute``).
    """
    found = CpuByKind()
    before = _seconds(pids)
    await asyncio.sleep(IDLE_SECONDS)
    idle = (_seconds(pids) - before) / IDLE_SECONDS
    found.idle_ms_per_second = idle * 1000
    samples: dict[str, list[float]] = {kind: [] for kind in KINDS}
    ordinal = FIRST_ORDINAL
    for r in range(rounds):
        for kind in KINDS[r % len(KINDS) :] + KINDS[: r % len(KINDS)]:
            started, cpu = time.monotonic(), _seconds(pids)
            for _ in range(per_phase):
                ordinal += 1
                step()
                problem = await _one(tg, chat, kind, ordinal, found)
                if problem is not None:
                    found.problems.append(problem)
                    return found
            wall = time.monotonic() - started
            spent = _seconds(pids) - cpu - idle * wall
            samples[kind].append(spent / per_phase * 1000)
            found.messages += per_phase
    for kind, values in samples.items():
        found.per_message_ms[kind] = statistics.median(values)
        found.spread_ms[kind] = (min(values), max(values))
    return found


async def _one(
    tg: FakeTelegram, chat: Chat, kind: str, ordinal: int, found: CpuByKind
) -> str | None:
    """Send one message of ``kind`` and wait for its answer (and, for a document, the file
    sent back); a problem if none came within ``ANSWER_WITHIN``."""
    token = f"#q{chat.index}n{ordinal}#"
    since = _next_call(tg)
    if kind == "text":
        tg.push_message(chat.chat_id, f"hello there, this is {token}", user_id=writer_of(chat))
    else:
        found.media_bytes += send_medium(tg, chat.chat_id, token, kind, ordinal)[1]
    wanted = {"sendMessage"} | ({"sendDocument"} if kind == "document" else set())
    deadline = time.monotonic() + ANSWER_WITHIN
    while time.monotonic() < deadline:
        got = {
            c.method
            for c in tg.calls(since=since, chat_id=chat.chat_id)
            if c.ok and token in str(c.params.get("text") or c.params.get("caption") or "")
        }
        if wanted <= got:
            return None
        await asyncio.sleep(0.005)
    return f"cpu by kind: {kind} message {token} not answered within {ANSWER_WITHIN:.0f} s"


def _next_call(tg: FakeTelegram) -> int:
    calls = tg.calls()
    return calls[-1].index + 1 if calls else 0


def _seconds(pids: list[int]) -> float:
    """CPU seconds of every serving process so far (a message's costs, whichever node ran it)."""
    return sum(run_seconds(pid) for pid in pids)
