r"""The Telegram restart campaign: chats keep talking while ``duragent serve`` is SIGKILLed.

Shared by ``tests/gateways/telegram/test_restart_campaign.py`` (short),
``bench/restarts/telegram.py`` (long) and the simulated year (``bench/year/campaign.py``, which
subclasses ``TelegramCampaign``); the plan, the group model and the verdict defined below are
in ``campaign_verdict`` (the Discord and external gateway campaigns use them too), the agents
in ``campaign_workspace``. The fake Telegram and the group agent's model run in this process;
``duragent serve`` runs in a child (``serve_process``) that is killed at random moments and
started again at once, while the chats go on writing (their updates wait at the fake, as they
would at Telegram).

Every message carries a token (``#q<chat>n<k>#``), so a reply names what it answers:

- **DMs** (offline model) are closed-loop: the next message goes once the last was answered.
  DMs use the default ``batch`` queue (a DM's queue is not configurable), where messages that
  arrive while a turn runs share one reply; closed-loop keeps that from happening, so "answered
  exactly once" is exact: one reply quoting each token. Every fifth DM message is a
  ``!call bash`` line: the agent asks first (a prompt with buttons), the campaign presses
  "Allow Once", and the answer is the reply carrying the command's output (``42-<token>``).
  While kills remain, a prompt is pressed only after the next kill, so each press crosses a
  restart: **approvals intact** counts those whose turn still answered. A kill while an
  approved call runs cuts it: it is recorded as interrupted (never run twice), the turn goes
  on after the restart, and its reply, which says so, is that message's answer
  (``tools_interrupted``).
- **Groups** (``sequential`` queue, no debounce: one reply per mention) send up to
  ``GROUP_WINDOW`` mentions ahead, each after a few lines of chatter that do not mention the
  bot. The group model lists the chatter tokens it finds in its request; **buffers intact**
  counts mentions whose reply lists all chatter written just before them.

The verdict reads only what the fake Telegram recorded (what users saw):

- *answered once / missing / duplicated*: replies carrying each message's answer token;
- *order violations*: per chat, a first answer to a message arriving after the first answer to
  a later one;
- *replies sent twice*: a (chat, text) sent more than once. A copy sent by a later process than
  the first, whose process was SIGKILLed, is the kit's documented limit (a crash between
  Telegram accepting a send and the delivery being recorded re-sends that reply once) and is
  counted apart (``resent after a kill``) from any other copy (``real duplicates``).
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from duragent.testing import FakeTelegram, ScriptedLLMServer
from duragent.testing.campaign_loop import CampaignLoop
from duragent.testing.campaign_previews import PREVIEW, PreviewsSeen
from duragent.testing.campaign_verdict import (
    GROUP_WINDOW,
    CampaignMessage,
    CampaignResult,
    Chat,
    SentText,
    answer_tokens,
    group_model,
    mark_answers,
    plan,
    verdict,
)
from duragent.testing.campaign_workspace import write_campaign_agents
from duragent.testing.serve_process import ServeProcess

__all__ = [
    "TOKEN",
    "TelegramCampaign",
    "chatterer_of",
    "dump_calls",
    "run_campaign",
    "write_campaign_workspace",
    "writer_of",
]

TOKEN = "123456:" + "C" * 35
"""A token that looks real (the config checks its shape); the fake accepts only this one."""
DRAIN_SECONDS = 0.3
"""After a kill, before the next start: the fake reads what the killed process had sent."""
GROUP_PEOPLE = 1_000_000
"""Group ``i``'s people are ``GROUP_PEOPLE + 100 * i`` (its writer) and the ids after it
(its chatterers)."""


def writer_of(chat: Chat) -> int:
    """The user who writes ``chat``'s answerable messages (and so may approve its calls).

    A DM's is the chat's own id (on Telegram a private chat's id is its user's); a group's is
    its own person. One person for every chat would be one sender writing to every chat at
    once: over ``messages_per_sender_per_minute`` whenever the campaign writes a burst (the
    simulated year writes many at one simulated minute), and the bot rightly stops reading.
    """
    return GROUP_PEOPLE + 100 * chat.index if chat.group else chat.chat_id


def chatterer_of(chat: Chat, n: int) -> int:
    """The ``n``-th person chatting in group ``chat`` (never its writer)."""
    return writer_of(chat) + 1 + n


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
routes:
  - match: {{chat_type: dm}}
    agent: dm
  - match: {{chat_type: group}}
    agent: group
"""


def write_campaign_workspace(root: Path, *, telegram_url: str, llm_url: str) -> Path:
    """Write the campaign's workspace under ``root``; returns its ``duragent.yaml``."""
    config = root / "duragent.yaml"
    config.write_text(_CONFIG.format(token=TOKEN, base_url=telegram_url))
    write_campaign_agents(root, llm_url)
    return config


class TelegramCampaign(CampaignLoop):
    """The campaign's chats against the fake Telegram (module docstring).

    A campaign with more to it (the simulated year) overrides ``may_write``, ``text_of`` and
    ``write``, and extends ``read_sends``, ``press``, ``kill_and_restart`` and ``done``.
    """

    def __init__(
        self,
        tg: FakeTelegram,
        serve: ServeProcess,
        plan: list[Chat],
        kills: int,
        rng: random.Random,
        stall_seconds: float,
    ) -> None:
        total = sum(len(c.messages) for c in plan)
        # kills land while at least a quarter of the messages are still to come: the chats are
        # held back (``write_more``) so no burst after a restart can finish the campaign first
        points = sorted(rng.sample(range(max(1, total // 20), max(2, total * 3 // 4)), kills))
        super().__init__(points, stall_seconds)
        self.tg = tg
        self.serve = serve
        self.plan = plan
        self.by_id = {c.chat_id: c for c in plan}
        self.rng = rng
        self.total = total
        self.kill_times: list[float] = []
        self.pushed = 0
        self.seen_calls = 0
        self.sent: list[SentText] = []
        self.previews = PreviewsSeen()
        """Replies streamed into the chats (``campaign_previews``)."""

    def pending_by_token(self, chat: Chat) -> dict[str, CampaignMessage]:
        """The chat's messages written and not answered yet, by token."""
        return {m.token: m for m in chat.messages[: chat.next] if m.answered_at is None}

    def read_sends(self) -> None:
        """Take in the ``sendMessage`` calls since the last read: answers and prompts.

        A streamed reply is read when it is final, from the edit that finished its preview
        (``campaign_previews``); its preview's send and plain edits are no answer.
        """
        calls = self.tg.calls(since=self.seen_calls)
        if calls:
            self.seen_calls = calls[-1].index + 1
        for call in calls:
            seen = self.previews.take(call)  # a streamed reply counts once it is final
            if seen == PREVIEW or (seen is None and (call.method != "sendMessage" or not call.ok)):
                continue
            chat_id = int(call.params.get("chat_id", 0))
            text = str(call.params.get("text", ""))
            prompt = "reply_markup" in call.params
            lifetime = self.serve.lifetime_of(call.time, call.node)
            self.sent.append(SentText(chat_id, text, call.time, lifetime, prompt))
            chat = self.by_id.get(chat_id)
            if chat is None:
                continue
            waiting = self.pending_by_token(chat)
            if prompt:
                for token in answer_tokens(text):
                    m = waiting.get(token)
                    if m is None:
                        continue
                    first = m.prompt_id is None
                    m.prompts += 1
                    m.prompt_id = int(call.answer["result"]["message_id"])  # type: ignore[index]
                    markup = call.params["reply_markup"]
                    if isinstance(markup, str):
                        markup = json.loads(markup)
                    m.prompt_data = markup["inline_keyboard"][0][0]["callback_data"]
                    if not first:  # asked again (after a restart): a user presses the new one
                        if m.pressed_at is not None:
                            self.press(m)
                    elif self.kills_done < len(self.kill_points):
                        m.held_over_kill = True
                        self.held.append(m)
                    else:
                        self.press(m)
                continue
            self.answered += len(mark_answers(list(waiting.values()), text, call.time))

    def press(self, m: CampaignMessage) -> None:
        """Press "Allow Once" on ``m``'s approval prompt."""
        chat = self.plan_chat(m)
        assert m.prompt_id is not None
        assert m.prompt_data is not None
        self.tg.push_callback_query(
            chat.chat_id, m.prompt_id, data=m.prompt_data, user_id=self.author_of(chat, m)
        )
        m.mark_pressed(time.monotonic())

    def plan_chat(self, m: CampaignMessage) -> Chat:
        """The chat ``m`` belongs to."""
        return next(c for c in self.plan if c.index == m.chat)

    def author_of(self, chat: Chat, m: CampaignMessage) -> int:
        """Who writes ``m`` (and so may approve its call): ``writer_of`` its chat by default.

        A campaign with many people in a group (``bench/strangers``) names them in turn.
        """
        return writer_of(chat)

    def chatterer(self, chat: Chat, m: CampaignMessage, n: int) -> int:
        """Who writes the ``n``-th line of chatter before ``m`` (``chatterer_of`` by default)."""
        return chatterer_of(chat, n)

    def may_write(self, chat: Chat) -> bool:
        """Whether ``chat`` may write its next message, its window and the kills allowing.

        Default: yes (the simulated year waits for its clock and for the chat's commands).
        """
        return True

    def text_of(self, chat: Chat, m: CampaignMessage) -> str:
        """What the user writes for ``m`` (default: ``CampaignMessage.text``)."""
        return m.text(f"@{self.tg.bot_username}")

    def write(self, chat: Chat, m: CampaignMessage) -> dict[str, Any]:
        """Push ``m``, after its lines of chatter, to the fake; returns its update."""
        for n, line in enumerate(m.chatter):
            self.tg.push_message(
                chat.chat_id, f"just chatting {line}", user_id=self.chatterer(chat, m, n)
            )
        m.pushed_at = time.monotonic()
        return self.push(chat, m)

    def push(self, chat: Chat, m: CampaignMessage) -> dict[str, Any]:
        """Send ``m`` itself (a text by default; a campaign may send a photo or a file)."""
        return self.tg.push_message(
            chat.chat_id, self.text_of(chat, m), user_id=self.author_of(chat, m)
        )

    async def write_more(self) -> None:
        """Each chat writes up to its window (DMs one, groups ``GROUP_WINDOW``)."""
        if self.kills_done < len(self.kill_points):  # not past the next kill's point + a round
            limit = self.kill_points[self.kills_done] + len(self.plan)
        else:
            limit = self.total
        for chat in self.plan:
            window = GROUP_WINDOW if chat.group else 1
            while (
                chat.next < len(chat.messages)
                and chat.outstanding() < window
                and self.pushed < limit
                and self.may_write(chat)
            ):
                self.write(chat, chat.messages[chat.next])
                chat.next += 1
                self.pushed += 1

    async def kill_and_restart(self) -> None:
        """SIGKILL ``duragent serve``; press what was held while it is down; start it again."""
        await asyncio.sleep(self.rng.uniform(0, 0.15))
        self.serve.kill()
        self.kill_times.append(time.monotonic())
        # what the killed process sent is in the fake's sockets: let the fake (this loop) stamp
        # it before the next start, so each call is traced to the process that sent it
        await asyncio.sleep(DRAIN_SECONDS)
        held, self.held = self.held, []
        for m in held:  # pressed while no process runs: the press waits at Telegram
            self.press(m)
        self.serve.start()
        await self.serve.wait_ready()

    def done(self) -> bool:
        """Every message answered."""
        return all(m.answered_at is not None for c in self.plan for m in c.messages)

    async def press_leftovers(self) -> None:
        """Press the prompts still held once the kills ran out."""
        for m in self.held:  # kills ran out before these were pressed
            self.press(m)


def dump_calls(path: Path, tg: FakeTelegram) -> None:
    """Every Bot API call but ``getUpdates``, one JSON object a line (to read a failure)."""
    with path.open("w") as out:
        for call in tg.calls():
            if call.method != "getUpdates":
                out.write(json.dumps(call.to_json()) + "\n")


async def run_campaign(
    *,
    messages: int,
    chats: int,
    kills: int,
    seed: int = 1,
    workdir: Path | None = None,
    stall_seconds: float = 30.0,
) -> CampaignResult:
    """Run one campaign.

    ``workdir`` (default: a temporary directory, removed) holds the workspace, ``calls.jsonl``
    and each serving process's log.
    """
    rng = random.Random(seed)
    root = workdir or Path(tempfile.mkdtemp(prefix="tg-campaign-"))
    try:
        async with (
            FakeTelegram(token=TOKEN) as tg,
            ScriptedLLMServer(responder=group_model) as llm,
        ):
            config = write_campaign_workspace(
                root, telegram_url=tg.url, llm_url=llm.openai_base_url
            )
            serve = ServeProcess(config)
            campaign = TelegramCampaign(
                tg, serve, plan(chats, messages, rng), kills, rng, stall_seconds
            )
            started = time.monotonic()
            serve.start()
            try:
                await serve.wait_ready()
                await campaign.run()
            finally:
                serve.stop()
            dump_calls(root / "calls.jsonl", tg)
            wall = time.monotonic() - started
            return verdict(campaign.plan, campaign.sent, serve, campaign.kill_times, wall)
    finally:
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)
