"""A flood through the real Telegram gateway (fake Bot API): the limit is recorded, one notice.

``messages_per_sender_per_minute`` (issue 33) is applied by the kit's pipeline every chat
gateway hands its updates to; here the updates come over the Bot API, through long polling
and the real queues, as a flooding user's would.
"""

from __future__ import annotations

from pathlib import Path

from duragent.core.events import EventType
from duragent.frontkit import ChatRef
from duragent.frontkit.rates import rate_notice
from duragent.testing import Reply
from tests.conftest import Calendar
from tests.frontkit.chat_contract_kit import ANN, BOB, DM, GATEWAY, ChatSetup, said
from tests.gateways.telegram.telegram_chat import telegram_chat

BOB_DM = ChatRef(GATEWAY, BOB.id)


async def test_a_flooding_sender_gets_the_limit_recorded_and_one_notice(
    tmp_path: Path, calendar: Calendar
) -> None:
    setup = ChatSetup(access={"quotas": {"messages_per_sender_per_minute": 5}})
    async with telegram_chat(tmp_path, setup) as chat:
        chat.llm.responder = lambda request: Reply(text="ok")
        for n in range(60):
            await chat.message(said(DM, f"spam {n}", ANN))
            calendar.advance(seconds=10 / 60)
        await chat.settle()
        session_id = await chat.registry.chat_session((GATEWAY, DM.chat_id, "bot"))
        assert session_id is not None
        events = await chat.registry.handle(session_id).events()
        assert sum(1 for e in events if e.type == EventType.USER_MESSAGE) == 5
        notices = [t for t in chat.texts(DM) if t.startswith("You sent")]
        assert notices == [rate_notice(5, 60)]
        await chat.message(said(BOB_DM, "hello", BOB, dm=True))  # another sender: answered
        await chat.settle()
        assert chat.texts(BOB_DM) == ["ok"]
