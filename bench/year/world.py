"""What a run puts around the year's engine: its workspace, its model and its campaign.

``run.run_year`` drives one ``World``: the simulated year's own (this class) or a world that
adds to it, such as ``bench/strangers`` (a month of a public group served to a crowd it does
not trust), which subclasses each piece instead of copying the engine. Every hook has the
year's behaviour by default; ``judge`` is where a world adds the rows it prints and the
problems that fail its run.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.rigs.corpus import english
from bench.year.campaign import YearCampaign
from bench.year.clock import ClockDriver
from bench.year.model import YearModel
from bench.year.workspace import write_workspace
from duragent.testing import FakeTelegram, ScriptedLLMServer
from duragent.testing.campaign_verdict import Chat
from duragent.testing.serve_process import ServeProcess

if TYPE_CHECKING:
    from bench.year.run import YearResult

__all__ = ["World"]


class World:
    """The simulated year (module docstring): each hook is one piece ``run_year`` builds."""

    title = "a simulated year"
    """How the picture names the run."""

    def model(self, clock: ClockDriver) -> YearModel:
        """The scripted model's responder, reading the simulated clock."""
        return YearModel(now_ms=lambda: clock.ms, prose=english())

    def llm(self, model: YearModel) -> ScriptedLLMServer:
        """The model server (real HTTP) answering through ``model``."""
        return ScriptedLLMServer(responder=model, keep_requests=1)

    @contextlib.asynccontextmanager
    async def around(self, root: Path) -> AsyncIterator[None]:
        """Whatever else must run for the whole run (default: nothing)."""
        yield

    def workspace(
        self,
        root: Path,
        *,
        telegram_url: str,
        llm_url: str,
        every_seconds: int,
        ttl_hours: int,
        pulse: tuple[int, int] | None,
    ) -> Path:
        """Write the workspace under ``root``; returns its ``duragent.yaml``."""
        return write_workspace(
            root,
            telegram_url=telegram_url,
            llm_url=llm_url,
            every_seconds=every_seconds,
            ttl_hours=ttl_hours,
            pulse=pulse,
        )

    def for_node(self, config: dict[str, Any], name: str) -> dict[str, Any]:
        """Node ``name``'s ``duragent.yaml`` from the first node's (a run's second half on
        two nodes): each gateway's fake addressed under ``/n/<name>``, so the fakes tell
        its calls apart (``duragent.testing._fake_nodes``)."""
        for gateway in config.get("gateways", {}).values():
            if isinstance(gateway, dict) and "base_url" in gateway:
                gateway["base_url"] = f"{str(gateway['base_url']).rstrip('/')}/n/{name}"
        return config

    def campaign(
        self,
        tg: FakeTelegram,
        serve: ServeProcess,
        plan: list[Chat],
        kills: int,
        rng: random.Random,
        **options: Any,
    ) -> YearCampaign:
        """The campaign that writes the chats and kills the server (``YearCampaign``)."""
        return YearCampaign(tg, serve, plan, kills, rng, **options)

    async def after(self, campaign: YearCampaign, serve: ServeProcess) -> None:
        """Measure what needs the run over and its server still up (default: nothing)."""
        return None

    def judge(self, root: Path, result: YearResult, campaign: YearCampaign) -> None:
        """Add this world's rows and problems to ``result`` (the year adds none)."""
        return None
