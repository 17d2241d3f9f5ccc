"""The payload runner in the chat's session: a message is written there once per due time,
whether its run was killed after the write or its delivery failed and it was retried."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from duragent.frontkit import ChatRef, MemoryOutbound, SentMessage
from duragent.scheduler.chat import ChatPayloads
from duragent.scheduler.clock import ManualClock
from duragent.scheduler.model import Destination, Every, MessagePayload, Retry, Schedule
from duragent.scheduler.runs import OUTCOMES
from duragent.scheduler.service import Record, RunReport, Scheduler
from duragent.store.schedule_files import RunLogFiles
from duragent.turns import TurnRunner
from tests.polling import eventually
from tests.scheduler.rig import START
from tests.turns.turn_fixtures import harness

CHAT = ChatRef("memory", "42")
TICK = Schedule(
    id="sched_tick",
    agent="bot",
    timing=Every(60),
    payload=MessagePayload("Stand-up in 5 minutes"),
    created_at=START,
    destination=Destination(CHAT.gateway, CHAT.chat_id),
)
DUE = START + timedelta(seconds=60)


class DeadRunLog(RunLogFiles):
    """The run log of a process that may be SIGKILLed: once ``dead``, nothing reaches it."""

    dead = False

    def append(self, schedule_id: str, run: dict[str, Any]) -> None:
        if not self.dead:
            super().append(schedule_id, run)


class KilledAfterWrite:
    """``ChatPayloads`` in a process SIGKILLed the moment its run wrote into the session,
    before the ``recorded`` line: the run goes no further and its log takes no more lines."""

    def __init__(self, payloads: ChatPayloads, runs: DeadRunLog) -> None:
        self._payloads = payloads
        self._runs = runs

    async def run(
        self, schedule: Schedule, due: datetime, record: Record, attempt: int = 1
    ) -> RunReport:
        async def killed(session_id: str, seq: int) -> None:
            self._runs.dead = True
            await asyncio.Event().wait()  # a dead process does nothing more

        return await self._payloads.run(schedule, due, killed, attempt)


class RefusingOnce(MemoryOutbound):
    """A chat whose platform refuses the first message outright."""

    refused = False

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        if not self.refused:
            self.refused = True
            raise ConnectionError("the platform refused it")
        return await super().send_text(chat, text, reply_to=reply_to)


def chat_payloads(runner: TurnRunner, port: MemoryOutbound) -> ChatPayloads:
    return ChatPayloads(runner, lambda gateway: port if gateway == CHAT.gateway else None)


async def chat_texts(runner: TurnRunner) -> list[str]:
    session = await runner.session_for_chat(CHAT.gateway, CHAT.chat_id, "bot")
    events = await runner.sessions.events(session, include_archive=True)
    return [e.data["content"] for e in events if e.type == "assistant_response"]


async def test_a_message_killed_before_its_run_log_knew_it_was_written_is_in_the_chat_once(
    tmp_path: Path,
) -> None:
    runs, port = DeadRunLog(tmp_path / "runs"), MemoryOutbound()
    clock = ManualClock(DUE + timedelta(seconds=1))
    async with harness(tmp_path) as h:
        killed = KilledAfterWrite(chat_payloads(h.runner, port), runs)
        first = Scheduler(runs, killed, clock)
        first.put(TICK)
        first.tick()
        assert await eventually(lambda: runs.dead, within=120)
        await first.stop()  # the process is gone: its run never ends, its log stays as it was
    async with harness(tmp_path) as h:  # the restart
        again = Scheduler(RunLogFiles(tmp_path / "runs"), chat_payloads(h.runner, port), clock)
        again.put(TICK)
        again.tick()
        await again.drain()
        texts = await chat_texts(h.runner)
    assert texts == ["Stand-up in 5 minutes"]
    assert port.texts() == []  # the chat's recovery delivers it, once
    lines = RunLogFiles(tmp_path / "runs").recent(TICK.id, 100)
    assert [e["status"] for e in lines if e["status"] in OUTCOMES | {"recorded"}] == [
        "recorded",
        "ok",
    ]


async def test_a_message_whose_delivery_failed_is_sent_by_the_retry_and_written_once(
    tmp_path: Path,
) -> None:
    port = RefusingOnce()
    clock = ManualClock(DUE + timedelta(seconds=1))
    async with harness(tmp_path) as h:
        scheduler = Scheduler(RunLogFiles(tmp_path / "runs"), chat_payloads(h.runner, port), clock)
        scheduler.put(replace(TICK, retry=Retry(max_retries=1)))
        scheduler.tick()
        await scheduler.drain()
        texts = await chat_texts(h.runner)
    assert texts == ["Stand-up in 5 minutes"]
    assert port.texts() == ["Stand-up in 5 minutes"]
    assert scheduler.state(TICK.id).last_status == "ok"
