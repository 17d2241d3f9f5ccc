"""The simulated year's driver: the Telegram restart campaign, on a clock that walks a year.

It is ``duragent.testing.telegram_campaign``'s ``TelegramCampaign`` (same plan of tokened
messages, same closed-loop DMs and three-ahead group mentions, same approvals pressed across
kills, same verdict from what the fake Telegram recorded), subclassed, with what a year adds:

- **the clock** (``clock.py``): simulated time gates the chats (a message is written once
  the clock has reached its place in its chat's part of the year, below) and the answers
  gate the clock (it runs at most one round of messages ahead of the answers, at most
  ``step_ms`` per tick, and stands still while ``duragent serve`` restarts), so the
  scheduler sees every due time;
- **the traffic**: DM messages carry prose (some 30 KB pastes), a third of the tool calls are
  ``printf`` (allowed by the policy, no approval), a third 200 KB outputs (read back in part
  through ``tool_output``); some users edit an
  earlier message (an edit is not a turn: nothing may answer it); a quarter of the DM chats
  give a secret in their first message and ask for it in their last (``PROBE``), half of
  those after a ``/reset``; every DM asks ``/status`` (``commands.py``); one DM in six
  remembers a note through the memory tool and recalls it (``MEMORY_CHATS``);
- **the pace**: each chat spreads its messages over the year (its k-th is due (k + phase)/n
  of the way through, the phase drawn per chat so that chats do not all reach their k-th
  message at once), so no chat runs ahead while another starves; one DM in ten
  (``LAPSE_EVERY``) talks only in the first 30 % (``LAPSE_SHARE``) and then falls silent, so
  the TTL sweep, on the simulated calendar, must end those sessions and no other
  (``ttl.py``);
- **the faults**: the fake Telegram answers some sends with 429 + ``retry_after``, 502, or a
  dropped connection, and some polls with 502; the model fails and stalls some requests;
- **approvals**: at most ``hold_quota`` prompts per kill interval wait for the next kill (the
  restart campaign holds every one, which over a year would stall the DMs on the kills), and
  none longer than ``max_hold_ms`` of simulated time (half the TTL: a session waiting longer
  would rightly expire), and none in a chat that lapses (it has half the year to talk);
- **measurements**: ``probe.Probe`` samples the serving process while it is up.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from typing import Any

from bench.year.clock import ClockDriver
from bench.year.cluster_kills import SecondHalf, split_points
from bench.year.commands import ChatCommand, due, plan_commands, reset_probes, take_reply
from bench.year.model import ROWS, secret_of
from bench.year.stall import stall_state
from bench.year.store_view import FileView, StoreView
from bench.year.switch import StoreSwitch
from duragent.testing import FakeTelegram
from duragent.testing.campaign_verdict import INTERRUPTED, CampaignMessage, Chat, answer_tokens
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_campaign import TelegramCampaign, writer_of
from duragent.testing.telegram_faults import FaultRule

__all__ = ["YearCampaign", "note_of", "telegram_faults"]

HUGE_EVERY = 40
TOO_BIG_EVERY = 200
EDIT_SHARE = 0.03
PASTE_CHARS = {False: 20_000, True: 80_000}
"""A paste that fits the window (8K for DMs, 32K for groups) with room for the history."""
TOO_BIG_CHARS = 40_000
"""A DM paste no 8K request can carry: the user must be told so (``REFUSED``)."""
REFUSED = "Sorry, I could not answer"
MEMORY_CHATS = 6
"""One DM chat in six (index ≡ 1) remembers a note at its message ``REMEMBER_AT`` through the
memory tool and recalls it at ``RECALL_AT`` (no tool call between: an approval held over a
kill would put weeks of simulated time between them, past the 30 days ``recall`` reads)."""
REMEMBER_AT, RECALL_AT = 5, 8
LAPSE_EVERY = 10
"""DM chats whose index ≡ 3 (mod ``LAPSE_EVERY``) talk in the first ``LAPSE_SHARE`` only."""
LAPSE_SHARE = 0.3


def lapses(chat: Chat) -> bool:
    """Whether ``chat`` falls silent after the first ``LAPSE_SHARE`` of the run."""
    return not chat.group and chat.index % LAPSE_EVERY == 3


def note_of(chat: int) -> str:
    """What a memory chat asks the agent to remember (no secret: a probe must not find it)."""
    return f"chat {chat} prefers heron-{chat} for its reports"


def telegram_faults() -> list[FaultRule]:
    """What the fake Telegram does on a bad day, spread over the year."""
    return [
        FaultRule.too_many_requests(retry_after=1, every=211),
        FaultRule.server_failure(502, every=173),
        FaultRule.dropped(every=157),
        FaultRule.server_failure(502, method="getUpdates", every=97),
    ]


class YearCampaign(TelegramCampaign):
    """The restart campaign on the year's clock (module docstring)."""

    def __init__(
        self,
        tg: FakeTelegram,
        serve: ServeProcess,
        plan: list[Chat],
        kills: int,
        rng: random.Random,
        *,
        clock: ClockDriver,
        end_ms: int,
        step_ms: int,
        prose: str,
        hold_quota: int = 2,
        max_hold_ms: int | None = None,
        view: StoreView | None = None,
        switch: StoreSwitch | None = None,
    ) -> None:
        super().__init__(tg, serve, plan, kills, rng, stall_seconds=60.0)
        self.second_half = None if switch is None else SecondHalf(switch, rng)
        """Half the run on PostgreSQL with two nodes (``cluster_kills``), or files only."""
        self.switch_index = -1
        """Which of ``kill_points`` is the switch's (-1: none)."""
        if switch is not None:
            self.kill_points, self.switch_index = split_points(
                self.total, kills, switch.plan.share, rng
            )
        self.switch_sim_ms: int | None = None
        self.clock = clock
        self.start_ms = clock.ms
        self.end_ms = end_ms
        self.step_ms = step_ms
        self.prose = prose
        self.hold_quota = hold_quota
        self.max_hold_ms = max_hold_ms
        self.held_since: dict[str, int] = {}
        """Token of a held approval → the simulated time it was first seen held."""
        self.phase = {c.chat_id: random.Random(c.chat_id).random() for c in plan}
        """Chat id → where in its first interval the chat's messages start (module docstring)."""
        self.last_active: dict[int, int] = {}
        """Chat id → the simulated time of its latest message, command, press or reply seen
        (``ttl.py``: a chat's session is idle from its last exchange, which can come days
        of a short run's simulated time after its last message)."""
        self.kill_sim_ms: list[int] = []
        self.pushed_sim: dict[str, int] = {}
        self.user_message_ids: dict[int, list[int]] = {}
        self.edits = 0
        self.pastes = 0
        self.too_big = 0
        self.refused: list[str] = []
        """Tokens of messages answered with ``REFUSED`` (told, not answered)."""
        self.sends_seen = 0
        self.rate_limited_ok: set[int] = set()
        """Chats where someone writes too fast on purpose (a world's flooder): the notice is
        right there (a person's pace is checked in every other chat, ``run._gather``)."""
        self.view: StoreView = view or FileView(clock.path.parent)
        """Where the serving workspace's store is read (``store_view``): the brake's run logs."""
        self.next_due: dict[str, Callable[[int], int]] = {}
        """Schedule → its next due time (ms) after a given one (``_run_in_progress``)."""
        self.probed: dict[str, int] = {}
        """Probe token → the chat index whose secret it asks for."""
        self.secrets_given: set[int] = set()
        dms = [c for c in plan if not c.group]
        for chat in dms:
            plain = [m for m in chat.messages if not m.tool]
            if chat.index % 4 == 0 and len(plain) >= 6:
                self.secrets_given.add(chat.index)
                self.probed[plain[-1].token] = chat.index
        self.commands: dict[int, list[ChatCommand]] = plan_commands(dms, self.probed)
        """DM chat id → its ``/status`` and ``/reset`` (``commands.py``)."""
        self.reset_probes = reset_probes(self.commands, plan)
        """Probes asked right after a ``/reset``: must not be answered from before it."""

    # -- the clock ------------------------------------------------------------------------------

    def _time_of(self, count: int) -> int:
        """Where the ``count``-th message sits in the year."""
        span = self.end_ms - self.start_ms
        return self.start_ms + span * min(count, self.total) // max(1, self.total)

    def _due_in_chat(self, chat: Chat, k: int) -> int:
        """When ``chat``'s ``k``-th message may be written: (k + phase)/n of its part."""
        span = (self.end_ms - self.start_ms) * (LAPSE_SHARE if lapses(chat) else 1.0)
        return self.start_ms + int(span * (k + self.phase[chat.chat_id]) / len(chat.messages))

    def _advance_clock(self) -> None:
        if self.restarting is not None:
            return  # the clock stands still while no process serves
        if self.answered >= self.total:
            target = self.end_ms
        else:
            target = self._time_of(self.answered + len(self.plan))
        target = min(target, self.clock.ms + self.step_ms, self.end_ms, self._run_in_progress())
        self.clock.set_ms(max(self.clock.ms, min(target, self._slowest_chat())))

    def _slowest_chat(self) -> int:
        """How far the clock may go past the chat furthest behind: a quarter of the TTL.

        The clock follows the answers of all chats together; a chat whose reply waited a real
        second (a 429's ``retry_after``) while the others finished was left days behind at
        the end of a short run, so its session expired by the TTL between two of its own
        messages, and its probe found no secret (a flake of the quick week).
        """
        if self.max_hold_ms is None:
            return self.end_ms
        due = [self._due_in_chat(c, c.next) for c in self.plan if c.next < len(c.messages)]
        return min(due, default=self.end_ms) + self.max_hold_ms // 2

    def _run_in_progress(self) -> int:
        """How far the clock may go before the scheduler has started what is due.

        A due time passed while its schedule's previous run is still going, or before the
        scheduler looked, is coalesced with the next one into a ``missed`` line. In real
        time a run takes a fraction of a second and the scheduler looks within one; here a
        fraction of a second is hours, so the clock waits: it may not reach a schedule's
        second due time while the first is not started, nor its next one while a run is in
        progress.
        """
        limit = self.end_ms
        lasts = self.view.last_runs([f"decl_ops_{name}" for name in self.next_due])
        for name, next_due in self.next_due.items():
            last = lasts.get(f"decl_ops_{name}")
            if last is None:
                continue
            if not last:  # read while a line was being written: hold the clock this tick
                return self.clock.ms
            handled = int(last["due"] if "due" in last else last.get("cursor", 0))
            upcoming = next_due(handled)
            if last.get("status") not in ("running", "recorded", "retry"):
                upcoming = next_due(upcoming)
            limit = min(limit, upcoming - 1)
        return limit

    async def overrun(self, hours: int, hold: float) -> None:
        """Move the clock ``hours`` past the year's end, an hour at a time, braked as any tick
        (the scheduler starts each due time first), each hour held ``hold`` real seconds.

        The TTL sweep runs hourly on this clock and at most once per real second
        (``duragent.runtime.expiry``); the clock races through the last days once every
        message is answered, and once it stands at the end a sweep waiting for its next hour
        would never run. Holding each of these hours lets one run after the end, so the
        silences ``ttl.py`` judges are the ones the sweep saw.
        """
        for _ in range(hours):
            self.end_ms += 3_600_000
            started = time.monotonic()
            while time.monotonic() - started < hold:
                self._advance_clock()
                await asyncio.sleep(0.01)

    # -- writing ----------------------------------------------------------------------------

    def _prose(self, rng: random.Random, lo: int, hi: int) -> str:
        size = rng.randint(lo, hi)
        start = rng.randrange(0, max(1, len(self.prose) - size))
        return self.prose[start : start + size].replace("@", " ").replace("#", " ")

    def text_of(self, chat: Chat, m: CampaignMessage) -> str:
        rng = random.Random(m.token)
        if chat.group:
            text = m.text("@" + self.tg.bot_username)
            if m.ordinal % HUGE_EVERY == 11:
                self.pastes += 1
                size = PASTE_CHARS[True]
                return f"{text} the whole log: {self._prose(rng, size, size)}"
            return f"{text} {self._prose(rng, 60, 500)}"
        if m.tool:
            kind = m.ordinal // 5 % 3
            if kind == 1:  # allowed by the policy: runs without asking
                command = f"printf '42-%s\\n' '{m.token}'"
            elif kind == 2:  # 200 KB of output: saved, cut, a range read back (``tool_output``)
                row = f"row %06g {m.token.strip('#')}"  # one token a prompt: one press
                command = f"echo $((6*7))-{m.token}; seq -f '{row}' 1 {ROWS}"
            else:
                command = f"echo $((6*7))-{m.token}"
            return f"!call bash {json.dumps({'command': command})}"
        if m.token in self.probed:
            return f"PROBE {m.token}: what is the vault code of this chat?"
        text = m.text("")
        if chat.index % MEMORY_CHATS == 1 and m.ordinal in (REMEMBER_AT, RECALL_AT):
            verb = "remember" if m.ordinal == REMEMBER_AT else "recall"
            return f"{text} !{verb} {note_of(chat.index)}"
        if m.ordinal == 0 and chat.index in self.secrets_given:
            text += " " + secret_of(chat.index)
        if m.ordinal % TOO_BIG_EVERY == 27:
            self.too_big += 1
            return f"{text} all of it: {self._prose(rng, TOO_BIG_CHARS, TOO_BIG_CHARS)}"
        if m.ordinal % HUGE_EVERY == 7:
            self.pastes += 1
            size = PASTE_CHARS[False]
            return f"{text} here is the whole log: {self._prose(rng, size, size)}"
        return f"{text} {self._prose(rng, 20, 600)}"

    async def write_more(self) -> None:
        self._advance_clock()
        await super().write_more()
        for chat in self.plan:
            if chat.next == len(chat.messages):
                self._command_first(chat)  # a command after the chat's last message

    def may_write(self, chat: Chat) -> bool:
        """The chat's next message is due on the clock, and no command comes first."""
        return self._due_in_chat(chat, chat.next) <= self.clock.ms and not self._command_first(chat)

    def write(self, chat: Chat, m: CampaignMessage) -> dict[str, Any]:
        self.pushed_sim[m.token] = self.clock.ms
        self.last_active[chat.chat_id] = self.clock.ms
        update = super().write(chat, m)
        ids = self.user_message_ids.setdefault(chat.chat_id, [])
        ids.append(int(update["message"]["message_id"]))
        if not chat.group and len(ids) > 1 and self.rng.random() < EDIT_SHARE:
            self.tg.push_edited_message(chat.chat_id, ids[-2], "edited: never mind that")
            self.edits += 1
        return update

    def _command_first(self, chat: Chat) -> bool:
        """Write the DM's command due before its next message once all before it is answered;
        True while one is due (the chat waits for its reply, closed-loop)."""
        command = due(self.commands.get(chat.chat_id, []), chat.next)
        if command is None:
            return False
        if command.pushed_at is None and chat.outstanding() == 0:
            self.tg.push_message(chat.chat_id, command.text, user_id=writer_of(chat))
            command.pushed_at = time.monotonic()
            self.last_active[chat.chat_id] = self.clock.ms
        return True

    # -- approvals, kills -----------------------------------------------------------------------

    def read_sends(self) -> None:
        super().read_sends()
        for sent in self.sent[self.sends_seen :]:
            chat = self.by_id.get(sent.chat_id)
            if chat is not None:  # read a tick after it was sent at most: later, never earlier
                self.last_active[chat.chat_id] = self.clock.ms
            if chat is None or sent.prompt:
                continue
            waiting = [m for m in chat.messages[: chat.next] if m.answered_at is None]
            if INTERRUPTED in sent.text and not answer_tokens(sent.text):
                continue  # a cut call's reply (``mark_answers``, the base's ``read_sends``)
            if not sent.text.startswith(REFUSED):
                if not answer_tokens(sent.text):
                    take_reply(self.commands.get(chat.chat_id, []), sent)
                continue
            if waiting:  # the oldest unanswered message is the one the error is about
                waiting[0].answered_at = sent.at
                self.refused.append(waiting[0].token)
                self.answered += 1
        self.sends_seen = len(self.sent)
        for m in self.held:
            self.held_since.setdefault(m.token, self.clock.ms)
        limit = self.max_hold_ms
        overdue = [
            m
            for i, m in enumerate(self.held)
            if i >= self.hold_quota
            or (limit is not None and self.clock.ms - self.held_since[m.token] > limit)
            or lapses(self.plan_chat(m))  # its quarter of the year is for talking
        ]
        for m in overdue:
            m.held_over_kill = False
            self.press(m)
            self.held.remove(m)

    @property
    def cut_unasked(self) -> list[str]:
        """Tokens of tool messages whose call a kill cut before its approval was asked."""
        return [m.token for chat in self.plan for m in chat.messages if m.cut_unasked]

    def press(self, m: CampaignMessage) -> None:
        super().press(m)
        self.last_active[self.plan_chat(m).chat_id] = self.clock.ms

    async def kill_and_restart(self) -> None:
        half = self.second_half
        if half is not None and self.kills_done - 1 == self.switch_index:
            self.switch_sim_ms = self.clock.ms
            await half.switch_stores()
            self._press_held()  # held over the switch: pressed once the bot is back
            return
        self.kill_sim_ms.append(self.clock.ms)
        if half is None or self.switch_sim_ms is None:
            await super().kill_and_restart()
        else:
            self.kill_times.append(await half.kill_a_node(self._press_held))

    def _press_held(self) -> None:
        held, self.held = self.held, []
        for m in held:
            self.press(m)

    def on_stall(self) -> None:
        """Write ``stall.json`` beside the clock: what each waiting chat waits for."""
        state = stall_state(self)
        (self.clock.path.parent / "stall.json").write_text(json.dumps(state, indent=1))

    def done(self) -> bool:
        self._advance_clock()
        commands = all(c.reply is not None for cs in self.commands.values() for c in cs)
        return super().done() and commands and self.clock.ms >= self.end_ms
