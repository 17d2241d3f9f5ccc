"""Interactive jobs in a real (private) tmux server: screen, keys, watch, and a restart."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from duragent.core.caller import OPERATOR
from duragent.tools.processes.meta import reach_of
from tests.polling import eventually
from tests.tools.processes.helpers import Rig, needs_tmux, rig, tmux_server

pytestmark = needs_tmux


async def _screen_shows(r: Rig, handle: str, text: str, within: float = 60.0) -> str:
    async with asyncio.timeout(within):
        while True:
            screen = (await r.call(action="capture", handle=handle)).content
            if text in screen:
                return str(screen)
            await asyncio.sleep(0.05)


async def test_an_interactive_job_shows_its_screen_and_takes_keys_and_text(
    tmp_path: Path,
) -> None:
    with tmux_server() as tmux:
        async with rig(tmp_path, tmux) as r:
            outcome = await r.call(
                action="spawn",
                command="echo ready; read a; echo first:$a; read b; echo second:$b",
                interactive=True,
            )
            doc = json.loads(outcome.content)
            handle = doc["handle"]
            assert doc["tmux_session"] == f"duragent-{handle}"
            assert "pid" not in doc
            await _screen_shows(r, handle, "ready")
            keys = await r.call(action="send_keys", handle=handle, keys="h i")
            assert keys.content == f"Sent keys to {handle}"
            await _screen_shows(r, handle, "first:hi")
            await r.call(action="write", handle=handle, text="two words\n")  # the book's names
            message = await r.told.wait_ended()
            listing = await r.call(action="list")
    assert "Status: completed (exit 0)" in message
    assert "ready\n" in message
    assert "second:two words" in message
    assert f"[interactive: duragent-{handle}]" in listing.content


async def test_an_interactive_jobs_exit_status_is_read_from_its_log(tmp_path: Path) -> None:
    with tmux_server() as tmux:
        async with rig(tmp_path, tmux) as r:
            await r.spawn("echo bye; exit 7", interactive=True)
            message = await r.told.wait_ended()
    assert "Status: failed (exit 7)" in message


async def test_watch_reports_once_when_the_output_falls_silent(tmp_path: Path) -> None:
    with tmux_server() as tmux:
        async with rig(tmp_path, tmux) as r:
            handle = await r.spawn("echo working; sleep 30", interactive=True)
            outcome = await r.call(action="watch", handle=handle, interval_seconds=1)
            assert outcome.content == f"Screen watcher started for {handle} (silence timeout: 1s)"
            # The same watcher, quicker, replacing it:
            r.registry.watch(handle, reach_of("bot", OPERATOR), 0.3)
            assert await eventually(lambda: bool(r.told.halted))
            await asyncio.sleep(0.8)  # still silent: no second report until output resumes
            stopped = await r.call(action="unwatch", handle=handle)
            await r.call(action="kill", handle=handle)
    assert len(r.told.halted) == 1
    assert r.told.halted[0][1].startswith(f"[Process {handle} screen halted]")
    assert stopped.content == f"Screen watcher stopped for {handle}"


async def test_watch_needs_an_interactive_job(tmp_path: Path) -> None:
    with tmux_server() as tmux:
        async with rig(tmp_path, tmux) as r:
            handle = await r.spawn("sleep 5")
            outcome = await r.call(action="watch", handle=handle)
            await r.call(action="kill", handle=handle)
    assert outcome.content == "process does not have a tmux session"


async def test_a_restart_reattaches_a_running_interactive_job_and_reads_one_that_ended(
    tmp_path: Path,
) -> None:
    with tmux_server() as tmux:
        async with rig(tmp_path, tmux) as first:
            running = await first.spawn("read x; echo got:$x", interactive=True)
            ended = await first.spawn("sleep 0.3; exit 4", interactive=True)
            meta = json.loads((first.directory / f"{ended}.meta.json").read_text())
            first.registry.events = None  # the "server" dies before it hears of anything
        await asyncio.sleep(0.6)  # ``ended`` finishes while no registry watches
        assert meta["status"] == {"state": "running"}
        async with rig(tmp_path, tmux) as second:
            message = await second.told.wait_ended()
            assert f"Handle: {ended}" in message
            assert "Status: failed (exit 4)" in message
            await second.call(action="write", handle=running, input="back\\n")
            message = await second.told.wait_ended(2)
    assert f"Handle: {running}" in message
    assert "got:back" in message
