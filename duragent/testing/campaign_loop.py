"""The loop every restart campaign runs: read what the bot sent, write more, kill on schedule.

The Telegram, Discord and external gateway campaigns (``duragent.testing.telegram_campaign``,
``discord_campaign``, ``external_campaign``; the simulated year in ``bench/year`` builds on
the Telegram one) differ in how they read the bot's sends, write messages and restart
``duragent serve``; when to kill, when to give up and how to end are the same, here. A
campaign subclasses ``CampaignLoop`` and fills in the abstract steps.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod

from duragent.testing.campaign_verdict import CampaignMessage

__all__ = ["CampaignLoop"]

TICK_SECONDS = 0.01
HELD_ONLY_SECONDS = 1.0
"""When only held approvals are left waiting this long, the next kill comes now."""
LATE_COPIES_SECONDS = 1.0
"""After the last answer: how long late copies of replies may still show up."""


class CampaignLoop(ABC):
    """Kills at ``kill_points`` (answers so far), stalls after ``stall_seconds`` of nothing."""

    def __init__(self, kill_points: list[int], stall_seconds: float) -> None:
        self.kill_points = kill_points
        self.stall_seconds = stall_seconds
        self.kills_done = 0
        self.answered = 0
        self.held: list[CampaignMessage] = []
        """Approval prompts held back to be pressed after the next kill."""
        self.restarting: asyncio.Task[None] | None = None
        self.stalled = False
        """Whether ``run`` gave up after ``stall_seconds`` without an answer."""

    @abstractmethod
    def read_sends(self) -> None:
        """Take in what the bot sent since the last call (answers, prompts)."""

    @abstractmethod
    async def write_more(self) -> None:
        """Let the chats write what they may write now."""

    @abstractmethod
    async def kill_and_restart(self) -> None:
        """SIGKILL ``duragent serve`` and start it again."""

    @abstractmethod
    def done(self) -> bool:
        """Every message answered (or known not delivered) and written."""

    @abstractmethod
    async def press_leftovers(self) -> None:
        """Press what is still held once the kills ran out."""

    def on_stall(self) -> None:
        """Called once when ``run`` gives up: a campaign may record why nothing came."""
        return None

    def may_kill(self) -> bool:
        """Whether the next kill may come now that its point is reached (default: yes)."""
        return True

    def _kill(self) -> None:
        self.kills_done += 1
        self.restarting = asyncio.create_task(self.kill_and_restart())

    async def run(self) -> None:
        """Read, write and kill each tick until ``done`` (or a stall), then press what is left."""
        last_progress, last_answered = time.monotonic(), -1
        while not self.done():
            self.read_sends()
            await self.write_more()
            if self.restarting is not None and self.restarting.done():
                self.restarting.result()
                self.restarting = None
            if (
                self.restarting is None
                and self.kills_done < len(self.kill_points)
                and self.answered >= self.kill_points[self.kills_done]
                and self.may_kill()
            ):
                self._kill()
            if self.answered != last_answered:
                last_progress, last_answered = time.monotonic(), self.answered
            elif (
                self.restarting is None
                and self.held
                and time.monotonic() - last_progress > HELD_ONLY_SECONDS
            ):
                self._kill()  # only held approvals wait: kill now rather than never
            elif self.restarting is None and time.monotonic() - last_progress > self.stall_seconds:
                self.stalled = True
                self.on_stall()
                break  # the verdict names what never came
            await asyncio.sleep(TICK_SECONDS)
        if self.restarting is not None:
            await self.restarting
        await self.press_leftovers()
        await asyncio.sleep(LATE_COPIES_SECONDS)
        self.read_sends()
