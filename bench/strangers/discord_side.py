"""Discord beside Telegram: a guild channel and DMs on the month's server, through its kills.

The same ``duragent serve`` the month drives on Telegram also serves a fake Discord
(``duragent.testing.FakeDiscord``): a guild channel where the members write mentions (one
in seven a ``!call bash`` its author approves, after a hostile member pressed the button
first) and a few DMs (closed-loop, every fifth message a tool call). It is the Discord
restart campaign (``duragent.testing.discord_campaign.DiscordCampaign``: its reading, its
verdict, Discord's at-most-once delivery: a message written while no bot is connected, or
dispatched to a process killed before it recorded it, is *not delivered*, counted apart)
with no kills of its own: the month kills the server, and tells this side when
(``down`` / ``back``). Its writing is paced by the month: the k-th of its ``total``
messages waits until the month has answered k/``total`` of its own, so the Discord chats
span the whole month.

Discord has bad moments too (``FAULT_EVERY``): 429s, 502s and connections lost before or
after a post took effect, on posts and on edits; a post repeated after a lost connection
must be returned by its nonce, not shown twice.

Its DMs send media as the Telegram DMs do (``media.media_of``): a photo (its words in
the message), a voice message (its words in its bytes, transcribed), a document the agent
reads with ``cat`` and sends back (``send_file``: a post with the file, not an answer).
``judge_media`` checks each photo reached the model as an image, each document came back
once (again only after a kill), and each attachment was downloaded at most once unless a
kill came while its turn ran.

Its chats' indexes start at ``FIRST_INDEX`` (tokens ``#q900n…#``), apart from the Telegram
plan's. Replies are not streamed slowly here (``model.STREAM_EVERY`` is the Telegram DMs'):
this reader takes a Discord reply from its first send.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

from bench.strangers.cast import HOSTILE, MEMBERS
from bench.strangers.media import ledger, media_of, png, voice_bytes
from bench.year.cluster_kills import NodeKill
from bench.year.store_view import FileView, StoreView
from duragent.frontkit.approval_rights import NOT_REQUESTER
from duragent.frontkit.approvals import NO_PENDING
from duragent.testing import FakeDiscord
from duragent.testing.campaign_verdict import (
    GROUP_WINDOW,
    IN_FLIGHT,
    OFFLINE,
    CampaignMessage,
    CampaignResult,
    Chat,
    mark_chatter,
    plan,
    verdict,
)
from duragent.testing.discord_campaign import DiscordCampaign, DiscordDelivery
from duragent.testing.discord_objects import Person
from duragent.testing.serve_nodes import ServeNodes
from duragent.testing.serve_process import ServeProcess

__all__ = ["FIRST_INDEX", "DiscordSide", "discord_plan", "side_people"]

FIRST_INDEX = 900
GROUP_TOOL_EVERY = 7
FAULT_EVERY = 10
"""Every tenth message the side writes, Discord has a bad moment in that chat: the next post
there meets a 429, a 502 or a lost connection (before or after the post took effect), or
the next edit a 429 or a 502 (``FAULTS``, in turn)."""
FAULTS = ("429", "502", "drop", "drop_after", "edit_429", "edit_502")
RECONNECT_SECONDS = 120.0
"""How long the side waits for the restarted server's Discord gateway before it gives up."""

MEMBER_PEOPLE = [Person(m, f"member{n}") for n, m in enumerate(MEMBERS)]
"""The month's members, on Discord too (the same ids: one allow-list, one block list)."""
HOSTILE_PEOPLE = [Person(h, f"hostile{n}") for n, h in enumerate(HOSTILE)]


def side_people(plan: list[Chat]) -> list[str]:
    """The ids of the Discord DMs' writers (for the DM agent's allow-list)."""
    return [str(_dm_writer(chat).id) for chat in plan if not chat.group]


def _dm_writer(chat: Chat) -> Person:
    return Person(8_000 + chat.index, f"dm{chat.index}")


def discord_plan(chats: int, messages: int, rng: random.Random) -> list[Chat]:
    """``messages`` over ``chats`` Discord chats (the first a guild channel, the rest DMs)."""
    every = plan(chats, messages, rng, group_every=chats)
    for chat in every:
        index = FIRST_INDEX + chat.index
        chat.chat_id = 5_000 + index if chat.group else 1_000 + index
        for m in chat.messages:
            m.chat = index
            m.token = f"#q{index}n{m.ordinal}#"
            m.chatter = [c.replace(f"#k{chat.index}n", f"#k{index}n") for c in m.chatter]
            if chat.group:
                m.tool = m.ordinal % GROUP_TOOL_EVERY == 3
                if m.tool:
                    m.chatter = []
        chat.index = index
    return every


class DiscordSide(DiscordCampaign):
    """The Discord chats of the month (module docstring)."""

    def __init__(
        self,
        dc: FakeDiscord,
        serve: ServeProcess,
        root: Path,
        chats: list[Chat],
        seed: int,
        *,
        view: StoreView | None = None,
    ) -> None:
        super().__init__(dc, serve, root, chats, 0, random.Random(seed), stall_seconds=0.0)
        self.view = view or FileView(root)
        """The serving workspace's store: which Discord messages a process recorded."""
        self.allowance = 0
        """How many of its messages the month lets it have written by now."""
        self.written = 0
        self.hostile_presses: dict[int, str] = {}
        """Interaction id of each hostile press → the token of the prompt it pressed."""
        self.started = time.monotonic()
        self.faults_scripted = 0
        self.media: dict[str, str] = {}
        """Token → the medium it was sent as (``media.media_of``)."""
        self.attaching: dict[str, str] = {}
        self.attachments: dict[str, int] = {}
        """Token → the id of the attachment it carried."""
        self.press_ids: dict[str, str] = {}
        """Token → the interaction id of its author's latest press."""

    # -- pace and people ----------------------------------------------------------------------

    def pace(self, done: float) -> None:
        """The month is ``done`` (0–1) through its own messages: the side may catch up."""
        self.allowance = max(self.allowance, min(self.total, int(self.total * done) + 1))

    def author(self, chat: Chat, m: CampaignMessage) -> Person:
        """Who writes ``m``: the members in turn in the channel, the DM's own person."""
        if chat.group:
            return MEMBER_PEOPLE[m.ordinal % len(MEMBER_PEOPLE)]
        return _dm_writer(chat)

    async def write_more(self) -> None:
        if self.down or self.connected_lifetime() < 0:
            return  # a user waits for the bot to be back
        mention = f"<@{self.dc.bot.id}>"
        for chat in self.plan:
            window = GROUP_WINDOW if chat.group else 1
            while (
                chat.next < len(chat.messages)
                and self.waiting_on(chat) < window
                and self.written < self.allowance
            ):
                m = chat.messages[chat.next]
                for n, line in enumerate(m.chatter):
                    who = MEMBER_PEOPLE[(m.ordinal + 1 + n) % len(MEMBER_PEOPLE)]
                    await self.write(chat.chat_id, line, f"just chatting {line}", who)
                m.pushed_at = time.monotonic()
                chat.next += 1
                self.written += 1
                if self.written % FAULT_EVERY == 0:
                    self.fault(chat.chat_id, FAULTS[self.written // FAULT_EVERY % len(FAULTS)])
                text = m.text(mention)
                if chat.group and m.tool:
                    text = f"{mention} {text}"
                medium = media_of(chat, m)
                if medium is not None:
                    self.media[m.token] = medium
                    self.attaching[m.token] = medium
                    text = f"hello there, this is {m.token}"
                    if medium == "document":
                        text += ": read the file I sent"
                if not await self.write(chat.chat_id, m.token, text, self.author(chat, m)):
                    m.undelivered = OFFLINE
                    self.offline_waiting.add(m.token)

    async def write(self, chat_id: int, token: str, text: str, author: Person) -> bool:
        """Post as ``author``, with the message's medium attached when it has one."""
        medium = self.attaching.pop(token, None)
        if medium is None:
            return await super().write(chat_id, token, text, author)
        lifetime = self.connected_lifetime()
        ordinal = int(token.rsplit("n", 1)[1].rstrip("#"))
        if medium == "photo":
            attachment = self.dc.attachment(png(token), f"photo-{ordinal}.png")
        elif medium == "voice":  # Discord's voice messages have no text
            attachment = self.dc.attachment(
                voice_bytes(text), "voice-message.ogg", voice_seconds=3.0
            )
            text = ""
        else:
            attachment = self.dc.attachment(ledger(token), f"ledger-{ordinal}.txt")
        self.attachments[token] = int(attachment["id"])
        sent = await self.dc.push_message(chat_id, text, author, attachments=[attachment])
        self.deliveries[token] = DiscordDelivery(str(sent["id"]), lifetime)
        return lifetime >= 0

    def fault(self, channel: int, kind: str) -> None:
        """Script one of ``FAULTS`` for the channel's next post (or edit)."""
        posts, edits = f"/channels/{channel}/messages", f"/channels/{channel}/messages/*"
        if kind == "429":
            self.dc.rate_limit("POST", posts, 0.5)
        elif kind == "502":
            self.dc.fail("POST", posts, 502)
        elif kind in ("drop", "drop_after"):
            self.dc.drop("POST", posts, after_applying=kind == "drop_after")
        elif kind == "edit_429":
            self.dc.rate_limit("PATCH", edits, 0.5)
        else:
            self.dc.fail("PATCH", edits, 502)
        self.faults_scripted += 1

    def faults_met(self) -> dict[str, int]:
        """The faults the bot met, by kind, and the posts Discord returned by their nonce."""
        met = {"429": 0, "5xx": 0, "dropped": 0, "by nonce": 0}
        for call in self.dc.calls():
            if call.status == 429:
                met["429"] += 1
            elif call.status >= 500:
                met["5xx"] += 1
            elif call.fault in ("drop", "drop_after"):
                met["dropped"] += 1
            if call.repeated:
                met["by nonce"] += 1
        return met

    async def press(self, m: CampaignMessage) -> None:
        """A hostile member presses a channel prompt first, then its author."""
        assert m.prompt_id is not None
        assert m.prompt_data is not None
        chat = self.plan_of(m)
        if chat.group and m.token not in self.hostile_presses.values():
            hostile = self.rng.choice(HOSTILE_PEOPLE)
            pressed = await self.dc.press(m.prompt_id, m.prompt_data, hostile)
            self.hostile_presses[int(pressed["id"])] = m.token
        m.mark_pressed(time.monotonic())
        self.press_lifetime[m.token] = self.connected_lifetime()
        pressed = await self.dc.press(m.prompt_id, m.prompt_data, self.author(chat, m))
        self.press_ids[m.token] = str(pressed["id"])

    def plan_of(self, m: CampaignMessage) -> Chat:
        return next(c for c in self.plan if c.index == m.chat)

    # -- the month's kills --------------------------------------------------------------------

    def down_now(self) -> int:
        """The month kills the server now: the lifetime that dies."""
        self.down = True
        return len(self.serve.lifetimes) - 1

    async def back(self, killed: int, victim: NodeKill | None = None) -> None:
        """The month's server serves again: once every running node's Discord gateway is
        connected, settle what the killed process (or node ``victim``) took with it and
        press what waited."""
        deadline = time.monotonic() + RECONNECT_SECONDS
        while time.monotonic() < deadline:  # the fake's count: polled, it has no event
            if len(self.dc.connected_nodes()) >= max(1, len(self._running_nodes())):
                break
            await asyncio.sleep(0.05)
        if victim is None:
            self.settle_after(killed)
        else:
            self.settle_node(victim.victim)
        due, self.after_restart = self.after_restart, []
        self.down = False
        for m in due:
            self.press_soon(m)

    def _running_nodes(self) -> list[str]:
        nodes = self.serve.nodes if isinstance(self.serve, ServeNodes) else {"a": self.serve}
        return [name for name, node in nodes.items() if node.pid is not None]

    def settle_node(self, victim: str) -> None:
        """After node ``victim``'s kill (two nodes): what it took with it.

        Every node receives every Discord message; the one that claims it in the inbound
        ledger takes it in. A message is lost with the node only when the node had claimed it
        and not recorded it (the documented window: Discord delivers it once); a press, when
        the node had claimed it and not settled it (the user presses again). Every other
        message is the survivor's to answer.
        """
        self.offline_waiting.clear()
        recorded = self.view.recorded_message_ids()
        claims = self.view.inbound_claims("discord")
        died_with = (victim, False)
        for chat in self.plan:
            for m in chat.messages[: chat.next]:
                if m.answered_at is not None or m.undelivered is not None:
                    continue
                delivery = self.deliveries.get(m.token)
                unrecorded = delivery is not None and delivery.discord_id not in recorded
                if unrecorded and delivery and claims.get(delivery.discord_id) == died_with:
                    m.undelivered = IN_FLIGHT
                    continue
                press = self.press_ids.get(m.token)
                if m.pressed_at is not None and claims.get(f"press:{press}") == died_with:
                    self.presses_repeated += 1
                    self.after_restart.append(m)

    # -- the end ------------------------------------------------------------------------------

    async def finish(self, within: float) -> None:
        """Write what is left and wait (at most ``within`` s) for every answer."""
        self.allowance = self.total
        deadline = time.monotonic() + within
        while not self.done() and time.monotonic() < deadline:
            self.read_sends()
            await self.write_more()
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.5)
        self.read_sends()

    def leaks(self, secrets: dict[str, str]) -> list[str]:
        """A secret in anything the bot sent to Discord (messages, edits, press answers)."""
        found = []
        for call in self.dc.calls():
            body = json.dumps(call.body, ensure_ascii=False)
            found += [
                f"the {name} sent to Discord ({call.path})"
                for name, value in secrets.items()
                if value in body
            ]
        return found

    def judge(self, kill_times: list[float]) -> tuple[CampaignResult, list[str], int]:
        """The Discord restart campaign's verdict, the escalations (a hostile press taken),
        and how many hostile presses were refused."""
        ids = {token: d.discord_id for token, d in self.deliveries.items()}
        mark_chatter(self.plan, ids, self.view.recorded_message_ids())
        wall = time.monotonic() - self.started
        result = verdict(self.plan, self.answers(), self.serve, kill_times, wall, at_most_once=True)
        answers: dict[int, tuple[int, Any]] = {}
        for n, call in enumerate(self.dc.calls("POST")):
            if call.path.startswith("/interactions/") and call.status == 200:
                answers[int(call.path.split("/")[2])] = (n, call.body)
        refused, escalations = 0, []
        for interaction, token in self.hostile_presses.items():
            at, body = answers.get(interaction, (-1, None))
            said = str(((body or {}).get("data") or {}).get("content", ""))
            own_at, own = answers.get(int(self.press_ids.get(token, -1)), (-1, None))
            decided = str(((own or {}).get("data") or {}).get("content", "")).startswith("✓")
            if NOT_REQUESTER in said:
                refused += 1
            elif said == NO_PENDING and decided and own_at < at:
                refused += 1  # read after the author's decision was recorded: nothing waited
            elif body is not None:
                escalations.append(f"discord: a hostile press on {token}'s prompt got {said!r}")
        return result, escalations, refused
