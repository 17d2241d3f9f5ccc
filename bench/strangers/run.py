"""One month of strangers: the year's engine (``bench.year.run.run_year``) in this ``World``.

``StrangersConfig`` says how big the month is; ``run_strangers`` runs it and returns the
year's result with the month's rows and problems (``YearResult.world_rows`` and
``world_problems``, from ``judge.py``). ``QUICK`` is the short version the default test suite
runs (``tests/bench/strangers/test_run.py``): a simulated day, two kills, every kind of
attempt twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.strangers.world import StrangersWorld
from bench.year.run import YearConfig, YearResult, run_year
from bench.year.switch import ClusterPlan

__all__ = ["QUICK", "StrangersConfig", "run_strangers"]


@dataclass(frozen=True)
class StrangersConfig:
    days: float = 30.0
    messages: int = 10_000
    chats: int = 60
    group_every: int = 20
    """One chat in ``group_every`` is a public group: 3 groups and 57 DMs of 60."""
    kills: int = 20
    attempts: int = 240
    """Hostile members', blocked members' and strangers' attempts (``attacks.KINDS`` in turn)."""
    seed: int = 1
    every_hours: float = 6.0
    """The digest scheduled into the operator's chat."""
    discord_chats: int = 4
    discord_messages: int = 400
    """Discord beside Telegram: a guild channel and ``discord_chats - 1`` DMs."""
    cpu_per_phase: int = 10
    cpu_rounds: int = 3
    """Serve CPU by kind, once the month is over: messages per phase and rounds (``cpu.py``)."""
    workdir: Path | None = None
    cluster: ClusterPlan | None = None
    """Half the month on PostgreSQL with two nodes (``bench.year.switch``); None: files only."""


QUICK = StrangersConfig(
    days=1.0,
    messages=160,
    chats=12,
    group_every=6,
    kills=2,
    attempts=24,
    discord_chats=3,
    discord_messages=30,
    cpu_per_phase=2,
    cpu_rounds=2,
)


async def run_strangers(config: StrangersConfig) -> YearResult:
    """Run the month ``config`` describes (module docstring)."""
    year = YearConfig(
        days=config.days,
        messages=config.messages,
        chats=config.chats,
        group_every=config.group_every,
        kills=config.kills,
        seed=config.seed,
        every_seconds=int(config.every_hours * 3600),
        pulse_days=0,
        workdir=config.workdir,
        cluster=config.cluster,
    )
    world = StrangersWorld(
        chats=config.chats,
        group_every=config.group_every,
        attempts=config.attempts,
        cpu=(config.cpu_per_phase, config.cpu_rounds),
        discord=(config.discord_chats, config.discord_messages),
        seed=config.seed,
    )
    return await run_year(year, world)
