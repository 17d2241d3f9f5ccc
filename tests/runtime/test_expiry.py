"""The TTL sweep runs on the runtime's clock: hourly there, whatever real time does."""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import UTC, datetime
from pathlib import Path

from duragent.core.clock import use_time_source
from duragent.runtime.expiry import sweep_forever
from duragent.scheduler import ManualClock
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from tests.polling import eventually


async def test_a_week_of_the_runtime_clock_expires_an_idle_session_without_a_week_of_real_time(
    tmp_path: Path,
) -> None:
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    use_time_source(lambda: clock.now().timestamp())
    tidied: list[datetime] = []
    reg = SessionRegistry(SessionStore(tmp_path), RegistrySettings())
    await reg.open()
    sweeping: asyncio.Task[None] | None = None
    try:
        idle = await reg.create(NewSession(agent="a"))
        sweeping = asyncio.create_task(
            sweep_forever(
                reg, lambda _agent: 168, clock, lambda: tidied.append(clock.now()), floor_seconds=0
            )
        )
        await asyncio.sleep(0.05)
        assert tidied == []  # nothing before the first hour
        clock.advance(167 * 3600)
        assert await eventually(lambda: len(tidied) == 1)
        assert (await reg.list_sessions())[0]["status"] == "active"
        await asyncio.sleep(0.2)  # the sweep is waiting for its next hour
        clock.advance(3600)
        assert await eventually(lambda: len(tidied) == 2)
        [entry] = await reg.list_sessions()
        assert (entry["session_id"], entry["status"]) == (idle, "completed")
    finally:
        if sweeping is not None:
            sweeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeping
        await reg.aclose()
        use_time_source(time.time)
