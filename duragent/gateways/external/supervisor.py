"""``Supervisor``: runs one gateway's child process, restarts it by its policy, reads its events.

The reference's rules, with its numbers as defaults (each a constructor parameter, so tests
restart in milliseconds):

- **Restart policy** (``restart``): ``always``; ``on_failure`` (the default: a non-zero exit,
  a death by signal, or a child we had to kill); ``never``.
- **Backoff**: 1 s before the first restart, doubling up to 60 s.
- **Attempts**: at most 5 starts in a row; a child that said ``ready`` resets both the count
  and the backoff, so a gateway that runs for days and then crashes gets 5 fresh tries, while
  one that cannot even connect gives up after 5 (``state`` then says ``failed: …``). A
  program that cannot be started at all (``OSError`` from ``exec``) counts as an attempt too.
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
        try:
            while True:
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
                    ready, code = await self._serve(process)
                    if ready:
                        attempts, backoff = 0, self._initial_backoff
                    clean = code == 0
                    why = f"exited with {_exit_text(code)}"
                if self._stopping:
                    return
                if attempts >= self._max_attempts:
                    self._on_state(f"failed: {why}; gave up after {attempts} attempts in a row")
                    log.error(
                        "gateway %s: %s; gave up after %d attempts in a row (it is not "
                        "restarted until duragent restarts; check %s: command, args, env, "
                        "and the gateway's own log above)",
                        self.name,
                        why,
                        attempts,
                        self._launch.field,
                    )
                    return
                if self._restart == "never" or (self._restart == "on_failure" and clean):
                    self._on_state(f"stopped: {why} (restart: {self._restart})")
                    log.warning("gateway %s: %s (restart: %s)", self.name, why, self._restart)
                    return
                self._on_state(f"restarting in {backoff:g}s: {why}")
                log.warning("gateway %s: %s; restarting in %gs", self.name, why, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
        finally:
            self.finished.set()

    async def _serve(self, process: asyncio.subprocess.Process) -> tuple[bool, int | None]:
        """Read the child's events until it ends; (it said ready, its exit code)."""
        self._process = process
        ready = False
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
                ready = ready or isinstance(event, Ready)
                try:
                    await self._sink(event)
                except Exception:
                    log.exception("gateway %s: handling a %s event failed", self.name, event.type)
                if isinstance(event, ShutdownEvent):
                    break
            return ready, await self._reap(process)
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
