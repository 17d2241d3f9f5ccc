"""``duragent schedule list|show|cancel|run`` against a running server (``--server``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from typer.testing import CliRunner

from duragent.cli.main import app
from duragent.testing import Reply
from tests.gateways.http.api_fixtures import served
from tests.polling import eventually

DAILY = {
    "agent": "bot",
    "schedule": {"cron": {"expr": "0 9 * * MON-FRI", "tz": "Europe/Berlin"}},
    "payload": {"task": {"task": "Summarise yesterday"}},
}


async def cli(*args: str) -> str:
    result = await asyncio.to_thread(CliRunner().invoke, app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


async def test_schedules_are_listed_shown_run_and_cancelled_from_the_command_line(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        url = str(s.client.base_url)
        s.server.enqueue(Reply(text="3 tickets closed."))
        sched_id = (await s.client.post("/api/v1/schedules", json=DAILY)).json()["id"]
        listed = await cli("schedule", "list", "--server", url)
        assert sched_id in listed
        assert "cron 0 9 * * MON-FRI Europe/Berlin" in listed
        assert "started a run" in await cli("schedule", "run", sched_id, "--server", url)

        async def ran() -> bool:
            return (
                "Last run:" in (shown := await cli("schedule", "show", sched_id, "--server", url))
                and " ok" in shown
            )

        assert await eventually(ran)
        assert "cancelled" in await cli("schedule", "cancel", sched_id, "--server", url)
        shown = await cli("schedule", "show", sched_id, "--server", url)
        assert "Status: cancelled" in shown
        assert "Payload: task: Summarise yesterday" in shown


async def test_an_unknown_schedule_is_an_error_line(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        result = await asyncio.to_thread(
            CliRunner().invoke,
            app,
            ["schedule", "show", "sched_nope", "--server", str(s.client.base_url)],
        )
    assert result.exit_code == 1
    assert "not found" in result.output
