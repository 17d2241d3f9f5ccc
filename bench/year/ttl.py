"""The simulated year's TTL check: idleness is measured on the simulated calendar.

``duragent serve`` completes a session idle longer than ``sessions.ttl_hours`` (the TTL sweep,
``duragent.runtime.expiry``), comparing the session's ``updated_at`` with the process's
calendar, which in the year is the simulated clock (``serve.py``). The year sets the TTL to
``TTL_SHARE`` of the run and lets one DM in ten fall silent after the first 30 %
(``campaign.lapses``; a chat that falls behind ends later, still months before the
end). A chat is *silent* from its last exchange (``YearCampaign.last_active``: its last
message, press or reply; in a short run's simulated time a reply can come days after the
message it answers). At the end, through ``GET /api/v1/sessions``:

- a chat silent for longer than the TTL (plus ``SLACK`` of it: the sweep runs hourly on the
  simulated clock, but at most every few real seconds) has **no active session**;
- a chat active within the TTL (minus the slack) has **one**: a conversation that goes
  on is never cut by the sweep (any cut would also show as a failed probe or a missing
  answer). Neither is a chat whose message still waits for its answer
  (``SessionOps.expire_if_idle``).

A session's chat is read from its snapshot (``config.gateway_chat_id``), through the run's
``store_view.StoreView`` (the files, or the database the nodes share).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from bench.year.store_view import StoreView
from duragent.runtime.expiry import FLOOR_SECONDS

__all__ = [
    "OVERRUN_HOLD",
    "OVERRUN_HOURS",
    "SLACK",
    "TTL_SHARE",
    "TtlCheck",
    "check_ttl",
    "ttl_hours_for",
]

OVERRUN_HOLD = FLOOR_SECONDS + 0.5
"""Real seconds each hour past the end is held (``YearCampaign.overrun``): a sweep runs."""
OVERRUN_HOURS = 12
"""Hours past the end the run waits, one at a time, for the sweep to end the silent chats'
sessions (an hourly sweep needs one or two; more is a sweep that does not run)."""
TTL_SHARE = 0.25
"""The TTL is a quarter of the run: a year's chat may be silent three months before its
session ends (a chat of this year writes about daily, and waits at most half the TTL for an
approval held over a kill)."""
SLACK = 0.5
"""Chats whose silence is within this share of the TTL from it are not judged (a chat's
last event, its last reply's delivery record, comes after the reply was read: in a short
run's simulated time, up to a few hours later)."""


def ttl_hours_for(days: float) -> int:
    """``sessions.ttl_hours`` for a run of ``days`` simulated days."""
    return max(1, round(days * 24 * TTL_SHARE))


@dataclass
class TtlCheck:
    ttl_hours: int
    lapsed: int = 0
    """Chats silent past the TTL at the end."""
    ended: int = 0
    """Of them, chats with no active session (the sweep ended it)."""
    talking: int = 0
    """Chats active within the TTL."""
    kept: int = 0
    """Of them, chats with exactly one active session."""
    problems: list[str] = field(default_factory=list)


async def check_ttl(
    base_url: str, view: StoreView, last_active: dict[int, int], end_ms: int, ttl_hours: int
) -> TtlCheck:
    """Judge each chat's sessions against its silence (module docstring)."""
    check = TtlCheck(ttl_hours)
    async with httpx.AsyncClient(timeout=30) as client:
        answer = await client.get(f"{base_url}/api/v1/sessions", params={"limit": 1000})
        answer.raise_for_status()
        listed = answer.json()["sessions"]
    chats = view.session_chats()
    active: dict[int, int] = {}
    for entry in listed:
        chat = chats.get(entry["session_id"])
        if chat is not None and entry["status"] in ("active", "paused", "running"):
            active[chat] = active.get(chat, 0) + 1
    ttl_ms = ttl_hours * 3_600_000
    for chat, active_at in sorted(last_active.items()):
        silence = end_ms - active_at
        if silence > ttl_ms * (1 + SLACK):
            check.lapsed += 1
            if active.get(chat, 0) == 0:
                check.ended += 1
            else:
                check.problems.append(
                    f"ttl: chat {chat} silent {silence / 86_400_000:.1f} days "
                    f"(TTL {ttl_hours / 24:.1f}) still has an active session"
                )
        elif silence < ttl_ms * (1 - SLACK):
            check.talking += 1
            if active.get(chat, 0) == 1:
                check.kept += 1
            else:
                check.problems.append(
                    f"ttl: chat {chat} active {silence / 86_400_000:.1f} days before the end "
                    f"has {active.get(chat, 0)} active sessions, not 1"
                )
    return check
