"""``messages_per_sender_per_minute`` (issue 33): a flood from one sender is not recorded.

One sender's messages past the limit are dropped before anything is recorded or run, and
the sender is told once per window (not once per message) which limit applied and when they
can write again. Owners are not limited; other senders are not affected; the window's memory
forgets idle senders.
"""

from __future__ import annotations

from pathlib import Path

from duragent.agents.access_spec import AccessSpec, QuotaSpec
from duragent.core.events import EventType
from duragent.frontkit import ChatRef, Sender
from duragent.frontkit.rates import RATE_FIELD, SenderRates, rate_notice
from duragent.testing import Reply
from tests.conftest import Calendar
from tests.frontkit.chat_contract_kit import ANN, BOB, DM, GATEWAY, ChatSetup, said
from tests.frontkit.memory_chat import MemoryChat, memory_chat

OWNER = Sender("4242", "olga", "Olga")
OWNER_DM = ChatRef(GATEWAY, OWNER.id)
BOB_DM = ChatRef(GATEWAY, BOB.id)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def access(**quotas: int) -> AccessSpec:
    return AccessSpec(owners={"telegram": ["1"]}, quotas=QuotaSpec(**quotas))


def test_a_backlog_written_at_a_persons_pace_is_let_in_though_it_arrives_at_once() -> None:
    clock = Clock()
    rates = SenderRates(clock=clock)
    rules = access(messages_per_sender_per_minute=3)
    clock.now = 5_000.0  # the bot was down: twelve messages, one every 20 s, arrive together
    sent = [1_000.0 + 20 * n for n in range(12)]
    verdicts = [
        rates.admit(rules, agent="bot", gateway="telegram", sender_id="7", sent_at=at)
        for at in sent
    ]
    assert all(v.admitted for v in verdicts)


def test_a_flood_sent_at_once_is_refused_however_slowly_it_is_read() -> None:
    clock = Clock()
    rates = SenderRates(clock=clock)
    rules = access(messages_per_sender_per_minute=3)
    verdicts = []
    for _ in range(10):  # all sent at 1,000 s; read 15 s apart (a slow or busy bot)
        verdicts.append(
            rates.admit(rules, agent="bot", gateway="telegram", sender_id="7", sent_at=1_000.0)
        )
        clock.now += 15
    assert [v.admitted for v in verdicts] == [True] * 3 + [False] * 7


def test_a_flood_read_slowly_among_others_is_told_once_and_never_let_past_the_limit() -> None:
    clock = Clock()
    rates = SenderRates(clock=clock)
    rules = access(messages_per_sender_per_minute=3)
    flood = []
    for n in range(10):  # sent together at 1,000 s, read over minutes while others write
        flood.append(
            rates.admit(rules, agent="bot", gateway="telegram", sender_id="7", sent_at=1_000.0)
        )
        clock.now += 45
        other = str(100 + n)
        rates.admit(rules, agent="bot", gateway="telegram", sender_id=other, sent_at=clock.now)
    assert [v.admitted for v in flood] == [True] * 3 + [False] * 7
    assert sum(1 for v in flood if v.notice is not None) == 1


def test_a_sending_time_after_the_arrival_counts_as_the_arrival() -> None:
    clock = Clock()
    rates = SenderRates(clock=clock)
    rules = access(messages_per_sender_per_minute=2)
    late = [
        rates.admit(rules, agent="bot", gateway="telegram", sender_id="7", sent_at=9e9)
        for _ in range(3)
    ]  # a platform clock ahead of ours cannot open a window in the future
    assert [v.admitted for v in late] == [True, True, False]


def test_past_the_limit_a_sender_is_refused_and_told_once_per_window() -> None:
    clock = Clock()
    rates = SenderRates(clock=clock)
    rules = access(messages_per_sender_per_minute=3)
    verdicts = []
    for _ in range(10):
        verdicts.append(rates.admit(rules, agent="bot", gateway="telegram", sender_id="7"))
        clock.now += 1
    assert [v.admitted for v in verdicts] == [True] * 3 + [False] * 7
    notices = [v.notice for v in verdicts if v.notice is not None]
    assert notices == [rate_notice(3, 57)]
    assert notices[0] == (
        f"You sent 3 messages within a minute, the most this bot takes from one person "
        f"({RATE_FIELD}; the bot's owner can raise it). Messages sent until then are not "
        "read: you can write again in 57 s."
    )
    clock.now = 1_060.0  # the first message is a minute old: room for one
    assert rates.admit(rules, agent="bot", gateway="telegram", sender_id="7").admitted
    again = rates.admit(rules, agent="bot", gateway="telegram", sender_id="7")
    assert not again.admitted
    assert again.notice == rate_notice(3, 1)  # a new window: told again, once


def test_owners_other_senders_other_agents_and_a_zero_limit_are_not_held_back() -> None:
    clock = Clock()
    rates = SenderRates(clock=clock)
    rules = access(messages_per_sender_per_minute=1)
    assert rates.admit(rules, agent="bot", gateway="telegram", sender_id="7").admitted
    assert not rates.admit(rules, agent="bot", gateway="telegram", sender_id="7").admitted
    assert rates.admit(rules, agent="bot", gateway="telegram", sender_id="8").admitted
    assert rates.admit(rules, agent="other", gateway="telegram", sender_id="7").admitted
    assert rates.admit(rules, agent="bot", gateway="discord", sender_id="7").admitted
    for _ in range(100):
        assert rates.admit(rules, agent="bot", gateway="telegram", sender_id="1").admitted
    off = access(messages_per_sender_per_minute=0)
    for _ in range(100):
        assert rates.admit(off, agent="bot", gateway="telegram", sender_id="7").admitted


def test_unaddressed_chatter_past_the_limit_is_dropped_without_a_notice() -> None:
    clock = Clock()
    rates = SenderRates(clock=clock)
    rules = access(messages_per_sender_per_minute=1)
    assert rates.admit(rules, agent="bot", gateway="telegram", sender_id="7", addressed=False)
    quiet = rates.admit(rules, agent="bot", gateway="telegram", sender_id="7", addressed=False)
    assert (quiet.admitted, quiet.notice) == (False, None)
    told = rates.admit(rules, agent="bot", gateway="telegram", sender_id="7")
    assert told.notice is not None  # the first addressed one is told


def test_idle_senders_are_forgotten_and_memory_has_a_bound() -> None:
    clock = Clock()
    rates = SenderRates(clock=clock, max_senders=500)
    rules = access()
    for n in range(400):
        rates.admit(rules, agent="bot", gateway="telegram", sender_id=f"s{n}")
    assert len(rates) == 400
    clock.now += 61
    rates.admit(rules, agent="bot", gateway="telegram", sender_id="new")
    assert len(rates) == 1
    for n in range(2_000):
        rates.admit(rules, agent="bot", gateway="telegram", sender_id=f"t{n}")
    assert len(rates) == 500


async def user_messages(chat: MemoryChat, where: ChatRef) -> int:
    session_id = await chat.registry.chat_session((where.gateway, where.chat_id, "bot"))
    assert session_id is not None
    events = await chat.registry.handle(session_id).events()
    return sum(1 for e in events if e.type == EventType.USER_MESSAGE)


async def test_a_flood_of_240_messages_in_ten_seconds_records_the_limit_and_one_notice(
    tmp_path: Path, calendar: Calendar
) -> None:
    setup = ChatSetup(
        access={"owners": {GATEWAY: [OWNER.id]}, "quotas": {"messages_per_sender_per_minute": 20}}
    )
    async with memory_chat(tmp_path, setup) as chat:
        chat.llm.responder = lambda request: Reply(text="ok")
        for n in range(240):
            await chat.message(said(DM, f"spam {n}", ANN))
            calendar.advance(seconds=10 / 240)
        for n in range(40):  # the owner floods too: never limited
            await chat.message(said(OWNER_DM, f"note {n}", OWNER, dm=True))
        await chat.message(said(BOB_DM, "hello", BOB, dm=True))  # another sender
        await chat.settle()
        assert await user_messages(chat, DM) == 20
        notices = [t for t in chat.texts(DM) if t.startswith("You sent 20 messages")]
        assert notices == [rate_notice(20, 60)]  # the 21st came 0.8 s after the 1st
        assert await user_messages(chat, OWNER_DM) == 40
        assert await user_messages(chat, BOB_DM) == 1
        assert not any(t.startswith("You sent") for t in chat.texts(OWNER_DM) + chat.texts(BOB_DM))
        calendar.advance(seconds=60)  # a minute later Ann is read again
        await chat.message(said(DM, "sorry", ANN))
        await chat.settle()
        assert await user_messages(chat, DM) == 21


def test_by_default_a_sender_may_write_once_a_second_for_a_minute() -> None:
    """Faster than a person types: the default stops scripts, never a person."""
    assert QuotaSpec().messages_per_sender_per_minute == 60
