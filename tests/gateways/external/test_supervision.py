"""Supervising a gateway's child: real processes of the fake gateway, restarts in milliseconds.

The reference's rules with short times: restart by policy, backoff doubling to a cap, five
attempts in a row reset only by a child that stayed up after ``ready`` (judged on a clock the
test moves, so no test waits the 30 s or guesses how fast the machine is), 1 MiB lines, bad
lines logged and skipped, a flood read in order, ``shutdown`` on stop, and no child left behind
when duragent dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from duragent.config.workspace import RestartPolicy
from duragent.gateways.external.launch import Launch
from duragent.gateways.external.protocol import (
    Event,
    MessageReceived,
    Ping,
    Pong,
    Ready,
    SendTyping,
    Unknown,
)
from duragent.gateways.external.supervisor import GatewayDownError, Supervisor
from duragent.testing.gateway_control import GatewayControl, message
from tests.polling import eventually

TICK = 0.01
STAY_UP = 30.0


class Clock:
    """The supervisor's clock, moved by the test: a child stays up only when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    """The supervisor's sink and state callback: what it saw, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.states: list[str] = []

    async def sink(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[Event]) -> list[Event]:
        return [e for e in self.events if isinstance(e, kind)]


@asynccontextmanager
async def supervised(
    *options: str,
    mode: str = "relay",
    restart: RestartPolicy = "on_failure",
    max_attempts: int = 5,
    max_backoff: float = 0.04,
    clock: Clock | None = None,
) -> AsyncIterator[tuple[Supervisor, GatewayControl, Recorder]]:
    async with GatewayControl() as control:
        spec = control.command(*options, mode=mode)
        launch = Launch("fake", (spec["command"], *spec["args"]), dict(os.environ))
        seen = Recorder()
        supervisor = Supervisor(
            launch,
            seen.sink,
            restart=restart,
            on_state=seen.states.append,
            initial_backoff=TICK,
            max_backoff=max_backoff,
            max_attempts=max_attempts,
            grace=2.0,
            stay_up=STAY_UP,
            clock=clock or Clock(),
        )
        supervisor.start()
        try:
            yield supervisor, control, seen
        finally:
            await supervisor.stop()


async def finished(supervisor: Supervisor) -> bool:
    return await eventually(supervisor.finished.is_set)


async def test_a_crashing_gateway_is_restarted_with_doubling_backoff_and_given_up_after_five() -> (
    None
):
    async with supervised(mode="crash") as (supervisor, control, seen):
        assert await finished(supervisor)
        assert await eventually(lambda: len(control.children) == 5)  # hellos may trail
        assert supervisor.starts == 5
        waits = [s.split(":")[0] for s in seen.states if s.startswith("restarting")]
        assert waits == [
            "restarting in 0.01s",
            "restarting in 0.02s",
            "restarting in 0.04s",
            "restarting in 0.04s",  # capped (max_backoff)
        ]
        assert seen.states[-1] == "failed: exited with code 1; gave up after 5 attempts in a row"


def restart_waits(seen: Recorder) -> list[str]:
    return [s.split(":")[0] for s in seen.states if s.startswith("restarting")]


async def test_a_gateway_that_crashes_right_after_ready_backs_off_and_is_given_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``ready`` alone is no proof the gateway works (a token refused after the handshake):
    resetting on it restarted such a gateway every second, forever."""
    caplog.set_level(logging.INFO, "duragent.gateways.external")
    async with supervised("--ready", mode="crash") as (supervisor, _control, seen):
        assert await finished(supervisor)
        assert len(seen.of(Ready)) == 5
        assert supervisor.starts == 5
        assert restart_waits(seen) == [
            "restarting in 0.01s",
            "restarting in 0.02s",
            "restarting in 0.04s",
            "restarting in 0.04s",
        ]
        assert seen.states[-1] == (
            "failed: exited with code 1; gave up after 5 attempts in a row "
            "(none stayed up 30s after ready)"
        )
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name.endswith("supervisor")]
    warnings = [m for level, m in said if level == logging.WARNING]
    assert warnings == [
        "gateway fake: exited with code 1; restarting in 0.01s",
        "gateway fake: exited with code 1 again: 2 attempts in a row in 0s, none stayed up 30s "
        "after ready; restarting in 0.02s (the backoff doubles up to 0.04s until a start stays "
        "up 30s; gives up after 5 attempts in a row)",
    ]
    infos = [m for level, m in said if level == logging.INFO]
    assert infos == [
        "gateway fake: exited with code 1 again (3 attempts in a row in 0s); restarting in 0.04s",
        "gateway fake: exited with code 1 again (4 attempts in a row in 0s); restarting in 0.04s",
    ]
    [error] = [m for level, m in said if level == logging.ERROR]
    assert "gave up after 5 attempts in a row in 0s (none stayed up 30s after ready)" in error


async def test_only_a_gateway_that_stayed_up_gets_fresh_attempts_and_the_first_backoff() -> None:
    """Two attempts allowed: a quick crash, then one after staying up (which resets both the
    count and the backoff), then two quick crashes give up."""
    clock = Clock()
    async with supervised(mode="relay", max_attempts=2, clock=clock) as (supervisor, control, seen):
        first = await control.child(0)
        assert await eventually(lambda: len(seen.of(Ready)) == 1)
        clock.now += STAY_UP - 1  # not quite long enough
        await first.exit(1)
        second = await control.child(1)
        assert await eventually(lambda: len(seen.of(Ready)) == 2)
        clock.now += STAY_UP  # this one stayed up
        await second.exit(1)
        third = await control.child(2)
        assert await eventually(lambda: len(seen.of(Ready)) == 3)
        await third.exit(1)  # right after ready
        fourth = await control.child(3)
        assert await eventually(lambda: len(seen.of(Ready)) == 4)
        await fourth.exit(1)
        assert await finished(supervisor)
        assert restart_waits(seen) == [
            "restarting in 0.01s",
            "restarting in 0.01s",  # the first backoff again: the second child stayed up
            "restarting in 0.02s",
        ]
        assert "restarting in 0.01s: exited with code 1 after 30s up" in seen.states
        assert seen.states[-1] == (
            "failed: exited with code 1; gave up after 2 attempts in a row "
            "(none stayed up 30s after ready)"
        )
        assert len(control.children) == 4


@pytest.mark.parametrize(
    ("restart", "code", "starts", "last"),
    [
        ("never", 1, 1, "stopped: exited with code 1 (restart: never)"),
        ("on_failure", 0, 1, "stopped: exited with code 0 (restart: on_failure)"),
        ("on_failure", 3, 5, "failed: exited with code 3; gave up after 5 attempts in a row"),
        ("always", 0, 5, "failed: exited with code 0; gave up after 5 attempts in a row"),
    ],
)
async def test_the_restart_policy_decides_whether_an_exit_is_restarted(
    restart: RestartPolicy, code: int, starts: int, last: str
) -> None:
    async with supervised("--exit-code", str(code), mode="crash", restart=restart) as (
        supervisor,
        control,
        seen,
    ):
        assert await finished(supervisor)
        assert await eventually(lambda: len(control.children) == starts)  # hellos may trail
        assert seen.states[-1] == last


async def test_a_program_that_cannot_be_executed_counts_as_an_attempt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    program = tmp_path / "not-a-program"
    program.write_text("\x7fELF this is not really one\n")
    program.chmod(0o755)
    seen = Recorder()
    supervisor = Supervisor(
        Launch("broken", (str(program),), dict(os.environ), "gateways.external[1]"),
        seen.sink,
        on_state=seen.states.append,
        initial_backoff=TICK,
        max_attempts=3,
    )
    supervisor.start()
    assert await finished(supervisor)
    assert supervisor.starts == 0
    assert seen.states[-1].startswith(f"failed: cannot start {program}: ")
    assert seen.states[-1].endswith("gave up after 3 attempts in a row")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("(gateways.external[1].command)" in e for e in errors), errors
    assert "check gateways.external[1]: command, args, env" in errors[-1]


async def test_bad_lines_are_logged_and_skipped_and_the_good_ones_still_arrive(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "duragent.gateways.external")
    async with supervised(mode="garbage") as (_supervisor, _control, seen):
        assert await eventually(lambda: len(seen.of(MessageReceived)) == 1)
    [after] = seen.of(MessageReceived)
    assert isinstance(after, MessageReceived)
    assert after.content.text == "after the garbage"  # its \r\n ending was read as a line end
    assert [e.type for e in seen.of(Unknown)] == ["a_future_event"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    skipped = [w for w in warnings if "skipped a line that is not an event" in w]
    assert len(skipped) == 5, warnings  # not JSON, an array, no type, malformed, not UTF-8
    assert any("not JSON" in w for w in skipped)
    assert any("a malformed message_received event" in w for w in skipped)
    oversized = [w for w in warnings if "over the 1 MiB limit" in w]
    assert oversized == ["gateway fake: skipped a line of 1048586 bytes (over the 1 MiB limit)"]


async def test_a_flood_of_events_is_read_in_order_and_the_gateway_still_answers() -> None:
    async with supervised("--noise", "--count", "20000", mode="flood") as (
        supervisor,
        control,
        seen,
    ):
        assert await eventually(lambda: len(seen.of(Pong)) == 20000, within=60)
        ids = [e.request_id for e in seen.of(Pong) if isinstance(e, Pong)]
        assert ids == [f"n{i}" for i in range(20000)]
        await supervisor.send(Ping("after-the-flood"))
        assert await eventually(
            lambda: any(
                isinstance(e, Pong) and e.request_id == "after-the-flood" for e in seen.events
            )
        )
        assert len(control.children) == 1


async def test_a_slow_sink_holds_the_child_back_instead_of_queueing_in_memory() -> None:
    """The reader waits for the sink; the child's writes wait in the pipe."""
    release = asyncio.Event()
    taken: list[Event] = []

    async def slow(event: Event) -> None:
        taken.append(event)
        if isinstance(event, MessageReceived):
            await release.wait()

    async with GatewayControl() as control:
        spec = control.command(mode="relay")
        supervisor = Supervisor(
            Launch("fake", (spec["command"], *spec["args"]), dict(os.environ)), slow
        )
        supervisor.start()
        child = await control.child()
        for i in range(3):
            await child.emit(message("1", f"m{i}", message_id=str(i), sender_id="1"))
        assert await eventually(lambda: len(taken) == 2)  # ready, then the first message
        await asyncio.sleep(0.05)
        assert len(taken) == 2
        release.set()
        assert await eventually(lambda: len(taken) == 4)
        await supervisor.stop()


async def test_a_send_cancelled_at_any_moment_ends_cancelled() -> None:
    """The kit cancels "typing…" mid-send all the time; a swallowed cancel hung a turn."""
    async with supervised() as (supervisor, control, _seen):
        await control.child()
        assert await eventually(lambda: supervisor.pid is not None)
        for steps in range(12):
            task = asyncio.create_task(supervisor.send(SendTyping("1")))
            for _ in range(steps):
                await asyncio.sleep(0)
            requested = task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            assert not requested or task.cancelled(), f"cancel swallowed after {steps} steps"


async def test_stop_sends_shutdown_and_the_child_exits_on_its_own() -> None:
    async with supervised() as (supervisor, control, _seen):
        child = await control.child()
        await supervisor.stop()
        assert child.of_type("shutdown") == [{"type": "shutdown"}]
        assert child.closed.is_set() or await eventually(child.closed.is_set)
        with pytest.raises(GatewayDownError, match="gateway 'fake' is not running"):
            await supervisor.send(Ping("late"))
        assert len(control.children) == 1  # nothing restarted after a stop


async def test_a_child_that_ignores_shutdown_is_killed_after_the_grace_period() -> None:
    async with GatewayControl() as control:
        spec = control.command("--ignore-shutdown", mode="relay")
        supervisor = Supervisor(
            Launch("fake", (spec["command"], *spec["args"]), dict(os.environ)),
            Recorder().sink,
            grace=0.1,
        )
        supervisor.start()
        child = await control.child()
        await supervisor.stop()
        assert child.of_type("shutdown") == [{"type": "shutdown"}]
        assert await eventually(child.closed.is_set), "the child was not killed"


PARENT = """
import asyncio, os, sys
from duragent.gateways.external.launch import Launch
from duragent.gateways.external.supervisor import Supervisor

async def main():
    async def sink(event):
        pass
    Supervisor(Launch("fake", tuple(sys.argv[1:]), dict(os.environ)), sink).start()
    await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.parametrize("ignores_stdin_eof", [True, False])
async def test_a_gateway_dies_with_duragent(ignores_stdin_eof: bool) -> None:
    """SIGKILL leaves no clean-up to duragent: the kernel's parent-death signal ends the child
    (``ignores_stdin_eof``), and so does the end of its stdin, for any gateway that keeps the
    protocol's contract."""
    async with GatewayControl() as control:
        options = ("--ignore-stdin-eof",) if ignores_stdin_eof else ()
        spec = control.command(*options)
        parent = await asyncio.to_thread(
            subprocess.Popen,
            [sys.executable, "-c", PARENT, spec["command"], *spec["args"]],
            env=dict(os.environ),
        )
        try:
            child = await control.child()
            assert child.pid != parent.pid
            os.kill(parent.pid, signal.SIGKILL)
            await asyncio.to_thread(parent.wait)
            assert await eventually(child.closed.is_set), "the gateway outlived duragent"
        finally:
            if parent.poll() is None:
                parent.kill()
                parent.wait()
