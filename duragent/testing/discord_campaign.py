r"""The Discord restart campaign: chats keep writing while ``duragent serve`` is SIGKILLed.

Shared by ``tests/gateways/discord/test_restart_campaign.py`` (short) and
``bench/restarts/discord.py`` (long). The plan, the group model and the verdict are the
Telegram campaign's (``campaign_verdict``; ``telegram_campaign`` defines each check), and so
are the two agents (``campaign_workspace``):
DMs closed-loop with every fifth message a ``!call bash`` that asks for approval, groups up to
three mentions ahead, each after two lines of chatter. The fake Discord and the group model
run in this process; ``duragent serve`` in a child, killed at random moments and started
again at once while the chats go on writing.

What differs is delivery. Telegram keeps an update until the bot confirms it; Discord's
gateway sends an event once, to the connections open at that moment, and a new process
(which cannot RESUME a dead one's session: it IDENTIFYs and gets nothing from before) never
sees what it missed (the Discord gateway spec: "Messages sent while the bot is offline are
not fetched at start"). So "accepted" is defined per message:

- written while no serving process is connected: **not delivered (written while no bot
  connected)**, a platform limit, not a loss. The chat then waits until the bot is back (a
  user waits for an answer), so each outage costs each chat at most one message (a group up to
  its window);
- dispatched to a connected process: must be answered exactly once, unless that process was
  killed before it recorded the message (the store, read after the restart, says so): **not
  delivered (in flight to a killed process)**, the same limit (the gateway delivers at most
  once). A dispatched message that was recorded, or whose process was never killed, and has
  no answer is **missing**.

Approvals cross a restart on purpose: while kills remain, a prompt is pressed only once the
next process is serving (a press while no bot is connected fails on Discord: the user sees
"This interaction failed" and presses again). The button was sent by the killed process; the
new one must still route it (discord.py's dynamic items). A press that reached a process
killed before it decided is pressed again after the restart, as its user would.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from duragent.testing import FakeDiscord, ScriptedLLMServer
from duragent.testing.campaign_loop import CampaignLoop
from duragent.testing.campaign_verdict import (
    GROUP_WINDOW,
    IN_FLIGHT,
    OFFLINE,
    CampaignMessage,
    CampaignResult,
    Chat,
    SentText,
    answer_tokens,
    group_model,
    mark_answers,
    mark_chatter,
    plan,
    verdict,
)
from duragent.testing.campaign_workspace import recorded_message_ids, write_campaign_agents
from duragent.testing.discord_objects import Person
from duragent.testing.serve_process import ServeProcess

__all__ = ["TOKEN", "DiscordCampaign", "dump_calls", "run_campaign", "write_campaign_workspace"]

TOKEN = "MTI0MjQyNDI0MjQyNDI0MjQy.GAbc12.abcdefghijklmnopqrstuvwxyz0123456789AB"
"""Shaped like a Discord bot token (the gateway checks the shape before any call)."""

DRAIN_SECONDS = 0.3
"""After a kill, before the next start: the fake reads what the killed process had sent."""
WRITER = Person(700, "writer")
"""Who writes every answerable message (and so may approve its tool call)."""
CHATTERERS = [Person(500 + n, f"chatter{n}") for n in range(4)]

_CONFIG = """\
server:
  host: 127.0.0.1
gateways:
  discord:
    bot_token: '{token}'
    base_url: {base_url}
routes:
  - match: {{chat_type: dm}}
    agent: dm
  - match: {{chat_type: group}}
    agent: group
"""


def write_campaign_workspace(root: Path, *, discord_url: str, llm_url: str) -> Path:
    """Write the campaign's workspace under ``root``; returns its ``duragent.yaml``."""
    config = root / "duragent.yaml"
    config.write_text(_CONFIG.format(token=TOKEN, base_url=discord_url))
    write_campaign_agents(root, llm_url)
    return config


@dataclass
class DiscordDelivery:
    """How one message of the campaign's reached (or missed) the bot."""

    discord_id: str
    lifetime: int
    """The serving process connected when it was dispatched (-1: none)."""


class DiscordCampaign(CampaignLoop):
    """The campaign's chats against the fake Discord (module docstring).

    The month of strangers (``bench/strangers/discord_side.py``) runs one beside its
    Telegram campaign: no kills of its own (the month's kill the server), its writing paced
    by the month, its authors and presses its own.
    """

    def __init__(
        self,
        dc: FakeDiscord,
        serve: ServeProcess,
        root: Path,
        chats: list[Chat],
        kills: int,
        rng: random.Random,
        stall_seconds: float,
    ) -> None:
        total = sum(len(c.messages) for c in chats)
        lo, hi = max(1, total // 20), max(2, total * 9 // 10)
        super().__init__(sorted(rng.sample(range(lo, hi), kills)), stall_seconds)
        self.dc = dc
        self.serve = serve
        self.root = root
        self.plan = chats
        self.by_id = {c.chat_id: c for c in chats}
        self.rng = rng
        self.total = total
        self.kill_times: list[float] = []
        self.seen_calls = 0
        self.sent: list[SentText] = []
        self.deliveries: dict[str, DiscordDelivery] = {}
        """Per token (answerable messages and chatter lines)."""
        self.offline_waiting: set[str] = set()
        """Tokens written while no bot was connected: their chat waits for the next start."""
        self.press_lifetime: dict[str, int] = {}
        self.down = False
        """Between a kill and the next process serving."""
        self.after_restart: list[CampaignMessage] = []
        """Presses due while no bot was connected: made once the next process serves."""
        self.presses_repeated = 0
        self.files_sent: list[tuple[int, str, float]] = []
        """(channel, caption, time) of each file the bot posted."""
        self._replies: dict[int, int] = {}
        """Discord id of each reply the bot posted → its place in ``sent``."""
        self.withdrawn: set[int] = set()
        """Places in ``sent`` of replies deleted since (previews a restart took back)."""

    # -- what the bot sent --------------------------------------------------------------------

    def read_sends(self) -> None:
        """Take in the bot's messages since the last read: answers and prompts.

        A reply written while it streams is posted as a preview and then edited into its
        final text (``frontkit.preview``), or deleted when a kill came first and its turn
        ran again: a reply is read from its post (a person sees it start, and may write
        again), its text is what its edits end with, and a deleted one is no answer.
        """
        every = self.dc.calls(since=self.seen_calls)
        if every:
            self.seen_calls = every[-1].index + 1
        for call in every:
            if call.method in ("PATCH", "DELETE") and call.status in (200, 204):
                self._edited(call.method, call.path, call.body)
            if call.method != "POST" or not call.path.endswith("/messages"):
                continue
            if call.status != 200 or call.repeated:
                continue
            chat_id = int(call.path.split("/")[2])
            text = str(call.body.get("content", ""))
            if call.body.get("attachments"):  # a file the agent sent (its caption no answer)
                self.files_sent.append((chat_id, text, call.time))
                continue
            components = call.body.get("components") or []
            lifetime = self.serve.lifetime_of(call.time, call.node)
            if not components:
                self._replies[int(call.answer["id"])] = len(self.sent)
            self.sent.append(SentText(chat_id, text, call.time, lifetime, bool(components)))
            chat = self.by_id.get(chat_id)
            if chat is None:
                continue
            waiting = {m.token: m for m in chat.messages[: chat.next] if m.answered_at is None}
            if components:
                self.take_prompt(waiting, text, int(call.answer["id"]), components)
                continue
            self.answered += len(mark_answers(list(waiting.values()), text, call.time))

    def _edited(self, method: str, path: str, body: dict[str, Any]) -> None:
        """A reply's edit (its text now) or deletion (no answer after all)."""
        index = self._replies.get(int(path.rsplit("/", 1)[1]) if path[-1].isdigit() else 0)
        if index is None:
            return
        if method == "DELETE":
            self.withdrawn.add(index)
        elif body.get("content") is not None:
            self.sent[index] = replace(self.sent[index], text=str(body["content"]))

    def answers(self) -> list[SentText]:
        """What the bot sent that stands: deleted previews left out (for ``verdict``)."""
        return [s for i, s in enumerate(self.sent) if i not in self.withdrawn]

    def take_prompt(
        self, waiting: dict[str, CampaignMessage], text: str, message_id: int, components: Any
    ) -> None:
        """An approval prompt naming waiting messages: press it now, or after the next kill."""
        for token in answer_tokens(text):
            m = waiting.get(token)
            if m is None:
                continue
            first = m.prompt_id is None
            m.prompts += 1
            m.prompt_id = message_id
            m.prompt_data = str(components[0]["components"][0]["custom_id"])  # Allow Once
            if not first:  # asked again (after a restart): a user presses the new one
                if m.pressed_at is not None:
                    self.press_soon(m)
            elif self.kills_done < len(self.kill_points):
                m.held_over_kill = True
                self.held.append(m)
            else:
                self.press_soon(m)

    # -- what users do ------------------------------------------------------------------------

    def press_soon(self, m: CampaignMessage) -> None:
        """Press now if a bot is there to get it, else once the next process serves."""
        if self.down or self.connected_lifetime() < 0:
            self.after_restart.append(m)
            return
        asyncio.get_running_loop().create_task(self.press(m))

    async def press(self, m: CampaignMessage) -> None:
        """Press "Allow Once" on ``m``'s prompt as its writer."""
        assert m.prompt_id is not None
        assert m.prompt_data is not None
        m.mark_pressed(time.monotonic())
        self.press_lifetime[m.token] = self.connected_lifetime()
        await self.dc.press(m.prompt_id, m.prompt_data, WRITER)

    def connected_lifetime(self) -> int:
        """The serving process a dispatch now reaches, or -1 (none connected)."""
        if self.serve.pid is None or self.dc.gateway.connected == 0:
            return -1
        return len(self.serve.lifetimes) - 1

    async def write(self, chat_id: int, token: str, text: str, author: Person) -> bool:
        """Post as ``author``; whether a connected bot was there to get it."""
        lifetime = self.connected_lifetime()
        mentions = [self.dc.bot] if text.startswith(f"<@{self.dc.bot.id}>") else []
        sent = await self.dc.push_message(chat_id, text, author, mentions=mentions)
        self.deliveries[token] = DiscordDelivery(str(sent["id"]), lifetime)
        return lifetime >= 0

    def waiting_on(self, chat: Chat) -> int:
        """Messages the chat's user waits on: unanswered and not known lost."""
        return sum(
            1
            for m in chat.messages[: chat.next]
            if m.answered_at is None and (m.undelivered is None or m.token in self.offline_waiting)
        )

    async def write_more(self) -> None:
        """Each chat writes up to its window (DMs one, channels ``GROUP_WINDOW``)."""
        mention = f"<@{self.dc.bot.id}>"
        for chat in self.plan:
            window = GROUP_WINDOW if chat.group else 1
            while chat.next < len(chat.messages) and self.waiting_on(chat) < window:
                m = chat.messages[chat.next]
                for n, line in enumerate(m.chatter):
                    author = CHATTERERS[n % len(CHATTERERS)]
                    await self.write(chat.chat_id, line, f"just chatting {line}", author)
                m.pushed_at = time.monotonic()
                chat.next += 1
                if not await self.write(chat.chat_id, m.token, m.text(mention), WRITER):
                    m.undelivered = OFFLINE
                    self.offline_waiting.add(m.token)

    # -- kills --------------------------------------------------------------------------------

    async def kill_and_restart(self) -> None:
        """SIGKILL ``duragent serve``, start it again, settle what the kill took."""
        await asyncio.sleep(self.rng.uniform(0, 0.15))
        killed = len(self.serve.lifetimes) - 1
        self.down = True
        self.serve.kill()
        self.kill_times.append(time.monotonic())
        await asyncio.sleep(DRAIN_SECONDS)  # the fake stamps what the killed process sent
        self.serve.start()
        await self.serve.wait_ready()
        self.settle_after(killed)
        due, self.held, self.after_restart = [*self.held, *self.after_restart], [], []
        self.down = False
        for m in due:  # buttons the killed process sent, pressed now
            self.press_soon(m)

    def settle_after(self, killed: int) -> None:
        """After a restart: what the killed process took with it, and what waits no more."""
        self.offline_waiting.clear()
        recorded = recorded_message_ids(self.root)
        for chat in self.plan:
            for m in chat.messages[: chat.next]:
                if m.answered_at is not None or m.undelivered is not None:
                    continue
                delivery = self.deliveries.get(m.token)
                lost = delivery is not None and delivery.discord_id not in recorded
                if lost and delivery is not None and delivery.lifetime == killed:
                    m.undelivered = IN_FLIGHT
                    continue
                if m.pressed_at is not None and self.press_lifetime.get(m.token) == killed:
                    self.presses_repeated += 1  # the press died with the process
                    self.after_restart.append(m)

    def done(self) -> bool:
        """Every message written and answered, or known not delivered."""
        return all(
            m.answered_at is not None or (m.undelivered and m.token not in self.offline_waiting)
            for c in self.plan
            for m in c.messages
        ) and all(c.next == len(c.messages) for c in self.plan)

    async def press_leftovers(self) -> None:
        """Press what is still held once the kills ran out."""
        for m in [*self.held, *self.after_restart]:  # kills ran out before these were pressed
            await self.press(m)


def dump_calls(path: Path, dc: FakeDiscord) -> None:
    """Every REST call, one JSON object a line (to read a failure)."""
    with path.open("w") as out:
        for call in dc.calls():
            out.write(json.dumps(call.to_json()) + "\n")


async def run_campaign(
    *,
    messages: int,
    chats: int,
    kills: int,
    seed: int = 1,
    workdir: Path | None = None,
    stall_seconds: float = 30.0,
) -> tuple[CampaignResult, int]:
    """Run one campaign: its result, and how many presses were repeated after a kill.

    ``workdir`` (default: a temporary directory, removed) holds the workspace, ``calls.jsonl``
    and each serving process's log.
    """
    rng = random.Random(seed)
    root = workdir or Path(tempfile.mkdtemp(prefix="dc-campaign-"))
    try:
        async with (
            FakeDiscord(TOKEN) as dc,
            ScriptedLLMServer(responder=group_model) as llm,
        ):
            the_plan = plan(chats, messages, rng)
            for chat in the_plan:  # positive ids: guild channels must exist before READY
                chat.chat_id = 5000 + chat.index if chat.group else 1000 + chat.index
                if chat.group:
                    await dc.add_channel(chat.chat_id)
            config = write_campaign_workspace(root, discord_url=dc.url, llm_url=llm.openai_base_url)
            serve = ServeProcess(config, gateway="discord")
            campaign = DiscordCampaign(dc, serve, root, the_plan, kills, rng, stall_seconds)
            started = time.monotonic()
            serve.start()
            try:
                await serve.wait_ready()
                await campaign.run()
            finally:
                serve.stop()
            dump_calls(root / "calls.jsonl", dc)
            ids = {token: d.discord_id for token, d in campaign.deliveries.items()}
            mark_chatter(campaign.plan, ids, recorded_message_ids(root))
            wall = time.monotonic() - started
            result = verdict(
                campaign.plan,
                campaign.answers(),
                serve,
                campaign.kill_times,
                wall,
                at_most_once=True,
            )
            return result, campaign.presses_repeated
    finally:
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)
