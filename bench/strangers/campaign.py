"""The month's driver: the year's campaign with a crowd in its groups and media in its DMs.

``StrangersCampaign`` is ``bench.year.campaign.YearCampaign`` (the clock, the kills, the
approvals held across them, the verdict's bookkeeping) with:

- **members**: a group's mentions are written by its 50 members in turn (``cast.author_of``),
  one in ``GROUP_TOOL_EVERY`` a ``!call bash`` that asks for approval in the group;
- **presses by others**: before a member presses their own prompt, a hostile member presses
  Allow Once and Allow Always on it and a blocked member presses Allow Once; the member
  presses once the bot has answered those presses (``toasts``: what each was told), so a
  press the bot wrongly took would have decided first;
- **media in DMs**: some messages are a photo (a PNG, the words in its caption), a voice note
  (its bytes carry the words: the scripted transcriber hears them) or a text document the
  agent reads back with ``bash cat`` (``media.MEDIA``);
- **the crowd** (``attacks.Crowd``): its attempts, made as the clock reaches them;
- **Discord beside Telegram** (``discord_side.DiscordSide``): paced by this campaign's
  answers, told of its kills;
- **intent probes in the groups** (``group_probes``): a pinned fact and a fact said at the
  start, asked for at the end.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

from bench.strangers.attacks import PAIR_MS, Crowd
from bench.strangers.cast import BLOCKED, HOSTILE, MEMBERS, OWNERS, author_of
from bench.strangers.discord_side import DiscordSide
from bench.strangers.group_probes import GroupProbes, pin_text
from bench.strangers.media import ledger, media_of, png, voice_bytes
from bench.year.campaign import YearCampaign
from duragent.testing import FakeTelegram
from duragent.testing.campaign_verdict import CampaignMessage, Chat, answer_tokens
from duragent.testing.serve_process import ServeProcess

__all__ = [
    "GROUP_TOOL_EVERY",
    "StrangersCampaign",
    "send_medium",
]

GROUP_TOOL_EVERY = 7
DEFER_SECONDS = 10.0
"""A member presses anyway after this long (a kill may have eaten the others' presses)."""


def send_medium(
    tg: FakeTelegram, chat_id: int, token: str, medium: str, ordinal: int
) -> tuple[dict[str, Any], int]:
    """Send the message ``token`` as ``medium`` (``media.MEDIA``): its update and the bytes sent.

    A photo is a new PNG, the words in its caption; a voice note carries its words in its
    bytes; a document is a ledger naming the token, which the caption asks the agent to read.
    """
    words = f"hello there, this is {token}"
    if medium == "photo":
        photo = png(token)
        return tg.push_photo(chat_id, photo, caption=words), len(photo)
    if medium == "voice":
        voice = voice_bytes(words)
        return tg.push_voice(chat_id, voice, duration=3), len(voice)
    document = ledger(token)
    update = tg.push_document(
        chat_id,
        document,
        file_name=f"ledger-{ordinal}.txt",
        caption=f"{words}: read the file I sent",
    )
    return update, len(document)


class StrangersCampaign(YearCampaign):
    """The year's campaign with the crowd (module docstring)."""

    def __init__(
        self,
        tg: FakeTelegram,
        serve: ServeProcess,
        plan: list[Chat],
        kills: int,
        rng: random.Random,
        *,
        crowd: Crowd,
        **options: Any,
    ) -> None:
        for chat in plan:
            if chat.group:
                for m in chat.messages:
                    m.tool = m.ordinal % GROUP_TOOL_EVERY == 3
                    if m.tool:  # its reply gives the command's output, not the chatter
                        m.chatter = []
        self.probes = GroupProbes.plan(plan)
        """The groups' intent probes (``group_probes``)."""
        super().__init__(tg, serve, plan, kills, rng, **options)
        self.crowd = crowd
        self.deferred: dict[str, tuple[CampaignMessage, list[str], float]] = {}
        """Token → (its message, the others' press ids not answered yet, when deferred)."""
        self.toasts: dict[str, str] = {}
        """Callback query id → what the bot answered it (``answerCallbackQuery`` text)."""
        self.others: dict[str, list[tuple[int, str, str]]] = {}
        """Prompt's token → (user, button, callback id) of each press by someone else."""
        self.media: dict[str, str] = {}
        """Token → the medium its message was sent as."""
        self.media_bytes = 0
        """Bytes of the photos, voice notes and documents sent."""
        self.toast_cursor = 0
        self.rate_limited_ok = set(crowd.groups)
        self.side: DiscordSide | None = None
        """The Discord chats on the same server (``discord_side``), paced by this campaign."""

    def author_of(self, chat: Chat, m: CampaignMessage) -> int:
        return author_of(chat, m)

    def chatterer(self, chat: Chat, m: CampaignMessage, n: int) -> int:
        """The members chat in turn too (two people writing all of a busy group's chatter
        would write faster than the group's per-sender rate)."""
        return MEMBERS[(MEMBERS.index(author_of(chat, m)) + 1 + n) % len(MEMBERS)]

    def text_of(self, chat: Chat, m: CampaignMessage) -> str:
        if chat.group and m.tool:
            command = json.dumps({"command": f"echo $((6*7))-{m.token}"})
            return f"@{self.tg.bot_username} !call bash {command}"
        written = super().text_of(chat, m)
        return self.probes.text(m, f"@{self.tg.bot_username}", written) if chat.group else written

    def write(self, chat: Chat, m: CampaignMessage) -> dict[str, Any]:
        if m.token in self.probes.tells:  # an owner pins the group's meeting code first
            self.tg.push_message(chat.chat_id, pin_text(chat.index), user_id=OWNERS[0])
        update = super().write(chat, m)
        if m.token in self.media:  # a caption, not a text: the year's edits pick texts only
            self.user_message_ids[chat.chat_id].pop()
        return update

    def push(self, chat: Chat, m: CampaignMessage) -> dict[str, Any]:
        medium = media_of(chat, m)
        if medium is None or m.token in self.probed:
            return super().push(chat, m)
        self.media[m.token] = medium
        update, size = send_medium(self.tg, chat.chat_id, m.token, medium, m.ordinal)
        self.media_bytes += size
        return update

    def _advance_clock(self) -> None:
        if self.crowd.settled():  # held while a flood is read, a pairing made (``Crowd``)
            super()._advance_clock()

    async def write_more(self) -> None:
        if self.side is not None:
            self.side.pace(self.answered / max(1, self.total))
            self.side.read_sends()
            await self.side.write_more()
        self.crowd.tick(self.clock.ms, f"@{self.tg.bot_username}")
        if self.crowd.approving:  # an owner reads a stranger's code and types /pair
            ahead = min(self.clock.ms + PAIR_MS, self.end_ms, self._run_in_progress())
            self.clock.set_ms(max(self.clock.ms, ahead))
            self.crowd.approve_now()
        self._read_toasts()
        now = time.monotonic()
        for token, (m, waiting, since) in list(self.deferred.items()):
            if not [w for w in waiting if w not in self.toasts] or now - since > DEFER_SECONDS:
                del self.deferred[token]
                YearCampaign.press(self, m)
        await super().write_more()

    async def kill_and_restart(self) -> None:
        """The year's kill; the Discord side stops writing first and settles after."""
        killed = self.side.down_now() if self.side is not None else -1
        half = self.second_half
        node_kills = len(half.kills) if half is not None else 0
        await super().kill_and_restart()
        if self.side is not None:
            victim = half.kills[-1] if half is not None and len(half.kills) > node_kills else None
            await self.side.back(killed, victim)

    def press(self, m: CampaignMessage) -> None:
        chat = self.plan_chat(m)
        if not chat.group or m.token in self.others or m.prompt_id is None:
            super().press(m)
            return
        hostile = self.rng.choice(HOSTILE)
        presses = [(hostile, "Allow Always"), (hostile, "Allow Once")]
        presses.append((self.rng.choice(BLOCKED), "Allow Once"))
        done = []
        for user, button in presses:
            update = self.tg.push_callback_query(
                chat.chat_id, m.prompt_id, button=button, user_id=user
            )
            done.append((user, button, str(update["callback_query"]["id"])))
        self.others[m.token] = done
        self.deferred[m.token] = (m, [cq for _u, _b, cq in done], time.monotonic())

    def _press_group_prompts(self) -> None:
        """A member presses their prompt now, never after the next kill: a group does not
        wait for them long (``approval_wait_seconds``); DM prompts are held as the year's."""
        for m in [m for m in self.held if self.plan_chat(m).group]:
            self.held.remove(m)
            m.held_over_kill = False
            self.press(m)

    def _read_toasts(self) -> None:
        calls = self.tg.calls("answerCallbackQuery", since=self.toast_cursor)
        if calls:
            self.toast_cursor = calls[-1].index + 1
        for call in calls:
            self.toasts[str(call.params.get("callback_query_id"))] = str(
                call.params.get("text", "")
            )

    def read_sends(self) -> None:
        """The year's reading, less what the bot said to the crowd in the groups.

        The crowd's answers, refusals and notices carry no plan token (``#q…#``); judged
        apart (``judge.py``), they would read as duplicates here (the same refusal twice is
        right). Group prompts are pressed at once (``_press_group_prompts``).
        """
        before = len(self.sent)
        super().read_sends()
        self._press_group_prompts()
        groups = set(self.crowd.groups)
        self.sent[before:] = [
            s for s in self.sent[before:] if s.chat_id not in groups or answer_tokens(s.text)
        ]
        self.sends_seen = len(self.sent)

    def done(self) -> bool:
        return not self.deferred and self.crowd.done() and super().done()
