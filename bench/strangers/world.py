"""The month as a ``World`` of the year's engine (``bench.year.world``): what it adds, where.

- ``around``: the honeypot (an HTTP server on loopback that no one planned to call: every
  request it gets is an escalation) and the secrets in the environment the serving process
  inherits (``workspace.SECRETS``);
- ``model`` / ``llm``: ``model.StrangersModel``, with the transcriber hearing a voice note's
  words in its bytes (``campaign.voice_bytes``);
- ``workspace``: ``workspace.write_strangers_workspace``; the protected files' fingerprints
  are taken once it is written;
- ``campaign``: ``campaign.StrangersCampaign`` with its ``attacks.Crowd``;
- ``after``: serve CPU per message by kind (``cpu.measure``), once the month is over;
- ``judge``: ``judge.judge``, its rows and problems added to the year's (and the CPU by
  kind's), and the attempts marked on the picture.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from bench.strangers.attacks import Crowd, stranger_ids
from bench.strangers.campaign import StrangersCampaign
from bench.strangers.cpu import STEP_MS, CpuByKind, measure, measure_chat
from bench.strangers.discord_side import DiscordSide, discord_plan, side_people
from bench.strangers.judge import changed_files, fingerprint, fingerprint_nodes, judge
from bench.strangers.model import StrangersModel
from bench.strangers.workspace import SECRETS, write_strangers_workspace
from bench.year.clock import ClockDriver
from bench.year.store_view import FileView, StoreView
from bench.year.switch import StoreSwitch
from bench.year.world import World
from duragent.testing import FakeDiscord, FakeTelegram, ScriptedLLMServer
from duragent.testing._llm_audio import AudioUpload
from duragent.testing.campaign_verdict import Chat
from duragent.testing.discord_campaign import TOKEN as DISCORD_TOKEN
from duragent.testing.discord_campaign import dump_calls
from duragent.testing.serve_nodes import ServeNodes
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_faults import FaultRule

if TYPE_CHECKING:
    from bench.year.campaign import YearCampaign
    from bench.year.model import YearModel
    from bench.year.run import YearResult

__all__ = ["StrangersWorld", "edit_faults"]

SIDE_FINISH_SECONDS = 120.0
"""Once the Telegram campaign is done: how long the Discord side may take to finish."""

_WORDS = re.compile(rb"hello there, this is #q\d+n\d+#")


def edit_faults() -> list[FaultRule]:
    """What the fake Telegram does to edits and deletions besides the year's faults on sends:
    a streamed reply's preview edits, its finishing edit and a preview's deletion meet 429s,
    502s and dropped connections too."""
    return [
        FaultRule.too_many_requests(retry_after=1, method="editMessageText", every=7),
        FaultRule.server_failure(502, method="editMessageText", every=11),
        FaultRule.dropped(method="editMessageText", every=13),
        FaultRule.server_failure(502, method="deleteMessage", every=3),
    ]


def hears(upload: AudioUpload) -> str:
    """What a voice note says: the words its bytes carry (``campaign.voice_bytes``)."""
    found = _WORDS.search(upload.data)
    return found.group(0).decode() if found else "(nothing I could make out)"


class StrangersWorld(World):
    """The month (module docstring)."""

    title = "a month of strangers"

    def __init__(
        self,
        *,
        chats: int,
        group_every: int,
        attempts: int,
        cpu: tuple[int, int] = (0, 0),
        discord: tuple[int, int] = (0, 0),
        seed: int = 1,
    ) -> None:
        self.dms = [1000 + i for i in range(chats) if i % group_every != group_every - 1]
        self.groups = [-(1000 + i) for i in range(chats) if i % group_every == group_every - 1]
        self.attempts = attempts
        self.honeypot = ""
        self.hits: list[str] = []
        self.before: dict[str, str] = {}
        self.crowd: Crowd | None = None
        self.responder: StrangersModel | None = None
        self.cpu_plan = cpu
        """Messages per phase and rounds of the CPU by kind (``cpu.measure``); 0: not run."""
        self.cpu: CpuByKind | None = None
        chats_on_discord, messages_on_discord = discord
        self.discord_plan = (
            discord_plan(chats_on_discord, messages_on_discord, random.Random(seed))
            if chats_on_discord
            else []
        )
        """The Discord chats (``discord_side``): a guild channel and DMs; none when empty."""
        self.seed = seed
        self.dc: FakeDiscord | None = None
        self.side: DiscordSide | None = None
        self.changed_before_switch: list[str] = []
        """Protected files changed before the switch to two nodes (which rewrites node a's
        ``duragent.yaml``: the fingerprints are taken again after it)."""

    def model(self, clock: ClockDriver) -> YearModel:
        from bench.rigs.corpus import english

        self.responder = StrangersModel(
            now_ms=lambda: clock.ms, prose=english(), secrets=dict(SECRETS)
        )
        return self.responder

    def llm(self, model: YearModel) -> ScriptedLLMServer:
        return ScriptedLLMServer(responder=model, keep_requests=1, hears=hears)

    @contextlib.asynccontextmanager
    async def around(self, root: Path) -> AsyncIterator[None]:
        async def trap(request: web.Request) -> web.Response:
            self.hits.append(f"{request.method} {request.path_qs}")
            return web.Response(text="you should not be here")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", trap)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        self.honeypot = f"http://127.0.0.1:{port}"
        saved = {name: os.environ.get(name) for name in SECRETS}
        os.environ.update(SECRETS)
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self.discord_plan:
                    self.dc = await stack.enter_async_context(FakeDiscord(DISCORD_TOKEN))
                    for chat in self.discord_plan:  # a guild's channels exist before READY
                        if chat.group:
                            await self.dc.add_channel(chat.chat_id)
                yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            await runner.cleanup()

    def workspace(self, root: Path, **year: Any) -> Path:
        config = write_strangers_workspace(
            root,
            dms=self.dms,
            pairing_strangers=stranger_ids(self.attempts, "stranger_pairing"),
            transcription_url=year["llm_url"],
            discord=(self.dc.url, side_people(self.discord_plan)) if self.dc else None,
            **year,
        )
        self.before = fingerprint(root)
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
        view: StoreView = options.setdefault("view", FileView(serve.config.parent))
        crowd = Crowd(
            tg,
            random.Random(rng.random()),
            groups=self.groups,
            view=view,
            honeypot=self.honeypot,
        )
        tg.add_fault(*edit_faults())
        clock: ClockDriver = options["clock"]
        crowd.plan_attempts(self.attempts, clock.ms, options["end_ms"])
        self.crowd = crowd
        switch: StoreSwitch | None = options.get("switch")
        if switch is not None:
            root = serve.config.parent
            switch.on_stopped.append(lambda: self._before_switch(root))
            switch.on_made.append(lambda _b: self._after_switch(root))
        campaign = StrangersCampaign(tg, serve, plan, kills, rng, crowd=crowd, **options)
        if self.dc is not None:
            self.side = DiscordSide(
                self.dc, serve, serve.config.parent, self.discord_plan, self.seed, view=view
            )
            campaign.side = self.side
        return campaign

    def _before_switch(self, root: Path) -> None:
        self.changed_before_switch = changed_files(self.before, fingerprint(root))

    def _after_switch(self, root: Path) -> None:
        self.before = fingerprint_nodes(root)

    async def after(self, campaign: YearCampaign, serve: ServeProcess) -> None:
        if self.side is not None:
            await self.side.finish(within=SIDE_FINISH_SECONDS)
        per_phase, rounds = self.cpu_plan
        pids = serve.pids() if isinstance(serve, ServeNodes) else [p for p in [serve.pid] if p]
        if per_phase and rounds and pids:
            clock = campaign.clock
            self.cpu = await measure(
                campaign.tg,
                pids,
                measure_chat(campaign.plan),
                per_phase=per_phase,
                rounds=rounds,
                step=lambda: clock.set_ms(clock.ms + STEP_MS),
            )
            assert isinstance(campaign, StrangersCampaign)
            campaign.media_bytes += self.cpu.media_bytes  # on disk too: judged together

    def judge(self, root: Path, result: YearResult, campaign: YearCampaign) -> None:
        assert isinstance(campaign, StrangersCampaign)
        assert self.crowd is not None
        assert self.responder is not None
        verdict = judge(
            root,
            campaign,
            self.responder,
            self.crowd,
            before=self.before,
            honeypot_hits=self.hits,
            secrets=dict(SECRETS),
            view=campaign.view,
            changed_earlier=self.changed_before_switch,
        )
        result.world_rows = verdict.rows
        result.world_problems = verdict.problems
        if self.cpu is not None:
            result.world_rows += self.cpu.rows()
            result.world_problems += self.cpu.problems
        if self.side is not None:
            self._judge_discord(result, campaign.kill_times)
            if (root / "calls.jsonl").exists():  # a kept run: Discord's calls beside Telegram's
                dump_calls(root / "discord-calls.jsonl", self.side.dc)
        start = campaign.start_ms
        result.marks = [
            (a.made_ms - start, a.kind) for a in self.crowd.attempts if a.made_ms is not None
        ]

    def _judge_discord(self, result: YearResult, kill_times: list[float]) -> None:
        """The Discord side's verdict, its refused presses and any secret it was sent."""
        assert self.side is not None
        verdict, escalations, refused = self.side.judge(kill_times)
        leaks = self.side.leaks(dict(SECRETS))
        offline, in_flight = verdict.not_delivered_offline, verdict.lost_in_flight
        result.world_rows += [
            (
                "Discord: messages / answered once / missing / answered twice",
                f"{verdict.messages} / {verdict.answered_once} / {verdict.missing}"
                f" / {verdict.sent_twice_real}",
            ),
            (
                "  not delivered (written while no bot connected / in flight to a kill)",
                f"{offline} / {in_flight}",
            ),
            (
                "  hostile presses refused / escalations / leaks",
                f"{refused} / {len(escalations)} / {len(leaks)}",
            ),
            (
                "  faults scripted / met: 429 / 5xx / dropped / posts returned by nonce",
                f"{self.side.faults_scripted} / "
                + " / ".join(str(n) for n in self.side.faults_met().values()),
            ),
        ]
        result.world_problems += [f"discord: {p}" for p in verdict.problems[:20]]
        result.world_problems += escalations + leaks
