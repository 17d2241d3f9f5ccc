"""The scheduler's SIGKILL campaign: schedules due every second, the server killed at random.

``duragent serve`` runs as a real child process (``ServeProcess`` from the Telegram restart
campaign), delivering to the fake Telegram Bot API server that lives in this process and
outlives every kill. A few ``every: 1 s`` message schedules post into one chat; the server is
SIGKILLed at random moments and started again. At the end the schedules are cancelled on
disk and the server starts once more, so the chat's recovery delivers what a kill left
recorded and unsent; then the files are read back:

- **run log**: every due time from the first to the last is covered by exactly one outcome
  (``ok``, ``error``, ``interrupted``, or inside one ``missed`` range); no due time was
  started twice (two ``running`` lines for attempt 1); every started due time has an outcome.
- **chat session**: each run that recorded its message (``recorded``) added exactly one
  assistant message to the chat's session, and the chat received each of them: at least
  once, at most once more per kill (a kill between Telegram's answer and the ``delivery``
  record re-sends that one message: no platform makes the two one step).

Used by ``tests/scheduler/test_kill_campaign.py`` (short) and ``bench/components/scheduler.py``
(long).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from duragent.testing import FakeTelegram
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_campaign import TOKEN

CHAT = 4242
EVERY_MS = 1000

_CONFIG = """\
server:
  host: 127.0.0.1
gateways:
  telegram:
    bot_token: '{token}'
    base_url: {base_url}
    poll_timeout_seconds: 1
    max_messages_per_second: 100000
    max_messages_per_minute_per_group: 100000
    max_messages_per_second_per_chat: 100000
scheduler:
  recurring_grace_seconds: 600
"""

_AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: ticker
spec:
  model:
    provider: offline
    name: duragent-offline
"""


@dataclass
class CampaignResult:
    """What the campaign found (``problems`` empty when every check held)."""

    kills: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    due_times: int = 0
    recorded: int = 0
    delivered: int = 0
    resent: int = 0
    problems: list[str] = field(default_factory=list)


def _write_workspace(root: Path, telegram_url: str, schedules: int, anchor_ms: int) -> Path:
    config = root / "duragent.yaml"
    config.write_text(_CONFIG.format(token=TOKEN, base_url=telegram_url))
    agent = root / ".duragent" / "agents" / "ticker"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "agent.yaml").write_text(_AGENT)
    folder = root / ".duragent" / "schedules"
    folder.mkdir(parents=True, exist_ok=True)
    anchor = datetime.fromtimestamp(anchor_ms / 1000, UTC).isoformat()
    for k in range(schedules):
        doc = {
            "id": f"sched_tick{k}",
            "agent": "ticker",
            "destination": {"gateway": "telegram", "chat_id": str(CHAT)},
            "schedule": {"every": {"every_seconds": EVERY_MS // 1000, "anchor": anchor}},
            "payload": {"message": {"message": f"tick {k}"}},
            "created_at": anchor,
            "status": "active",
        }
        (folder / f"sched_tick{k}.yaml").write_text(json.dumps(doc))
    return config


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _check_run_log(sched_id: str, lines: list[dict[str, Any]], result: CampaignResult) -> None:
    starts = Counter(e["due"] for e in lines if e["status"] == "running" and e["attempt"] == 1)
    for due, n in starts.items():
        if n > 1:
            result.problems.append(f"{sched_id}: due {due} started {n} times")
    covered: Counter[int] = Counter()
    for e in lines:
        if e["status"] in ("ok", "error", "interrupted"):
            covered[e["due"]] += 1
            result.outcomes[e["status"]] += 1
        elif e["status"] == "missed":
            result.outcomes["missed"] += e["count"]
            for due in range(e["first_due"], e["due"] + 1, EVERY_MS):
                covered[due] += 1
    for due in starts:
        if due not in covered:
            result.problems.append(f"{sched_id}: due {due} started and has no outcome")
    if not covered:
        result.problems.append(f"{sched_id}: nothing ran")
        return
    first, last = min(covered), max(covered)
    for due in range(first, last + 1, EVERY_MS):
        if covered[due] != 1:
            result.problems.append(f"{sched_id}: due {due} has {covered[due]} outcomes")
    result.due_times += (last - first) // EVERY_MS + 1


def _session_texts(sessions: Path, session_id: str) -> Counter[str]:
    events: dict[int, dict[str, Any]] = {}
    for name in ("events.archive.jsonl", "events.jsonl"):
        for e in _lines(sessions / session_id / name):
            events.setdefault(e["seq"], e)
    return Counter(e["content"] for e in events.values() if e["type"] == "assistant_response")


async def run_kill_campaign(
    workdir: Path, *, kills: int, seed: int, schedules: int = 3, up_seconds: float = 2.0
) -> CampaignResult:
    """Run the campaign (module docstring); ``up_seconds`` is the mean time between kills."""
    rng = random.Random(seed)
    result = CampaignResult()
    async with FakeTelegram(token=TOKEN) as tg:
        anchor = (int(time.time()) + 2) * 1000
        config = _write_workspace(workdir, tg.url, schedules, anchor)
        serve = ServeProcess(config)
        for _ in range(kills):
            serve.start()
            await serve.wait_ready()
            await asyncio.sleep(rng.uniform(0.2, 2 * up_seconds))
            serve.kill()
            result.kills += 1
            await asyncio.sleep(0.05)
        folder = workdir / ".duragent" / "schedules"
        for k in range(schedules):  # cancelled: the last start only recovers and delivers
            path = folder / f"sched_tick{k}.yaml"
            path.write_text(path.read_text().replace('"active"', '"cancelled"'))
        serve.start()
        await serve.wait_ready()
        runs = {k: _lines(folder / "runs" / f"sched_tick{k}.jsonl") for k in range(schedules)}
        session_ids = {e["session_id"] for r in runs.values() for e in r if "session_id" in e}
        recorded = sum(1 for r in runs.values() for e in r if e["status"] == "recorded")
        deadline = time.monotonic() + 120
        while len(tg.sent_messages(CHAT)) < recorded and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        serve.stop()
        sent = Counter(tg.sent_messages(CHAT))
    for k in range(schedules):
        runs[k] = _lines(folder / "runs" / f"sched_tick{k}.jsonl")
        _check_run_log(f"sched_tick{k}", runs[k], result)
    if len(session_ids) != 1:
        result.problems.append(f"messages went to {len(session_ids)} sessions, not the chat's one")
    in_session: Counter[str] = Counter()
    for session_id in session_ids:
        in_session += _session_texts(workdir / ".duragent" / "sessions", session_id)
    for k in range(schedules):
        text = f"tick {k}"
        recorded_k = len({e["due"] for e in runs[k] if e["status"] == "recorded"})
        result.recorded += recorded_k
        result.delivered += min(sent[text], in_session[text])
        result.resent += max(0, sent[text] - in_session[text])
        if in_session[text] != recorded_k:
            result.problems.append(
                f"{text}: {in_session[text]} in the session, {recorded_k} runs recorded it"
            )
        if sent[text] < in_session[text]:
            result.problems.append(f"{text}: {in_session[text]} recorded, {sent[text]} sent")
    if result.resent > result.kills:
        result.problems.append(f"{result.resent} messages re-sent after {result.kills} kills")
    return result
