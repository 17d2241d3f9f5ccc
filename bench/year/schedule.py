"""The simulated year's scheduler verdict: every due time run once, none twice, none missed.

The expected due times are computed here, independently of the scheduler's own timing code,
with ``zoneinfo``: ``30 2 * * *`` is 02:30 local on every day, and on a day whose 02:30 does
not exist (the spring gap) 03:30, as the scheduler's spec promises; ``datetime``'s default
``fold=0`` is the first pass of a repeated hour (Berlin's autumn). An ``every`` schedule is
due on each multiple of its interval since the epoch (a declared schedule has no anchor).
Only due times after the schedule was first seen (its ``registered`` line) and up to the
clock's last reading are expected.

Then the run logs (``schedules/runs/decl_ops_<name>.jsonl``) are read back: each expected
due time must have exactly one outcome, ``ok`` (or ``interrupted`` after it wrote into the
chat, which the chat's recovery delivers); a ``missed`` line or a second start is a failure.
Deliveries are read from the fake Telegram: each run that recorded its message reached its
chat at least once, and at most once more per kill (the kit's documented crash re-send).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

__all__ = ["ScheduleCheck", "check_schedule", "expected_cron", "expected_every", "read_lines"]


@dataclass
class ScheduleCheck:
    name: str
    expected: int = 0
    ran_once: int = 0
    started_twice: int = 0
    missed: int = 0
    errors: int = 0
    interrupted: int = 0
    unexpected: int = 0
    recorded: int = 0
    delivered: int = 0
    resent: int = 0
    dst_days: int = 0
    """Expected due times on a day whose 02:30 did not exist or came twice."""
    problems: list[str] = field(default_factory=list)


def read_lines(path: Path) -> list[dict[str, Any]]:
    """A JSON-lines file; a torn line (a kill mid-write) is skipped."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def expected_cron(zone: str, hour: int, minute: int, after_ms: int, until_ms: int) -> list[int]:
    """Due times (ms) of ``minute hour * * *`` in ``zone`` in (after, until]."""
    tz = ZoneInfo(zone)
    day = datetime.fromtimestamp(after_ms / 1000, UTC).date() - timedelta(days=1)
    last = datetime.fromtimestamp(until_ms / 1000, UTC).date() + timedelta(days=1)
    out = []
    while day <= last:
        out.extend(_local(day, hour, minute, tz, after_ms, until_ms))
        day += timedelta(days=1)
    return out


def _local(day: date, hour: int, minute: int, tz: ZoneInfo, lo: int, hi: int) -> list[int]:
    wall = datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz)
    back = wall.astimezone(UTC).astimezone(tz)
    if back.replace(tzinfo=None) != wall.replace(tzinfo=None):  # in the spring gap
        wall = wall + timedelta(hours=1)
    ms = int(wall.timestamp() * 1000)
    return [ms] if lo < ms <= hi else []


def expected_every(every_ms: int, after_ms: int, until_ms: int) -> list[int]:
    """Multiples of ``every_ms`` in (after, until]."""
    first = after_ms // every_ms + 1
    return [k * every_ms for k in range(first, until_ms // every_ms + 1)]


def is_dst_day(zone: str, due_ms: int) -> bool:
    """Whether the local day of ``due_ms`` had a clock change."""
    tz = ZoneInfo(zone)
    local = datetime.fromtimestamp(due_ms / 1000, tz)
    start = datetime(local.year, local.month, local.day, tzinfo=tz)
    end = start + timedelta(days=1)
    return start.utcoffset() != end.utcoffset()


def check_schedule(
    name: str,
    lines: list[dict[str, Any]],
    expected: list[int],
    sends: int,
    kills: int,
    zone: str | None = None,
) -> ScheduleCheck:
    """Judge one schedule's run log against its expected due times and what reached the chat."""
    check = ScheduleCheck(name, expected=len(expected))
    starts = Counter(e["due"] for e in lines if e.get("status") == "running" and e["attempt"] == 1)
    check.started_twice = sum(n - 1 for n in starts.values() if n > 1)
    outcomes: dict[int, list[str]] = {}
    recorded = {e["due"] for e in lines if e.get("status") == "recorded"}
    for e in lines:
        status = e.get("status")
        if status in ("ok", "error", "interrupted"):
            outcomes.setdefault(e["due"], []).append(status)
            check.errors += status == "error"
            check.interrupted += status == "interrupted"
        elif status == "missed":
            check.missed += int(e.get("count", 1))
            check.problems.append(
                f"{name}: missed {e.get('count', 1)} due time(s) up to {e['due']}"
            )
    wanted = set(expected)
    for due in expected:
        seen = outcomes.get(due, [])
        ran = seen == ["ok"] or (seen == ["interrupted"] and due in recorded)
        if ran:
            check.ran_once += 1
            if zone is not None and is_dst_day(zone, due):
                check.dst_days += 1
        else:
            check.problems.append(f"{name}: due {_iso(due)}: outcomes {seen}")
    check.unexpected = sum(1 for due in outcomes if due not in wanted)
    if check.unexpected:
        extra = sorted(_iso(d) for d in outcomes if d not in wanted)[:5]
        check.problems.append(f"{name}: {check.unexpected} outcome(s) at unexpected times {extra}")
    if check.started_twice:
        check.problems.append(f"{name}: {check.started_twice} due time(s) started twice")
    check.recorded = len(recorded)
    check.delivered = min(sends, check.recorded)
    check.resent = max(0, sends - check.recorded)
    if sends < check.recorded:
        check.problems.append(f"{name}: {check.recorded} runs recorded, {sends} reached the chat")
    if check.resent > kills:
        check.problems.append(f"{name}: {check.resent} re-sends after {kills} kills")
    return check


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="minutes")
