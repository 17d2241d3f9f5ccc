"""``background_process`` with real child processes: spawn, report, log, write, kill, wait."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from duragent.core.caller import OPERATOR, Caller, ChatRef
from duragent.tools.processes.meta import ProcessMeta, pid_start_time, reach_of
from tests.polling import eventually
from tests.tools.processes.helpers import Rig, rig


async def test_a_finished_job_is_reported_to_its_session_with_status_and_output(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        handle = await r.spawn("echo building; echo failed >&2; exit 3", label="build")
        message = await r.told.wait_ended()
        meta = r.told.ended[0][0]
    assert meta.session_id == "s1"
    assert meta.handle == handle
    assert message.startswith("[Background Process Completed]\n\nHandle: " + handle)
    assert "\nLabel: build\nCommand: echo building; echo failed >&2; exit 3\n" in message
    assert "Status: failed (exit 3)" in message
    assert "Output (last 2000 bytes):\nbuilding\nfailed\n" in message


async def test_spawn_answers_the_reference_json_and_writes_meta_and_log(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        outcome = await r.call(action="spawn", command="sleep 5")
        doc = json.loads(outcome.content)
        assert doc["status"] == "running"
        assert isinstance(doc["pid"], int)
        meta = json.loads((r.directory / f"{doc['handle']}.meta.json").read_text())
        assert meta["status"] == {"state": "running"}
        assert meta["backend"] == "local"
        assert meta["timeout_seconds"] == 1800
        assert meta["log_path"] == str(r.directory.resolve() / f"{doc['handle']}.log")
        assert not [p for p in r.directory.iterdir() if p.name.endswith(".tmp")]
        await r.call(action="kill", handle=doc["handle"])


async def test_log_pages_by_offset_and_limit(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        handle = await r.spawn("seq 1 250")
        await r.told.wait_ended()
        first = await r.call(action="log", handle=handle)
        page = await r.call(action="log", handle=handle, offset=10, limit=3)
        past = await r.call(action="log", handle=handle, offset=400)
    assert first.content.splitlines() == [str(n) for n in range(1, 101)]  # limit 100
    assert page.content == "11\n12\n13"
    assert past.success
    assert past.content == "(no output yet)"


async def test_kill_stops_the_whole_process_group_and_is_reported(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        marker = tmp_path / "child.pid"
        handle = await r.spawn(f"sleep 30 & echo $! > {marker}; wait")
        assert await eventually(lambda: marker.exists() and bool(marker.read_text().strip()))
        child = int(marker.read_text())
        outcome = await r.call(action="kill", handle=handle)
        message = await r.told.wait_ended()
        again = await r.call(action="kill", handle=handle)
    assert outcome.success
    assert outcome.content == f"Killed process {handle}"
    assert "Status: killed" in message
    # the background child died too (SIGKILL is delivered at once; the kernel's tear-down of
    # the process may take a moment on a loaded machine)
    assert await eventually(lambda: pid_start_time(child) is None or _is_zombie(child))
    assert not again.success
    assert again.content == "process is not running"


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True


async def test_a_job_past_its_timeout_gets_sigterm_then_sigkill_and_is_reported_timed_out(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, kill_grace=0.2) as r:
        polite = await r.spawn(
            "trap 'echo terminated; exit 0' TERM; sleep 30 & wait", timeout_seconds=1
        )
        stubborn = await r.spawn("trap '' TERM; sleep 30", timeout_seconds=1)
        await r.told.wait_ended(2, within=120)
    told = {meta.handle: message for meta, message in r.told.ended}
    assert "Status: timed out" in told[polite]
    assert "terminated" in told[polite]
    assert "Status: timed out" in told[stubborn]


async def test_write_reaches_the_jobs_stdin(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        handle = await r.spawn("read line; echo got:$line")
        outcome = await r.call(action="write", handle=handle, input="hello there\\n")
        message = await r.told.wait_ended()
    assert outcome.content == f"Wrote to {handle}"
    assert "got:hello there" in message


async def test_wait_returns_the_outcome_as_the_tool_result_and_reports_nothing(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        outcome = await r.call(action="spawn", command="echo done; exit 2", wait=True)
        await asyncio.sleep(0.2)
        assert r.told.ended == []
    doc = json.loads(outcome.content)
    assert not outcome.success
    assert doc["status"] == "failed"
    assert doc["exit_code"] == 2
    assert doc["output"] == "done\n"


ALICE = Caller(role="member", chat=ChatRef("telegram", "100"), sender_id="100")
BOB = Caller(role="member", chat=ChatRef("telegram", "200"), sender_id="200")
AGENT_WIDE_OWNER = Caller(
    role="owner", chat=ChatRef("telegram", "200"), sender_id="200", agent_wide=True
)
HANDLE_ACTIONS = ("status", "log", "capture", "send_keys", "write", "kill", "watch", "unwatch")


def two_chats(r: Rig) -> None:
    """Alice's DM has two sessions (before and after a /reset); Bob's DM one."""
    r.chats.update({"alice-1": ("telegram", "100"), "alice-2": ("telegram", "100")})
    r.chats["bob"] = ("telegram", "200")


async def test_another_chat_can_neither_see_nor_touch_a_chats_job(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        two_chats(r)
        handle = await r.spawn("sleep 5", "alice-1", ALICE)
        for action in HANDLE_ACTIONS:
            args = {"handle": handle, "input": "x", "keys": "Enter"}
            theirs = await r.call("bob", BOB, action=action, **args)
            missing = await r.call("bob", BOB, action=action, **(args | {"handle": "nope"}))
            assert (theirs.success, theirs.content) == (
                False,
                f"process not found: {handle}",
            ), action
            assert missing.content == "process not found: nope", action
        listing = await r.call("bob", BOB, action="list")
        assert listing.content == "No background processes for this chat."
        later = await r.call("alice-2", ALICE, action="list")  # the same chat, after /reset
        assert later.content == f"- {handle} | sleep 5 | running | -\n"
        assert r.registry.get(handle) is not None
        assert not r.registry.get(handle).status.terminal  # type: ignore[union-attr]
        await r.call("alice-2", ALICE, action="kill", handle=handle)


async def test_a_job_with_no_chat_is_seen_by_no_chat(tmp_path: Path) -> None:
    """An HTTP session's job, or one from a meta file that never recorded a chat."""
    async with rig(tmp_path) as r:
        two_chats(r)
        handle = await r.spawn("sleep 5")  # the operator's session "s1": no chat
        listing = await r.call("alice-1", ALICE, action="list")
        status = await r.call("alice-1", ALICE, action="status", handle=handle)
        assert listing.content == "No background processes for this chat."
        assert status.content == f"process not found: {handle}"
        await r.call(action="kill", handle=handle)


@pytest.mark.parametrize("caller", [OPERATOR, AGENT_WIDE_OWNER], ids=["operator", "owner"])
async def test_the_operator_and_an_agent_wide_owner_reach_every_chats_jobs(
    caller: Caller, tmp_path: Path
) -> None:
    async with rig(tmp_path) as r:
        two_chats(r)
        alices = await r.spawn("sleep 5", "alice-1", ALICE)
        operators = await r.spawn("sleep 5")
        listing = await r.call("bob", caller, action="list")
        status = await r.call("bob", caller, action="status", handle=alices)
        killed = await r.call("bob", caller, action="kill", handle=alices)
        await r.call(action="kill", handle=operators)
    assert {line.split(" | ")[0] for line in listing.content.splitlines()} == {
        f"- {alices}",
        f"- {operators}",
    }
    assert json.loads(status.content)["chat_id"] == "100"
    assert killed.content == f"Killed process {alices}"


async def test_status_and_refusals_show_no_server_path(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        (tmp_path / "work").mkdir()
        handle = await r.spawn("sleep 5", workdir="work")
        status = await r.call(action="status", handle=handle)
        nowhere = await r.call(action="spawn", command="true", workdir="no/such")
        await r.call(action="kill", handle=handle)
    doc = json.loads(status.content)
    assert "log_path" not in doc
    assert doc["workdir"] == "work"
    assert nowhere.content == "Failed to spawn process: no such directory: no/such"
    for outcome in (status, nowhere):
        assert str(tmp_path) not in outcome.content


async def test_mistakes_get_the_reference_texts(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        unknown = await r.call(action="explode")
        no_handle = await r.call(action="status")
        no_command = await r.call(action="spawn")
        missing = await r.call(action="status", handle="nope")
        bad_dir = await r.call(action="spawn", command="true", workdir="no/such/dir")
        plain = await r.spawn("sleep 5")
        capture = await r.call(action="capture", handle=plain)
        await r.call(action="kill", handle=plain)
    assert unknown.content.startswith("Unknown action: 'explode'. Use: spawn, list, status")
    assert no_handle.content == "Invalid arguments: 'handle' is required for this action"
    assert no_command.content == "Invalid arguments: 'command' is required for spawn action"
    assert missing.content == "process not found: nope"
    assert bad_dir.content.startswith("Failed to spawn process: no such directory")
    assert capture.content == "process does not have a tmux session"


async def test_workdir_is_taken_from_the_agent_directory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    async with rig(tmp_path) as r:
        outcome = await r.call(action="spawn", command="pwd", workdir="sub", wait=True)
    assert json.loads(outcome.content)["output"].strip() == str(tmp_path / "sub")


async def test_ended_jobs_are_forgotten_after_the_cleanup_age_once_reported(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, cleanup_after=0.0) as r:
        handle = await r.spawn("true")
        await r.told.wait_ended()
        assert await eventually(lambda: getattr(r.registry.get(handle), "notified", False))
        assert r.registry.cleanup() == [handle]
        assert list(r.directory.iterdir()) == []
        assert (await r.call(action="status", handle=handle)).content == (
            f"process not found: {handle}"
        )


async def test_a_stopping_server_kills_plain_jobs_and_the_next_start_reports_them(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        handle = await r.spawn("sleep 30")
        pid = r.registry.get(handle).pid  # type: ignore[union-attr]
    assert pid is not None
    await asyncio.sleep(0.05)
    assert pid_start_time(pid) is None or _is_zombie(pid)
    async with rig(tmp_path) as again:
        message = await again.told.wait_ended()
    assert f"Handle: {handle}" in message
    assert "Status: lost" in message
    assert "The server stopped while this process ran" in message


async def test_a_leftover_job_a_dead_server_left_running_is_killed_at_start(
    tmp_path: Path,
) -> None:
    """The reaper normally kills it; if it could not, the next start does (never untracked)."""
    proc = await asyncio.create_subprocess_exec("sleep", "30", start_new_session=True)
    directory = tmp_path / ".duragent" / "processes"
    directory.mkdir(parents=True)
    meta = {
        "handle": "01leftover",
        "command": "sleep 30",
        "session_id": "s1",
        "agent": "bot",
        "log_path": str(directory / "01leftover.log"),
        "spawned_at": "2026-11-24T08:00:00Z",
        "timeout_seconds": 1800,
        "pid": proc.pid,
        "pid_start": pid_start_time(proc.pid),
        "status": {"state": "running"},
        "backend": "local",
    }
    (directory / "01leftover.meta.json").write_text(json.dumps(meta))
    try:
        async with rig(tmp_path) as r:
            message = await r.told.wait_ended()
            code = await asyncio.wait_for(proc.wait(), 120)
    finally:
        if proc.returncode is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert "Status: lost" in message


async def test_a_report_that_failed_is_tried_again_until_the_session_is_told(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, cleanup_every=0.05) as r:
        failures = [RuntimeError("storage full")]
        told = r.told.process_ended

        async def flaky(meta: ProcessMeta, message: str) -> None:
            if failures:
                raise failures.pop()
            await told(meta, message)

        r.told.process_ended = flaky  # type: ignore[method-assign]
        handle = await r.spawn("echo once")
        message = await r.told.wait_ended(within=120)
        assert await eventually(lambda: getattr(r.registry.get(handle), "notified", False))
    assert failures == []
    assert f"Handle: {handle}" in message
    assert len(r.told.ended) == 1


async def test_a_wait_cut_short_leaves_the_job_to_be_reported_when_it_ends(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        gate = tmp_path / "go"
        task = asyncio.create_task(
            r.call(action="spawn", command=f"until [ -e {gate} ]; do sleep 0.02; done", wait=True)
        )
        assert await eventually(lambda: bool(r.registry.listing(reach_of("bot", OPERATOR))))
        task.cancel()  # the tool call's own time limit
        with pytest.raises(asyncio.CancelledError):
            await task
        gate.touch()
        message = await r.told.wait_ended()
    assert "Status: completed (exit 0)" in message
