"""Tool processes die with the server that started them: the fallback (reaper and gate).

Where the guardian cannot run (``guardian.containment``), each tool's process group is
watched by the reaper. A real "server" child process runs tools through ``run_process`` and is
killed with SIGKILL; the process table is the ground truth. ``FALLBACK=1`` makes the server
use the fallback where the guardian would run (``test_guardian`` covers the guardian).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duragent.tools import _process
from duragent.tools._process import _GATE, run_process
from duragent.tools._reaper import REAPER_SOURCE
from duragent.tools.guardian import Containment
from tests.session.crash_worker import live_members, wait_until_gone

SERVER = """
import asyncio, os, sys, time
from pathlib import Path
from duragent.tools import _process
from duragent.tools._process import run_process
from duragent.tools.guardian import Containment

if os.environ.get("FALLBACK"):
    _process.containment = lambda: Containment(False, "the fallback, for this test")

async def main(folder):
    tools = []
    for name in sys.argv[2:]:  # one tool at a time, each started once the parent says so
        command = ["bash", "-c", f"echo $$ > {name}; sleep 30"]
        tools.append(asyncio.create_task(run_process(command, cwd=folder, time_limit=60)))
        while not (folder / name).exists() or not (folder / name).read_text().strip():
            await asyncio.sleep(0.01)
        print(name, flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # the parent may kill the reaper here
    await asyncio.gather(*tools)

asyncio.run(main(Path(sys.argv[1])))
"""


SHOW_LEADER = (
    'read -r _ _ _ _ pgid _ < /proc/$$/stat; echo "$$ $pgid $(readlink /proc/$$/fd/0)"; exit 3'
)
"""Prints the shell's pid, its group and its stdin, then exits 3."""


def reapers_of(pid: int) -> list[int]:
    """Reaper processes started by ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == pid and REAPER_SOURCE.encode() in cmdline:
            found.append(int(entry.name))
    return found


def exited(pid: int) -> bool:
    """Whether ``pid`` finished exiting: a zombie waiting for its parent, or gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2 :].split()[0] in ("Z", "X")


def start_server(folder: Path, *names: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "FALLBACK": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", SERVER, str(folder), *names],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def stop(server: subprocess.Popen[str]) -> None:
    """SIGKILL the server and close our ends of its pipes."""
    server.send_signal(signal.SIGKILL)
    server.wait(60)
    for pipe in (server.stdin, server.stdout):
        if pipe is not None:
            pipe.close()


def groups(folder: Path, *names: str) -> list[int]:
    return [int((folder / n).read_text()) for n in names]


def test_a_sigkilled_server_leaves_no_process_of_its_tools(tmp_path: Path) -> None:
    server = start_server(tmp_path, "a")
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "a"
        (pgid,) = groups(tmp_path, "a")
        assert live_members(pgid)  # bash and its sleep run
    finally:
        stop(server)
    assert wait_until_gone(pgid) == []


def test_a_killed_reaper_is_replaced_and_the_new_one_watches_the_running_tools(
    tmp_path: Path,
) -> None:
    server = start_server(tmp_path, "a", "b")
    try:
        assert server.stdout is not None
        assert server.stdin is not None
        assert server.stdout.readline().strip() == "a"
        (first,) = reapers_of(server.pid)
        os.kill(first, signal.SIGKILL)  # e.g. killed by hand; the tool "a" still runs
        # Until it is a zombie: its command line empties while it still exits (its pipe still
        # open), and a spawn in that moment would find it alive (a loaded machine widens it).
        deadline = time.monotonic() + 60
        while not exited(first) and time.monotonic() < deadline:
            time.sleep(0.02)  # gone once the server's next spawn has reaped it
        assert exited(first)
        server.stdin.write("go on\n")
        server.stdin.flush()
        assert server.stdout.readline().strip() == "b"  # its spawn started a new reaper
        assert len(reapers_of(server.pid)) == 1
        assert reapers_of(server.pid) != [first]
    finally:
        stop(server)
    for pgid in groups(tmp_path, "a", "b"):
        assert wait_until_gone(pgid) == [], f"group {pgid} outlived the server"


def test_a_program_whose_gate_never_opens_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    gate = subprocess.Popen([*_GATE, "/usr/bin/env", "touch", str(marker)], stdin=subprocess.PIPE)
    assert gate.stdin is not None
    gate.stdin.close()  # the server died before writing its line
    assert gate.wait(60) == 125
    assert not marker.exists()


async def test_a_program_that_cannot_start_raises_as_a_direct_start_would(tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\necho hi\n")
    with pytest.raises(FileNotFoundError):
        await run_process(["no-such-program-duragent"], cwd=tmp_path, time_limit=5)
    with pytest.raises(PermissionError):
        await run_process([str(script)], cwd=tmp_path, time_limit=5)
    with pytest.raises(FileNotFoundError):
        await run_process(["./missing"], cwd=tmp_path, time_limit=5)


@pytest.mark.parametrize("guardian", [True, False], ids=["guardian", "fallback"])
async def test_the_program_leads_its_group_with_stdin_from_dev_null(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guardian: bool
) -> None:
    if not guardian:
        monkeypatch.setattr(_process, "containment", lambda: Containment(False, "fallback"))
    result = await run_process(
        ["bash", "-c", SHOW_LEADER],
        cwd=tmp_path,
        time_limit=10,
    )
    pid, pgid, stdin = result.stdout.split()
    assert pid == pgid
    assert stdin == "/dev/null"
    assert result.exit_code == 3
