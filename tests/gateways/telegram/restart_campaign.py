r"""The Telegram restart campaign: chats keep talking while ``duragent serve`` is SIGKILLed.

Shared by ``test_restart_campaign.py`` (short) and ``bench/telegram_restarts.py`` (long); the
plan, the group model and the verdict defined below are in ``tests/gateways/campaign_verdict.py``
(the Discord campaign uses them too). The
fake Telegram and the group agent's model run in this process; ``duragent serve`` runs in a
child (``campaign_rig``) that is killed at random moments and started again at once, while the
chats go on writing (their updates wait at the fake, as they would at Telegram).

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

from duragent.testing import FakeTelegram, ScriptedLLMServer
from tests.gateways.campaign_loop import CampaignLoop
from tests.gateways.campaign_verdict import (
    GROUP_WINDOW,
    CampaignResult,
    Chat,
    Message,
    Sent,
    answer_tokens,
    group_model,
    mark_answers,
    plan,
    result_rows,
    verdict,
)
from tests.gateways.telegram.campaign_rig import TOKEN, ServeProcess, write_campaign_workspace

__all__ = ["CampaignResult", "result_rows", "run_campaign"]

DRAIN_SECONDS = 0.3
"""After a kill, before the next start: the fake reads what the killed process had sent."""
_WRITER = 700
"""The user who writes every answerable message (and so may approve its tool call)."""


class _Campaign(CampaignLoop):
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
        self.sent: list[Sent] = []

    def pending_by_token(self, chat: Chat) -> dict[str, Message]:
        return {m.token: m for m in chat.messages[: chat.next] if m.answered_at is None}

    def read_sends(self) -> None:
        calls = self.tg.calls(since=self.seen_calls)
        if calls:
            self.seen_calls = calls[-1].index + 1
        for call in calls:
            if call.method != "sendMessage" or not call.ok:
                continue
            chat_id = int(call.params.get("chat_id", 0))
            text = str(call.params.get("text", ""))
            prompt = "reply_markup" in call.params
            lifetime = self.serve.lifetime_of(call.time)
            self.sent.append(Sent(chat_id, text, call.time, lifetime, prompt))
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

    def press(self, m: Message) -> None:
        chat = self.plan_chat(m)
        assert m.prompt_id is not None
        assert m.prompt_data is not None
        self.tg.push_callback_query(chat.chat_id, m.prompt_id, data=m.prompt_data, user_id=_WRITER)
        m.pressed_at = time.monotonic()

    def plan_chat(self, m: Message) -> Chat:
        return next(c for c in self.plan if c.index == m.chat)

    async def write_more(self) -> None:
        bot = self.tg.bot_username
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
            ):
                m = chat.messages[chat.next]
                for n, line in enumerate(m.chatter):
                    self.tg.push_message(chat.chat_id, f"just chatting {line}", user_id=500 + n)
                m.pushed_at = time.monotonic()
                self.tg.push_message(chat.chat_id, m.text(f"@{bot}"), user_id=_WRITER)
                chat.next += 1
                self.pushed += 1

    async def kill_and_restart(self) -> None:
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
        return all(m.answered_at is not None for c in self.plan for m in c.messages)

    async def press_leftovers(self) -> None:
        for m in self.held:  # kills ran out before these were pressed
            self.press(m)


def _dump(path: Path, tg: FakeTelegram) -> None:
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
    """Run one campaign; ``workdir`` (default: a temporary directory, removed) holds the
    workspace and each serving process's log."""
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
            campaign = _Campaign(tg, serve, plan(chats, messages, rng), kills, rng, stall_seconds)
            started = time.monotonic()
            serve.start()
            try:
                await serve.wait_ready()
                await campaign.run()
            finally:
                serve.stop()
            _dump(root / "calls.jsonl", tg)
            wall = time.monotonic() - started
            return verdict(campaign.plan, campaign.sent, serve, campaign.kill_times, wall)
    finally:
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)
