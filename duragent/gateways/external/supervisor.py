"""``Supervisor``: runs one gateway's child process, restarts it by its policy, reads its events.

The reference's rules, with its numbers as defaults (each a constructor parameter, so tests
restart in milliseconds):

- **Restart policy** (``restart``): ``always``; ``on_failure`` (the default: a non-zero exit,
  a death by signal, or a child we had to kill); ``never``.
- **Backoff**: 1 s before the first restart, doubling up to 60 s.
- **Attempts**: at most 5 starts in a row. Only a child that *stayed up* resets both the count
  and the backoff: one that said ``ready`` and then ran ``stay_up`` seconds (30 s) more. So a
  gateway that runs for days and then crashes gets 5 fresh tries at the first backoff, while
  one that cannot connect, or crashes right after ``ready`` (a bad token the platform refuses
  only after the handshake), waits 1, 2, 4, 8 s and gives up after 5 (``state`` then says
  ``failed: …``). Resetting on ``ready`` alone restarted such a gateway every second forever.
  A program that cannot be started at all (``OSError`` from ``exec``) counts as an attempt too.
- **Saying so**: the first exit of a run of short-lived children is a WARNING, and so is the
  second, which says the backoff now grows and why, with counts (attempts in a row, seconds);
  the restarts after it are INFO lines and the give-up an ERROR, so the log holds a few lines
  per run, never one a second. ``state`` says each restart (``restarting in 4s: …``).
- **Reading**: lines of at most 1 MiB (``LineReader``; longer ones are skipped with a warning
  naming the size); a line that is not an event is logged (its first 200 characters) and
  skipped; an event of an unknown type reaches the sink as ``Unknown`` (the service ignores
  it). Events go to the sink in order; a sink that raises is logged, never the end of the
  reader. The sink may take its time: while it does, the child's writes wait in the pipe
  (back-pressure, not memory).
- **A ``shutdown`` event** ends the reading; the child gets ``grace`` seconds to exit on its
  own before it is killed. Exiting 0 by itself counts as a clean exit (the reference killed it
  and so restarted it under ``on_failure``).
- **Stopping** (``stop``): the ``shutdown`` command, stdin closed, ``grace`` seconds (0.5 s,
  the reference's) to exit, then SIGKILL. No restart after that.

Writing (``send``): one line per command, waiting at most ``write_timeout`` seconds for the
pipe (a child that stopped reading its stdin fills it); while no child runs, ``send`` raises
``GatewayDownError`` at once. Every wait here and in the outbound port uses
``asyncio.timeout``, never ``asyncio.wait_for``: on Python 3.11, ``wait_for`` swallows a
cancellation that lands as the awaited future completes, and the kit cancels "typing…" tasks
mid-send all the time (a swallowed cancel left a typing loop, and its turn, running forever).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from duragent.config.workspace import RestartPolicy
from duragent.errors import DuragentError
from duragent.gateways.external.launch import Launch
from duragent.gateways.external.lines import LineReader, Oversized
from duragent.gateways.external.protocol import (
    Command,
    Event,
    ProtocolError,
    Ready,
    Shutdown,
    ShutdownEvent,
    parse_event,
    to_line,
)

__all__ = ["GatewayDownError", "Supervisor"]

log = logging.getLogger(__name__)

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 60.0
MAX_ATTEMPTS = 5
STAY_UP_SECONDS = 30.0
"""How long a child must run after ``ready`` for its exit to start a fresh run of attempts."""
GRACE_SECONDS = 0.5
WRITE_TIMEOUT = 2.0
SHOWN_CHARS = 200


class GatewayDownError(DuragentError):
    """A command could not reach the gateway: no child runs, or it does not read its stdin."""


Sink = Callable[[Event], Awaitable[None]]


class Supervisor:
    """One gateway's child, kept running by its restart policy (see module docstring)."""

    def __init__(
        self,
        launch: Launch,
        sink: Sink,
        *,
        restart: RestartPolicy = "on_failure",
        on_state: Callable[[str], None] = lambda _state: None,
        initial_backoff: float = INITIAL_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        max_attempts: int = MAX_ATTEMPTS,
        grace: float = GRACE_SECONDS,
        write_timeout: float = WRITE_TIMEOUT,
        stay_up: float = STAY_UP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._launch = launch
        self._sink = sink
        self._restart = restart
        self._on_state = on_state
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_attempts = max_attempts
        self._grace = grace
        self._write_timeout = write_timeout
        self._stay_up = stay_up
        self._clock = clock
        self._process: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.starts = 0
        """How many times a child was started (spawn attempts that succeeded)."""
        self.finished = asyncio.Event()
        """Set once the supervisor will start no more children (gave up, policy, or stop)."""

    @property
    def name(self) -> str:
        """The gateway's configured name."""
        return self._launch.name

    @property
    def pid(self) -> int | None:
        """The running child's process id, if one runs."""
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start the first child (in the background: ``state`` reports how it goes)."""
        self._task = asyncio.create_task(self._run(), name=f"gateway-{self.name}")

    async def send(self, command: Command) -> None:
        """Write ``command`` to the child (``GatewayDownError`` if it cannot be delivered)."""
        process = self._process
        stdin = process.stdin if process is not None else None
        if stdin is None or stdin.is_closing() or self._stopping:
            raise GatewayDownError(f"gateway '{self.name}' is not running")
        try:
            stdin.write(to_line(command))
            async with asyncio.timeout(self._write_timeout):
                await stdin.drain()
        except TimeoutError:
            raise GatewayDownError(
                f"gateway '{self.name}' did not read its stdin for {self._write_timeout:g}s"
            ) from None
        except (ConnectionError, RuntimeError) as exc:  # the child closed its stdin or died
            raise GatewayDownError(f"gateway '{self.name}' is not running ({exc})") from None

    async def stop(self) -> None:
        """Ask the child to shut down, kill it after the grace period; restart nothing more."""
        self._stopping = True
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(Exception):
                stdin = process.stdin
                if stdin is not None and not stdin.is_closing():
                    stdin.write(to_line(Shutdown()))
                    async with asyncio.timeout(self._grace):
                        await stdin.drain()
                    stdin.close()
            await self._reap(process)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.finished.set()

    # --- the loop -----------------------------------------------------------------------

    async def _run(self) -> None:
        """Start children until the policy, the attempts or ``stop`` say no more."""
        attempts = 0
        backoff = self._initial_backoff
        since = self._clock()  # when this run of attempts began
        said_ready = False  # a child of this run said ready (and did not stay up)
        try:
            while True:
                if attempts == 0:
                    since, said_ready = self._clock(), False
                attempts += 1
                try:
                    process = await self._launch.spawn()
                except OSError as exc:
                    why = f"cannot start {self._launch.argv[0]}: {exc}"
                    log.error("gateway %s: %s (%s.command)", self.name, why, self._launch.field)
                    clean = False
                else:
                    self.starts += 1
                    self._on_state("starting")
                    ready_at, code = await self._serve(process)
                    clean = code == 0
                    why = f"exited with {_exit_text(code)}"
                    if ready_at is not None:
                        up = self._clock() - ready_at
                        if up >= self._stay_up:  # it ran: a crash now starts a fresh run
                            attempts, backoff = 0, self._initial_backoff
                            why = f"{why} after {up:.0f}s up"
                        else:
                            said_ready = True
                if self._stopping:
                    return
                if attempts >= self._max_attempts:
                    self._give_up(why, attempts, since, said_ready)
                    return
                if self._restart == "never" or (self._restart == "on_failure" and clean):
                    self._on_state(f"stopped: {why} (restart: {self._restart})")
                    log.warning("gateway %s: %s (restart: %s)", self.name, why, self._restart)
                    return
                self._on_state(f"restarting in {backoff:g}s: {why}")
                self._say_restart(why, attempts, since, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
        finally:
            self.finished.set()

    def _say_restart(self, why: str, attempts: int, since: float, backoff: float) -> None:
        """Log a restart: WARNING for the first two of a run, INFO after (module docstring).

        The second says the backoff now grows and why, with counts, so a crash loop is a few
        lines, not one per restart.
        """
        if attempts <= 1:
            log.warning("gateway %s: %s; restarting in %gs", self.name, why, backoff)
            return
        seconds = self._clock() - since
        if attempts == 2:
            log.warning(
                "gateway %s: %s again: %d attempts in a row in %.0fs, none stayed up %gs "
                "after ready; restarting in %gs (the backoff doubles up to %gs until a start "
                "stays up %gs; gives up after %d attempts in a row)",
                self.name,
                why,
                attempts,
                seconds,
                self._stay_up,
                backoff,
                self._max_backoff,
                self._stay_up,
                self._max_attempts,
            )
            return
        log.info(
            "gateway %s: %s again (%d attempts in a row in %.0fs); restarting in %gs",
            self.name,
            why,
            attempts,
            seconds,
            backoff,
        )

    def _give_up(self, why: str, attempts: int, since: float, said_ready: bool) -> None:
        """No more starts: ``state`` and an ERROR say why, with the counts."""
        unstable = f" (none stayed up {self._stay_up:g}s after ready)" if said_ready else ""
        self._on_state(f"failed: {why}; gave up after {attempts} attempts in a row{unstable}")
        log.error(
            "gateway %s: %s; gave up after %d attempts in a row in %.0fs%s (it is not "
            "restarted until duragent restarts; check %s: command, args, env, and the "
            "gateway's own log above)",
            self.name,
            why,
            attempts,
            self._clock() - since,
            unstable,
            self._launch.field,
        )

    async def _serve(self, process: asyncio.subprocess.Process) -> tuple[float | None, int | None]:
        """Read the child's events until it ends; (``clock`` at its first ready, exit code)."""
        self._process = process
        ready_at: float | None = None
        assert process.stdout is not None
        reader = LineReader(process.stdout)
        try:
            while True:
                line = await reader.next()
                if line is None:
                    break
                if isinstance(line, Oversized):
                    log.warning(
                        "gateway %s: skipped a line of %d bytes (over the 1 MiB limit)",
                        self.name,
                        line.size,
                    )
                    continue
                if not line.strip():
                    continue
                try:
                    event = parse_event(line)
                except ProtocolError as exc:
                    log.warning(
                        "gateway %s: skipped a line that is not an event: %s: %s",
                        self.name,
                        exc,
                        line[:SHOWN_CHARS],
                    )
                    continue
                if ready_at is None and isinstance(event, Ready):
                    ready_at = self._clock()
                try:
                    await self._sink(event)
                except Exception:
                    log.exception("gateway %s: handling a %s event failed", self.name, event.type)
                if isinstance(event, ShutdownEvent):
                    break
            return ready_at, await self._reap(process)
        finally:
            self._process = None

    async def _reap(self, process: asyncio.subprocess.Process) -> int | None:
        """Wait ``grace`` seconds for the child to exit, then kill it; its exit code."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._grace):
                return await process.wait()
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        return await process.wait()


def _exit_text(code: int | None) -> str:
    if code is None:
        return "an unknown status"
    if code < 0:
        return f"signal {-code}"
    return f"code {code}"
