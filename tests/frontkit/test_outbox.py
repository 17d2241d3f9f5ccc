"""``Outbox``: a message the platform refuses for a while waits in its chat's line, then goes out.

Unit tests drive ``Outbox.send`` with attempts that refuse as a platform would
(``PlatformBusyError``); the queue tests run real turns (scripted model, real session store)
through ``SessionQueues`` over a port that refuses replies the way a gateway's port does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from duragent.agents.spec import DebounceSpec, QueueSpec
from duragent.frontkit import ChatRef, ChatTurns, Inbound, MemoryOutbound, SentMessage
from duragent.frontkit.outbox import (
    UNDELIVERED,
    Outbox,
    PlatformBusyError,
    UndeliveredError,
)
from duragent.frontkit.queue import TURN_FAILED, SessionQueues
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.testing import Reply
from duragent.testing.script import RecordedRequest
from tests.polling import eventually
from tests.turns.turn_fixtures import harness

CHAT = ChatRef("telegram", "42")
OTHER = ChatRef("telegram", "43")
BATCH = QueueSpec(debounce=DebounceSpec(enabled=False))


@dataclass
class Notices:
    """What an outbox told chats (its ``notify``)."""

    told: list[tuple[ChatRef, str]] = field(default_factory=list)

    async def __call__(self, chat: ChatRef, text: str) -> None:
        self.told.append((chat, text))


def refusing(times: int, retry_after: float | None, result: str = "sent") -> Any:
    """An attempt refused ``times`` times (as flood control would), then taking the message."""
    calls: list[int] = []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise PlatformBusyError("429: retry later", retry_after)
        return result

    attempt.calls = calls  # type: ignore[attr-defined]
    return attempt


async def test_a_refused_send_is_waited_out_and_goes_out_once() -> None:
    notices = Notices()
    outbox = Outbox("telegram", notices, backoff=(0.01,))
    attempt = refusing(3, retry_after=0.02)
    assert await outbox.send(CHAT, attempt) == "sent"
    assert len(attempt.calls) == 4
    assert notices.told == []
    assert len(outbox) == 0  # the chat's line is forgotten once unused


async def test_a_refusal_without_retry_after_backs_off_and_still_goes_out() -> None:
    outbox = Outbox("discord", Notices(), backoff=(0.01, 0.02))
    attempt = refusing(3, retry_after=None)
    assert await outbox.send(CHAT, attempt) == "sent"
    assert len(attempt.calls) == 4


async def test_a_refusal_waiting_cannot_fix_is_raised_at_once() -> None:
    calls: list[int] = []

    async def forbidden() -> str:
        calls.append(1)
        raise PermissionError("403 Missing Access")

    with pytest.raises(PermissionError):
        await Outbox("discord", Notices()).send(CHAT, forbidden)
    assert calls == [1]


async def test_a_chats_later_message_waits_behind_a_refused_one_and_other_chats_go_on() -> None:
    outbox = Outbox("telegram", Notices())
    open_again = asyncio.Event()
    refused_once = asyncio.Event()
    taken: list[str] = []

    async def first() -> str:
        if not open_again.is_set():
            refused_once.set()
            raise PlatformBusyError("429", 0.01)
        taken.append("first")
        return "first"

    async def named(name: str) -> str:
        taken.append(name)
        return name

    waiting = asyncio.create_task(outbox.send(CHAT, first))
    assert await eventually(refused_once.is_set)
    later = asyncio.create_task(outbox.send(CHAT, lambda: named("later")))
    assert await outbox.send(OTHER, lambda: named("other chat")) == "other chat"
    assert taken == ["other chat"]  # the refused chat's later message did not overtake
    assert not later.done()
    open_again.set()
    assert await waiting == "first"
    assert await later == "later"
    assert taken == ["other chat", "first", "later"]


async def test_a_message_refused_past_the_expiry_is_given_up_and_the_chat_told_once() -> None:
    notices = Notices()
    outbox = Outbox("telegram", notices, retry_for=0.1, setting="gateways.telegram.x")
    for _ in range(2):  # the second message of the same outage: not told again
        with pytest.raises(UndeliveredError) as caught:
            await outbox.send(CHAT, refusing(1000, retry_after=0.03))
        assert caught.value.told
        assert "gateways.telegram.x" in str(caught.value)
    assert notices.told == [(CHAT, UNDELIVERED)]
    assert await outbox.send(CHAT, refusing(0, None)) == "sent"  # the outage is over
    with pytest.raises(UndeliveredError):
        await outbox.send(CHAT, refusing(1000, retry_after=0.03))
    assert notices.told == [(CHAT, UNDELIVERED), (CHAT, UNDELIVERED)]


# --- through the chat queue ------------------------------------------------------------------


class RefusingPort(MemoryOutbound):
    """A port whose sends go through an ``Outbox``; ``refuse`` sends are refused first."""

    def __init__(self, retry_for: float) -> None:
        super().__init__()
        self.refuse = 0
        self.refused = 0
        self.outbox = Outbox("telegram", self._notice, retry_for=retry_for)

    async def _notice(self, chat: ChatRef, text: str) -> None:
        await super().send_text(chat, text)

    async def _once(self, chat: ChatRef, text: str, reply_to: str | None) -> SentMessage:
        if self.refuse:
            self.refuse -= 1
            self.refused += 1
            raise PlatformBusyError("429: Too Many Requests: retry after 0.2", 0.2)
        return await super().send_text(chat, text, reply_to=reply_to)

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        return await self.outbox.send(chat, lambda: self._once(chat, text, reply_to))


def echo(request: RecordedRequest) -> Reply:
    users = [m for m in request.json["messages"] if m["role"] == "user"]
    return Reply(text=f"re: {users[-1]['content']}")


@dataclass
class Kit:
    port: RefusingPort
    queues: SessionQueues
    runner: Any

    async def offer(self, text: str, pid: str) -> str:
        sid = await self.runner.session_for_chat(CHAT.gateway, CHAT.chat_id, "bot")
        await self.queues.offer(sid, Inbound(CHAT, text, agent="bot", message_id=pid), BATCH)
        return sid

    def texts(self) -> list[str]:
        return self.port.texts(CHAT)


@asynccontextmanager
async def refusing_kit(
    tmp_path: Path, *, retry_for: float, turn_timeout: float
) -> AsyncIterator[Kit]:
    port = RefusingPort(retry_for)
    tasks = BackgroundTasks(grace_seconds=2)
    async with harness(tmp_path, responder=echo) as h:
        chat = ChatTurns(h.runner, port, tasks, typing_every=0.05)
        queues = SessionQueues(h.runner, chat, port, tasks, turn_timeout=turn_timeout)
        try:
            yield Kit(port, queues, h.runner)
        finally:
            await tasks.stop()


async def test_a_reply_refused_for_a_while_arrives_once_and_is_never_apologised_for(
    tmp_path: Path,
) -> None:
    """Issue 34: six refusals became "Sorry, I could not answer that" for an existing answer."""
    async with refusing_kit(tmp_path, retry_for=60, turn_timeout=2) as kit:
        kit.port.refuse = 13  # 2.6 s of refusals: longer than a turn may run
        await kit.offer("hello", "p1")
        assert await eventually(lambda: kit.port.refused >= 1)
        await kit.offer("meanwhile", "p2")  # recorded as always; answered after the reply
        assert await eventually(lambda: len(kit.texts()) == 2)
        assert await eventually(lambda: len(kit.queues) == 0)
    assert kit.texts() == ["re: hello", "re: meanwhile"]
    assert kit.port.refused == 13


async def test_a_reply_refused_past_the_expiry_is_told_once_not_apologised_for(
    tmp_path: Path,
) -> None:
    async with refusing_kit(tmp_path, retry_for=0.5, turn_timeout=30) as kit:
        kit.port.refuse = 4  # 0.8 s of refusals: past the expiry, then the notice goes out
        await kit.offer("hello", "p1")
        assert await eventually(lambda: UNDELIVERED in kit.texts())
        await kit.offer("again", "p2")
        assert await eventually(lambda: len(kit.texts()) == 2)
        assert await eventually(lambda: len(kit.queues) == 0)
    assert kit.texts() == [UNDELIVERED, "re: again"]
    assert TURN_FAILED not in kit.texts()
