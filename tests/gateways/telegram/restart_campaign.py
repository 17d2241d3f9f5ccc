r"""The Telegram restart campaign: chats keep talking while ``duragent serve`` is SIGKILLed.

Shared by ``test_restart_campaign.py`` (short) and ``bench/telegram_restarts.py`` (long). The
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
import itertools
import json
import random
import re
import shutil
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from duragent.testing import FakeTelegram, Reply, ScriptedLLMServer
from duragent.testing.script import RecordedRequest
from tests.gateways.telegram.campaign_rig import TOKEN, ServeProcess, write_campaign_workspace

__all__ = ["CampaignResult", "run_campaign"]

GROUP_WINDOW = 3
"""Mentions a group may have waiting for replies at once."""
TOOL_EVERY = 5
"""Every fifth DM message is a tool call that asks for approval."""
DRAIN_SECONDS = 0.3
"""After a kill, before the next start: the fake reads what the killed process had sent."""
CHATTER = 2
"""Lines of chatter before each group mention."""
_WRITER = 700
"""The user who writes every answerable message (and so may approve its tool call)."""
INTERRUPTED = "tool execution interrupted by server restart"
"""What a reply says of an approved call a kill cut (it is never run twice)."""
_ANSWER = re.compile(r"#q\d+n\d+#")
_CHATTER = re.compile(r"#k\d+n\d+#")


@dataclass
class Message:
    """One message a chat will send, and what becomes of it."""

    chat: int
    ordinal: int
    token: str
    tool: bool = False
    chatter: list[str] = field(default_factory=list)
    pushed_at: float | None = None
    answered_at: float | None = None
    prompt_id: int | None = None
    prompt_data: str | None = None
    pressed_at: float | None = None
    held_over_kill: bool = False
    prompts: int = 0
    interrupted: bool = False
    """Its approved call was cut by a kill: the reply says so instead of giving its output."""

    @property
    def answer_mark(self) -> str:
        """What the reply that answers this message contains."""
        return f"42-{self.token}" if self.tool else self.token

    def text(self, bot: str) -> str:
        if self.tool:
            return f'!call bash {{"command": "echo $((6*7))-{self.token}"}}'
        if self.chatter:
            return f"@{bot} what do you make of it? {self.token}"
        return f"hello there, this is {self.token}"


@dataclass
class Chat:
    index: int
    chat_id: int
    group: bool
    messages: list[Message]
    next: int = 0

    def outstanding(self) -> int:
        return sum(1 for m in self.messages[: self.next] if m.answered_at is None)


@dataclass
class Sent:
    chat_id: int
    text: str
    at: float
    lifetime: int
    prompt: bool


@dataclass
class CampaignResult:
    messages: int
    chatter: int
    chats: int
    kills: int
    answered_once: int
    answered_jointly: int
    """Group mentions answered by a reply that also answers other mentions (one turn for
    several: not expected with a ``sequential`` queue, so reported)."""
    missing: int
    duplicated: int
    order_violations: int
    sent_twice_after_kill: int
    sent_twice_real: int
    approvals_held: int
    approvals_intact: int
    """Approvals pressed after a kill whose turn then answered (the call's output, or that a
    later kill cut the call)."""
    approvals_reasked: int
    """Tool calls whose approval prompt was sent again with new buttons (after a restart)."""
    buffer_checks: int
    buffers_intact: int
    buffers_across_kill: int
    wall_seconds: float
    problems: list[str]

    @property
    def ok(self) -> bool:
        return (
            self.missing == 0
            and self.duplicated == self.sent_twice_after_kill_answers
            and self.order_violations == 0
            and self.answered_jointly == 0
            and self.sent_twice_real == 0
            and self.approvals_intact == self.approvals_held
            and self.buffers_intact == self.buffer_checks
        )

    tools_interrupted: int = 0
    """Approved calls a kill cut while they ran: recorded as interrupted, never run twice,
    and the reply says so."""
    sent_twice_after_kill_answers: int = 0
    """Duplicated answers that are all crash re-sends (allowed by the kit's documented limit)."""


def _plan(chats: int, messages: int, rng: random.Random) -> list[Chat]:
    """``messages`` answerable messages over ``chats`` chats, about a third of them groups."""
    plan = []
    for i in range(chats):
        group = i % 3 == 2
        chat_id = -(1000 + i) if group else 1000 + i
        count = messages // chats + (1 if i < messages % chats else 0)
        msgs = []
        for k in range(count):
            token = f"#q{i}n{k}#"
            m = Message(i, k, token)
            if group:
                m.chatter = [f"#k{i}n{k * CHATTER + c}#" for c in range(CHATTER)]
            elif k % TOOL_EVERY == TOOL_EVERY - 1:
                m.tool = True
            msgs.append(m)
        plan.append(Chat(i, chat_id, group, msgs))
    rng.shuffle(plan)
    return plan


def _group_model(request: RecordedRequest) -> Reply:
    """Name the mentions this turn answers and the chatter the system prompt shows.

    "heard" lists the answer tokens of the last user message, which is the text the turn
    answers (the runner shows it last; a turn for several messages joins their texts there);
    "chatter" the chatter tokens of the system messages only (earlier replies in the history
    list chatter too).
    """
    body = request.body if isinstance(request.body, dict) else {}
    heard: list[str] = []
    system = ""
    for m in body.get("messages", []):
        content = m.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        if m.get("role") == "system":
            system += text
        elif m.get("role") == "user":
            heard = _ANSWER.findall(text)
    seen = sorted(set(_CHATTER.findall(system)))
    return Reply(text=f"heard {' '.join(heard)}; chatter: {' '.join(seen) or 'none'}")


class _Campaign:
    def __init__(
        self,
        tg: FakeTelegram,
        serve: ServeProcess,
        plan: list[Chat],
        kills: int,
        rng: random.Random,
        stall_seconds: float,
    ) -> None:
        self.tg = tg
        self.serve = serve
        self.plan = plan
        self.by_id = {c.chat_id: c for c in plan}
        self.rng = rng
        self.stall_seconds = stall_seconds
        total = sum(len(c.messages) for c in plan)
        self.total = total
        # kills land while at least a quarter of the messages are still to come: the chats are
        # held back (``push_more``) so no burst after a restart can finish the campaign first
        points = sorted(rng.sample(range(max(1, total // 20), max(2, total * 3 // 4)), kills))
        self.kill_points = points
        self.kills_done = 0
        self.kill_times: list[float] = []
        self.pushed = 0
        self.answered = 0
        self.seen_calls = 0
        self.sent: list[Sent] = []
        self.held: list[Message] = []
        self.restarting: asyncio.Task[None] | None = None

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
                for token in _ANSWER.findall(text):
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
            for m in waiting.values():
                cut = m.tool and m.pressed_at is not None and INTERRUPTED in text
                if m.answer_mark in text or cut:
                    m.answered_at = call.time
                    m.interrupted = cut and m.answer_mark not in text
                    self.answered += 1

    def press(self, m: Message) -> None:
        chat = self.plan_chat(m)
        assert m.prompt_id is not None
        assert m.prompt_data is not None
        self.tg.push_callback_query(chat.chat_id, m.prompt_id, data=m.prompt_data, user_id=_WRITER)
        m.pressed_at = time.monotonic()

    def plan_chat(self, m: Message) -> Chat:
        return next(c for c in self.plan if c.index == m.chat)

    def push_more(self) -> None:
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
                self.tg.push_message(chat.chat_id, m.text(bot), user_id=_WRITER)
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

    async def run(self) -> None:
        last_progress, last_answered = time.monotonic(), -1
        while not self.done():
            self.read_sends()
            self.push_more()
            if self.restarting is not None and self.restarting.done():
                self.restarting.result()
                self.restarting = None
            if (
                self.restarting is None
                and self.kills_done < len(self.kill_points)
                and self.answered >= self.kill_points[self.kills_done]
            ):
                self.kills_done += 1
                self.restarting = asyncio.create_task(self.kill_and_restart())
            if self.answered != last_answered:
                last_progress, last_answered = time.monotonic(), self.answered
            elif self.restarting is None and self.held and time.monotonic() - last_progress > 1:
                self.kills_done += 1  # only held approvals wait: kill now rather than never
                self.restarting = asyncio.create_task(self.kill_and_restart())
            elif self.restarting is None and time.monotonic() - last_progress > self.stall_seconds:
                break  # the verdict names what never came
            await asyncio.sleep(0.01)
        if self.restarting is not None:
            await self.restarting
        for m in self.held:  # kills ran out before these were pressed
            self.press(m)
        await asyncio.sleep(1.0)  # late copies of replies would show up here
        self.read_sends()


def _verdict(c: _Campaign, wall: float) -> CampaignResult:
    problems: list[str] = []
    once = missing = duplicated = dup_after_kill = joint = 0
    order_violations = 0
    sends_by_chat: dict[int, list[Sent]] = defaultdict(list)
    for s in c.sent:
        sends_by_chat[s.chat_id].append(s)
    buffer_checks = buffers_intact = buffers_across_kill = 0
    for chat in c.plan:
        sends = [s for s in sends_by_chat[chat.chat_id] if not s.prompt]
        firsts: list[int] = []
        for i, m in enumerate(chat.messages):
            copies = [s for s in sends if m.answer_mark in s.text]
            if not copies and m.interrupted:  # the reply that said its call was cut
                after = chat.messages[i + 1].pushed_at if i + 1 < len(chat.messages) else None
                copies = [
                    s
                    for s in sends
                    if INTERRUPTED in s.text
                    and m.pressed_at is not None
                    and s.at >= m.pressed_at
                    and (after is None or s.at < after)
                ]
            if not copies:
                missing += 1
                problems.append(f"chat {chat.chat_id}: no answer to {m.token}")
                continue
            if len(_ANSWER.findall(copies[0].text.partition(";")[0])) > 1:
                joint += 1
            if len(copies) == 1:
                once += 1
            else:
                duplicated += 1
                if _all_resent_after_kill(c.serve, copies):
                    dup_after_kill += 1
                else:
                    problems.append(f"chat {chat.chat_id}: {m.token} answered {len(copies)} times")
            firsts.append(sends.index(copies[0]))
            if m.chatter:
                buffer_checks += 1
                listed = copies[0].text.partition("chatter:")[2]
                if all(k in listed for k in m.chatter):
                    buffers_intact += 1
                    assert m.pushed_at is not None
                    if any(m.pushed_at < k < copies[0].at for k in c.kill_times):
                        buffers_across_kill += 1
                else:
                    problems.append(f"chat {chat.chat_id}: {m.token} missed chatter {m.chatter}")
        for earlier, later in itertools.pairwise(firsts):
            if later < earlier:
                order_violations += 1
                problems.append(f"chat {chat.chat_id}: answers out of order")
    twice_after_kill = twice_real = 0
    for chat_id, sends in sends_by_chat.items():
        by_text: dict[str, list[Sent]] = defaultdict(list)
        for s in sends:
            by_text[s.text].append(s)
        for text, copies in by_text.items():
            if len(copies) < 2:
                continue
            if _all_resent_after_kill(c.serve, copies):
                twice_after_kill += len(copies) - 1
            else:
                twice_real += len(copies) - 1
                problems.append(f"chat {chat_id}: sent {len(copies)} times: {text[:80]!r}")
    held = [m for chat in c.plan for m in chat.messages if m.held_over_kill]
    reasked = sum(1 for chat in c.plan for m in chat.messages if m.prompts > 1)
    intact = [m for m in held if m.answered_at is not None]
    problems.extend(
        f"chat {m.chat}: approval of {m.token} pressed after a kill never ran"
        for m in held
        if m.answered_at is None
    )
    result = CampaignResult(
        messages=c.total,
        chatter=sum(len(m.chatter) for chat in c.plan for m in chat.messages),
        chats=len(c.plan),
        kills=len(c.kill_times),
        answered_once=once,
        answered_jointly=joint,
        missing=missing,
        duplicated=duplicated,
        order_violations=order_violations,
        sent_twice_after_kill=twice_after_kill,
        sent_twice_real=twice_real,
        approvals_held=len(held),
        approvals_intact=len(intact),
        approvals_reasked=reasked,
        buffer_checks=buffer_checks,
        buffers_intact=buffers_intact,
        buffers_across_kill=buffers_across_kill,
        wall_seconds=wall,
        problems=problems,
    )
    result.sent_twice_after_kill_answers = dup_after_kill
    result.tools_interrupted = sum(1 for chat in c.plan for m in chat.messages if m.interrupted)
    return result


def _dump(path: Path, tg: FakeTelegram) -> None:
    """Every Bot API call but ``getUpdates``, one JSON object a line (to read a failure)."""
    with path.open("w") as out:
        for call in tg.calls():
            if call.method != "getUpdates":
                out.write(json.dumps(call.to_json()) + "\n")


def _all_resent_after_kill(serve: ServeProcess, copies: list[Sent]) -> bool:
    """Each copy after the first came from a later process, and the one before it was killed."""
    for before, after in itertools.pairwise(copies):
        if not (after.lifetime > before.lifetime >= 0 and serve.killed[before.lifetime]):
            return False
    return True


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
            ScriptedLLMServer(responder=_group_model) as llm,
        ):
            config = write_campaign_workspace(
                root, telegram_url=tg.url, llm_url=llm.openai_base_url
            )
            serve = ServeProcess(config)
            campaign = _Campaign(tg, serve, _plan(chats, messages, rng), kills, rng, stall_seconds)
            started = time.monotonic()
            serve.start()
            try:
                await serve.wait_ready()
                await campaign.run()
            finally:
                serve.stop()
            _dump(root / "calls.jsonl", tg)
            return _verdict(campaign, time.monotonic() - started)
    finally:
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)


def result_rows(r: CampaignResult) -> list[tuple[str, str]]:
    """The campaign's table rows (label, value)."""
    return [
        ("messages (answerable)", f"{r.messages}"),
        ("  + group chatter (not answered)", f"{r.chatter}"),
        ("chats", f"{r.chats}"),
        ("kills (SIGKILL + restart)", f"{r.kills}"),
        ("answered exactly once", f"{r.answered_once}"),
        ("  of which in a reply to several (group)", f"{r.answered_jointly}"),
        ("missing", f"{r.missing}"),
        ("duplicated answers", f"{r.duplicated}"),
        ("  of which crash re-sends (documented limit)", f"{r.sent_twice_after_kill_answers}"),
        ("order violations", f"{r.order_violations}"),
        ("replies sent twice: resent after a kill", f"{r.sent_twice_after_kill}"),
        ("replies sent twice: real duplicates", f"{r.sent_twice_real}"),
        ("approvals pressed after a kill / answered", f"{r.approvals_held} / {r.approvals_intact}"),
        ("approved calls cut by a kill (the reply says so)", f"{r.tools_interrupted}"),
        ("approvals asked again after a restart", f"{r.approvals_reasked}"),
        ("group buffers checked / intact", f"{r.buffer_checks} / {r.buffers_intact}"),
        ("  intact across a kill", f"{r.buffers_across_kill}"),
        ("wall time", f"{r.wall_seconds:.1f} s"),
    ]
