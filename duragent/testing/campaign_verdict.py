"""What a restart campaign checks, whatever the chat platform: the plan, the chats, the verdict.

The Telegram campaign (``duragent.testing.telegram_campaign``, whose docstring defines every
check), the Discord one (``duragent.testing.discord_campaign``) and the external gateway's
(``duragent.testing.external_campaign``) drive their fakes differently but plan the same
messages and judge what users saw the same way, here:

- ``plan``: answerable messages over DMs and groups, each carrying a token (``#q<chat>n<k>#``)
  its reply quotes; every fifth DM message a ``!call bash`` that asks for approval; each group
  mention after ``CHATTER`` lines of chatter;
- ``group_model``: the group agent's scripted model (names the mentions it answers and the
  chatter its system prompt shows);
- ``verdict``: answered once / missing / duplicated, order, replies sent twice (crash re-sends
  apart from real duplicates, traced to processes by ``ServeProcess.lifetime_of``), approvals
  pressed after a kill, group buffers.

A platform that does not redeliver what the bot missed (Discord) marks such messages
``undelivered`` with the reason; the verdict counts them apart and never as missing (a
message with an answer counts as answered whatever its mark).
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field

from duragent.context.quoting import QUOTED_HEADER, quote
from duragent.frontkit.group_context import GROUP_CONTEXT_HEADER
from duragent.testing import Reply
from duragent.testing.script import RecordedRequest
from duragent.testing.serve_process import ServeProcess

__all__ = [
    "CHATTER",
    "GROUP_WINDOW",
    "TOOL_EVERY",
    "CampaignMessage",
    "CampaignResult",
    "Chat",
    "SentText",
    "answer_tokens",
    "group_model",
    "mark_answers",
    "mark_chatter",
    "plan",
    "print_report",
    "result_rows",
    "table",
    "verdict",
]

OFFLINE = "offline"
"""``CampaignMessage.undelivered``: written while no serving process was connected."""
IN_FLIGHT = "in flight"
"""``CampaignMessage.undelivered``: reached a process killed before it recorded the message."""

GROUP_WINDOW = 3
"""Mentions a group may have waiting for replies at once."""
TOOL_EVERY = 5
"""Every fifth DM message is a tool call that asks for approval."""
CHATTER = 2
"""Lines of chatter before each group mention."""

INTERRUPTED = "tool execution interrupted by server restart"
"""What a reply says of an approved call a kill cut (it is never run twice)."""
GROUP_CHATTER = quote(GROUP_CONTEXT_HEADER.strip())
"""How the group's chatter block starts, quoted (``frontkit.group_context``)."""
ANSWER = re.compile(r"#q\d+n\d+#")
CHATTER_TOKEN = re.compile(r"#k\d+n\d+#")


@dataclass
class CampaignMessage:
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
    """When its prompt was first pressed (``mark_pressed``): a reply saying a kill cut its
    call comes after that press, whichever press the killed process took."""
    held_over_kill: bool = False
    prompts: int = 0
    interrupted: bool = False
    """Its call was cut by a kill: the reply says so instead of giving its output."""
    cut_unasked: bool = False
    """Its call was cut before its approval was asked (recorded, then the kill; the restart
    closes it): the reply says so, and the chat was never prompted."""
    undelivered: str | None = None
    """Why the bot never got it (``OFFLINE``, ``IN_FLIGHT``), on a platform that does not
    redeliver; None when delivered (or on a platform that redelivers until confirmed)."""
    chatter_missed: bool = False
    """Some of its chatter never reached the bot (so its buffer cannot be checked)."""

    def mark_pressed(self, at: float) -> None:
        """Note a press of its prompt at ``at``; a press again (after a kill) keeps the first.

        A press the killed process took but never confirmed is pressed again after the
        restart, sometimes after the recovered turn already said the call was cut: the
        verdict looks for that reply from the first press on.
        """
        if self.pressed_at is None:
            self.pressed_at = at

    @property
    def answer_mark(self) -> str:
        """What the reply that answers this message contains."""
        return f"42-{self.token}" if self.tool else self.token

    def text(self, mention: str) -> str:
        """What the user writes; ``mention`` addresses the bot in a group (``@name``)."""
        if self.tool:
            return f'!call bash {{"command": "echo $((6*7))-{self.token}"}}'
        if self.chatter:
            return f"{mention} what do you make of it? {self.token}"
        return f"hello there, this is {self.token}"


@dataclass
class Chat:
    """One chat of the plan (a DM or a group) and its messages, in the order it writes them."""

    index: int
    chat_id: int
    group: bool
    messages: list[CampaignMessage]
    next: int = 0
    settled: int = 0
    """Every message before this index is answered or known lost (``outstanding``'s cursor)."""

    def outstanding(self) -> int:
        """Messages sent, not answered, and not known lost by the platform.

        Counted from the first one not settled: ``answered_at`` and ``undelivered`` are set,
        never cleared, so what is settled stays settled. A campaign asks this of every chat
        every tick; walking all of a chat's messages each time made the year's benchmark
        cost grow with the square of its length.
        """
        messages, end, first = self.messages, self.next, self.settled
        while first < end and (
            messages[first].answered_at is not None or messages[first].undelivered is not None
        ):
            first += 1
        self.settled = first
        return sum(
            1 for m in messages[first:end] if m.answered_at is None and m.undelivered is None
        )


@dataclass
class SentText:
    """A message the bot sent (an answer or an approval prompt), traced to its process."""

    chat_id: int
    text: str
    at: float
    lifetime: int
    prompt: bool


@dataclass
class CampaignResult:
    """What users saw over the campaign, counted (``verdict``); ``result_rows`` prints it."""

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
    approvals_reasked: int
    """Tool calls whose approval prompt was sent again with new buttons (after a restart)."""
    buffer_checks: int
    buffers_intact: int
    buffers_across_kill: int
    wall_seconds: float
    problems: list[str]

    @property
    def ok(self) -> bool:
        """Nothing lost, duplicated (but crash re-sends), out of order or broken."""
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
    at_most_once: bool = False
    """The platform does not redeliver what the bot missed (Discord): the rows below show."""
    not_delivered_offline: int = 0
    """Messages written while no serving process was connected (never dispatched)."""
    lost_in_flight: int = 0
    """Messages dispatched to a process killed before it recorded them."""
    buffers_unchecked: int = 0
    """Group mentions whose chatter did not all reach the bot (no buffer to check)."""


def plan(chats: int, messages: int, rng: random.Random, *, group_every: int = 3) -> list[Chat]:
    """``messages`` answerable messages over ``chats`` chats, one in ``group_every`` a group."""
    plan = []
    for i in range(chats):
        group = i % group_every == group_every - 1
        chat_id = -(1000 + i) if group else 1000 + i
        count = messages // chats + (1 if i < messages % chats else 0)
        msgs = []
        for k in range(count):
            token = f"#q{i}n{k}#"
            m = CampaignMessage(i, k, token)
            if group:
                m.chatter = [f"#k{i}n{k * CHATTER + c}#" for c in range(CHATTER)]
            elif k % TOOL_EVERY == TOOL_EVERY - 1:
                m.tool = True
            msgs.append(m)
        plan.append(Chat(i, chat_id, group, msgs))
    rng.shuffle(plan)
    return plan


def group_model(request: RecordedRequest) -> Reply:
    """Name the mentions this turn answers and the chatter its quoted context shows.

    "heard" lists the answer tokens of the last user message, which is the text the turn
    answers (the runner shows it last; a turn for several messages joins their texts there);
    "chatter" the chatter tokens of the group's quoted context block only (a user message
    the runtime quotes right before it, issue 33; earlier replies in the history list
    chatter too).
    """
    body = request.body if isinstance(request.body, dict) else {}
    heard: list[str] = []
    chatter = ""
    for m in body.get("messages", []):
        content = m.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        if m.get("role") != "user":
            continue
        if text.startswith(QUOTED_HEADER):
            if GROUP_CHATTER in text:
                chatter += text
        else:
            heard = ANSWER.findall(text)
    seen = sorted(set(CHATTER_TOKEN.findall(chatter)))
    return Reply(text=f"heard {' '.join(heard)}; chatter: {' '.join(seen) or 'none'}")


def answer_tokens(text: str) -> list[str]:
    """The answer tokens a reply (or an approval prompt) quotes."""
    return ANSWER.findall(text)


def mark_answers(waiting: list[CampaignMessage], text: str, at: float) -> list[CampaignMessage]:
    """Mark the waiting messages (oldest first) that the reply ``text`` answers; return them.

    A reply answers the messages whose mark it carries. A reply saying a kill cut a call
    and carrying no mark (the call's output never came) answers every waiting tool message
    that was pressed, or, when none was, the oldest waiting tool message never prompted for:
    its call the kill cut between recording it and asking for its approval (with two workers
    loading the machine, a few milliseconds' window a kill does hit). A message whose prompt
    was shown and is held is never taken for it: its approval is asked again after the
    restart.
    """
    answered = [m for m in waiting if m.answer_mark in text]
    if INTERRUPTED in text and not answered:
        tools = [m for m in waiting if m.tool]
        pressed = [m for m in tools if m.pressed_at is not None]
        cut = pressed or [m for m in tools if m.prompts == 0][:1]
        for m in cut:
            m.interrupted = True
            m.cut_unasked = m.pressed_at is None
        answered += cut
    for m in answered:
        m.answered_at = at
    return answered


def verdict(
    chats: list[Chat],
    sent: list[SentText],
    serve: ServeProcess,
    kill_times: list[float],
    wall: float,
    *,
    at_most_once: bool = False,
) -> CampaignResult:
    """Judge what users saw (``sent``: every message the bot sent, in order)."""
    problems: list[str] = []
    offline = in_flight = unchecked = 0
    once = missing = duplicated = dup_after_kill = joint = 0
    order_violations = 0
    sends_by_chat: dict[int, list[SentText]] = defaultdict(list)
    for s in sent:
        sends_by_chat[s.chat_id].append(s)
    buffer_checks = buffers_intact = buffers_across_kill = 0
    for chat in chats:
        sends = [s for s in sends_by_chat[chat.chat_id] if not s.prompt]
        firsts: list[int] = []
        for i, m in enumerate(chat.messages):
            copies = [s for s in sends if m.answer_mark in s.text]
            if not copies and m.interrupted:  # the reply that said its call was cut
                after = chat.messages[i + 1].pushed_at if i + 1 < len(chat.messages) else None
                since = m.pushed_at if m.cut_unasked else m.pressed_at
                copies = [
                    s
                    for s in sends
                    if INTERRUPTED in s.text
                    and since is not None
                    and s.at >= since
                    and (after is None or s.at < after)
                ]
                if not copies:  # a group writes ahead: the next mention may come before it
                    copies = [s for s in sends if INTERRUPTED in s.text and s.at == m.answered_at]
            if not copies and m.undelivered == OFFLINE:
                offline += 1
                continue
            if not copies and m.undelivered == IN_FLIGHT:
                in_flight += 1
                continue
            if not copies:
                missing += 1
                problems.append(f"chat {chat.chat_id}: no answer to {m.token}")
                continue
            if len(ANSWER.findall(copies[0].text.partition(";")[0])) > 1:
                joint += 1
            if len(copies) == 1:
                once += 1
            else:
                duplicated += 1
                if all_resent_after_kill(serve, copies):
                    dup_after_kill += 1
                else:
                    problems.append(f"chat {chat.chat_id}: {m.token} answered {len(copies)} times")
            firsts.append(sends.index(copies[0]))
            if m.chatter and m.chatter_missed:
                unchecked += 1
            elif m.chatter:
                buffer_checks += 1
                listed = copies[0].text.partition("chatter:")[2]
                if all(k in listed for k in m.chatter):
                    buffers_intact += 1
                    assert m.pushed_at is not None
                    if any(m.pushed_at < k < copies[0].at for k in kill_times):
                        buffers_across_kill += 1
                else:
                    problems.append(f"chat {chat.chat_id}: {m.token} missed chatter {m.chatter}")
        for earlier, later in itertools.pairwise(firsts):
            if later < earlier:
                order_violations += 1
                problems.append(f"chat {chat.chat_id}: answers out of order")
    twice_after_kill = twice_real = 0
    for chat_id, sends in sends_by_chat.items():
        by_text: dict[str, list[SentText]] = defaultdict(list)
        for s in sends:
            by_text[s.text].append(s)
        for text, copies in by_text.items():
            if len(copies) < 2 or INTERRUPTED in text:
                # the same words answer each call a kill cut (the model says what it got):
                # each is matched to the message it answers (``mark_answers``), not by text
                continue
            if all_resent_after_kill(serve, copies):
                twice_after_kill += len(copies) - 1
            else:
                twice_real += len(copies) - 1
                problems.append(f"chat {chat_id}: sent {len(copies)} times: {text[:80]!r}")
    held = [m for chat in chats for m in chat.messages if m.held_over_kill]
    reasked = sum(1 for chat in chats for m in chat.messages if m.prompts > 1)
    intact = [m for m in held if m.answered_at is not None]
    problems.extend(
        f"chat {m.chat}: approval of {m.token} pressed after a kill never ran"
        for m in held
        if m.answered_at is None
    )
    result = CampaignResult(
        messages=sum(len(chat.messages) for chat in chats),
        chatter=sum(len(m.chatter) for chat in chats for m in chat.messages),
        chats=len(chats),
        kills=len(kill_times),
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
    result.tools_interrupted = sum(1 for chat in chats for m in chat.messages if m.interrupted)
    result.at_most_once = at_most_once
    result.not_delivered_offline = offline
    result.lost_in_flight = in_flight
    result.buffers_unchecked = unchecked
    return result


def all_resent_after_kill(serve: ServeProcess, copies: list[SentText]) -> bool:
    """Whether each copy after the first is a resend (``ServeProcess.resent_after_kill``)."""
    return all(
        serve.resent_after_kill(before.lifetime, after.lifetime, after.at)
        for before, after in itertools.pairwise(copies)
    )


def result_rows(r: CampaignResult) -> list[tuple[str, str]]:
    """The campaign's table rows (label, value)."""
    rows = [
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
    if r.at_most_once:
        rows[1:1] = [
            ("  not delivered: written while no bot connected", f"{r.not_delivered_offline}"),
            ("  not delivered: in flight to a killed process", f"{r.lost_in_flight}"),
        ]
        rows.insert(-1, ("  not checked (chatter not delivered)", f"{r.buffers_unchecked}"))
    return rows


def table(rows: list[tuple[str, str]]) -> str:
    """``rows`` as a plain-text table (the campaign benchmarks print it)."""
    width = max(len(k) for k, _ in rows)
    value_width = max(len(v) for _, v in rows)
    rule = f"+-{'-' * width}-+-{'-' * value_width}-+"
    return "\n".join([rule, *(f"| {k:<{width}} | {v:>{value_width}} |" for k, v in rows), rule])


def print_report(rows: list[tuple[str, str]], problems: list[str], ok: bool) -> bool:
    """Print the table, the first 50 problems and PASS or FAIL; returns ``ok``."""
    print(table(rows))
    for problem in problems[:50]:
        print(f"  - {problem}")
    if len(problems) > 50:
        print(f"  ... and {len(problems) - 50} more")
    print("PASS" if ok else "FAIL")
    return ok


def mark_chatter(chats: list[Chat], platform_ids: dict[str, str], recorded: set[str]) -> None:
    """Mark mentions some of whose chatter never reached a process that recorded it.

    ``platform_ids``: each chatter token's platform message id (absent: never written);
    ``recorded``: the platform ids the store holds. On a platform that delivers each message
    once, such a mention's buffer cannot be checked (``buffers_unchecked``).
    """
    for chat in chats:
        for m in chat.messages:
            ids = [platform_ids[k] for k in m.chatter if k in platform_ids]
            m.chatter_missed = len(ids) < len(m.chatter) or any(i not in recorded for i in ids)
