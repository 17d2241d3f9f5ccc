"""No tool process outlives its call or the server, however it detaches: the guardian.

The process table is the ground truth. Each detached process is a ``sleep`` whose argument
carries a random marker (``3000.<token><n>``), so a survivor is found by its command line and
named by the way it detached. A real ``duragent serve`` is SIGKILLed mid-turn while its tools'
processes run; the calls of ``run_process`` in this process show the same for a call that ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from duragent.testing import Reply, ScriptedLLMServer, ToolCallReply
from duragent.testing.serve_process import ServeProcess
from duragent.tools._process import run_process
from duragent.tools.guardian import containment
from tests.polling import eventually
from tests.tools.processes.test_serve_restart import ready
from tests.tools.sandbox_support import bwrap
from tests.turns.turn_fixtures import agent_yaml

__all__ = ["bwrap"]

TOOLS = (
    "  tools:\n    - {type: builtin, name: bash}\n    - {type: builtin, name: background_process}\n"
)

DETACHED = {
    "setsid -f": "setsid -f sleep {m}",
    "set -m; & disown": "set -m; sleep {m} & disown; set +m",
    "nohup &": "nohup sleep {m} >/dev/null 2>&1 &",
    "double fork": "( ( sleep {m} & ) & )",
    "python daemon": (
        f"{sys.executable} -c 'import os; os.fork() and os._exit(0); os.setsid(); "
        'os.fork() and os._exit(0); os.execvp("sleep", ["sleep", "{m}"])\''
    ),
}
"""Every way of detaching tried, by name: the command that starts ``sleep {m}`` detached."""


class Markers:
    """``sleep`` arguments unique to one test, one per way of detaching."""

    def __init__(self) -> None:
        self.token = f"3000.{random.randrange(10**6):06d}"

    def mark(self, n: int) -> str:
        return f"{self.token}{n}"

    def running(self) -> dict[str, int]:
        """Marker → pid of every live (not zombie) process whose command line has one."""
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if stat[stat.rindex(")") + 2] == "Z" or args[:1] != [b"sleep"]:
                continue
            for arg in args:
                if arg.decode(errors="replace").startswith(self.token):
                    found[arg.decode()] = int(entry.name)
        return found

    def kill_all(self) -> None:
        for pid in self.running().values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def markers() -> Iterator[Markers]:
    """This test's markers; whatever still runs with one is killed afterwards."""
    found = Markers()
    try:
        yield found
    finally:
        found.kill_all()


def detached_script(markers: Markers, hold: str | None) -> tuple[str, dict[str, str]]:
    """A bash script starting every detached ``sleep``; then ``sleep <hold>`` if given."""
    lines, names = [], {}
    for n, (name, line) in enumerate(DETACHED.items()):
        lines.append(line.replace("{m}", markers.mark(n)))
        names[markers.mark(n)] = name
    if hold is not None:
        lines += ["echo started", f"sleep {hold}"]
    return "\n".join(lines), names


def test_the_guardian_is_what_contains_tool_processes_here() -> None:
    found = containment()
    assert found.guardian, found.summary
    assert "subreaper" in found.summary


@pytest.mark.parametrize("name", list(DETACHED))
async def test_a_detached_process_ends_with_its_call(
    tmp_path: Path, markers: Markers, name: str
) -> None:
    command = DETACHED[name].replace("{m}", markers.mark(0)) + "\necho started"
    result = await run_process(["bash", "-c", command], cwd=tmp_path, time_limit=60)
    assert (result.exit_code, result.stdout) == (0, "started\n")
    assert await eventually(lambda: not markers.running()), (
        f"{name}: {markers.running()} outlived the call"
    )


async def test_a_time_limit_kills_the_detached_processes_too(
    tmp_path: Path, markers: Markers
) -> None:
    script, names = detached_script(markers, hold=markers.mark(9))
    result = await run_process(["bash", "-c", script], cwd=tmp_path, time_limit=5)
    assert result.timed_out
    assert result.stdout == "started\n"  # every detached process had started
    assert result.exit_code == -signal.SIGKILL
    survivors = await _survivors(markers)
    assert survivors == [], [names.get(m, m) for m in survivors]


async def test_the_commands_exit_status_and_signal_come_through_the_guardian(
    tmp_path: Path,
) -> None:
    exited = await run_process(
        ["bash", "-c", "echo out; echo err >&2; exit 7"], cwd=tmp_path, time_limit=30
    )
    assert (exited.exit_code, exited.stdout, exited.stderr) == (7, "out\n", "err\n")
    killed = await run_process(["bash", "-c", "kill -TERM $$"], cwd=tmp_path, time_limit=30)
    assert killed.exit_code == -signal.SIGTERM
    script = tmp_path / "no-shebang"
    script.write_text("echo plain shell\n")
    script.chmod(0o755)
    plain = await run_process([str(script)], cwd=tmp_path, time_limit=30)
    assert (plain.exit_code, plain.stdout) == (0, "plain shell\n")


async def test_a_command_that_kills_its_own_group_still_leaves_nothing_behind(
    tmp_path: Path, markers: Markers
) -> None:
    command = f"setsid -f sleep {markers.mark(0)}; kill -9 0"
    result = await run_process(["bash", "-c", command], cwd=tmp_path, time_limit=60)
    assert result.exit_code == -signal.SIGKILL
    assert await _survivors(markers) == []


async def _survivors(markers: Markers, within: float = 60.0) -> list[str]:
    """The markers still running once ``within`` seconds passed or none is left."""
    await eventually(lambda: not markers.running(), within=within)
    return sorted(markers.running())


# --- a real server, SIGKILLed -----------------------------------------------------------------


@asynccontextmanager
async def serving(
    tmp_path: Path, config: str
) -> AsyncIterator[tuple[ScriptedLLMServer, ServeProcess]]:
    async with ScriptedLLMServer() as llm:
        agent = tmp_path / ".duragent" / "agents" / "bot"
        agent.mkdir(parents=True)
        (agent / "agent.yaml").write_text(agent_yaml(llm.openai_base_url, model_extra=TOOLS))
        (tmp_path / "duragent.yaml").write_text("server:\n  host: 127.0.0.1\n" + config)
        serve = ServeProcess(tmp_path / "duragent.yaml")
        try:
            yield llm, serve
        finally:
            serve.stop()


def call(name: str, **arguments: object) -> Reply:
    return Reply(tool_calls=[ToolCallReply(name=name, arguments=arguments, id=f"c-{name}")])


@pytest.mark.parametrize("mode", ["trust", "bubblewrap"])
async def test_no_tool_process_outlives_a_sigkilled_server_however_it_detached(
    tmp_path: Path, markers: Markers, mode: str, request: pytest.FixtureRequest
) -> None:
    if mode == "bubblewrap":
        request.getfixturevalue("bwrap")  # skipped where bubblewrap cannot run
    script, names = detached_script(markers, hold=markers.mark(9))
    job = f"setsid -f sleep {markers.mark(7)}; sleep {markers.mark(8)}"
    names |= {markers.mark(7): "background_process: setsid -f", markers.mark(8): "the job"}
    names[markers.mark(9)] = "the bash call"
    async with serving(tmp_path, f"sandbox:\n  mode: {mode}\n") as (llm, serve):
        serve.start()
        await ready(serve)
        llm.enqueue(
            call("background_process", action="spawn", command=job, label="detaching"),
            call("bash", command=script),
            Reply(text="never reached"),
        )
        async with httpx.AsyncClient(timeout=120) as client:
            created = await client.post(f"{serve.url}/api/v1/sessions", json={"agent": "bot"})
            sid = created.json()["session_id"]
            turn = asyncio.create_task(
                client.post(f"{serve.url}/api/v1/sessions/{sid}/messages", json={"content": "go"})
            )
            try:
                started = await eventually(lambda: len(markers.running()) == len(names), within=60)
                assert started, (
                    sorted(names[m] for m in names if m not in markers.running()),
                    (tmp_path / "serve-0.log").read_text()[-3000:],
                )
                serve.kill()
            finally:
                turn.cancel()
                with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                    await turn
    survivors = await _survivors(markers)
    assert survivors == [], f"outlived the server: {[names.get(m, m) for m in survivors]}"
