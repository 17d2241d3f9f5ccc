"""Services with an async start and stop, composed from one list and stopped in reverse.

The runtime used to start and stop each part by hand, so every new front end added fields and
ordering code. Now a part is a :class:`Service` (``start``/``stop``), the runtime lists its
parts as :class:`Entry` values (a name, whether it is essential, and how to build it from the
runtime), and a :class:`ServiceStack` starts them in list order and stops them in reverse.

What failing means (``specs/202611240140.runtime-services.md``):

- An *essential* entry that fails to build or start aborts the start: the entries already
  started are stopped in reverse order and :class:`ServiceStartError` names the entry and the
  cause. The workspace lock, the session store and the front end the command line asked for
  are essential: a server without them would be wrong or useless.
- An *optional* entry that fails is logged by name and skipped; the others keep running (a
  chat platform being down must not take the HTTP API down with it). It is remembered
  (``ServiceStack.failed``): unless the entry says the server is ready without it
  (``ready_without``: a chat platform, whose state ``/readyz`` shows apart), ``/readyz``
  is then 503 naming it, so a server never looks ready for work a service will not do
  (issue 34: a scheduler that did not start while ``/readyz`` said 200).
- Stopping never stops early: a service whose ``stop`` raises is logged by name and the rest
  still stop; :class:`ServiceStopError` then names every one that failed.

A service whose ``start`` raises must leave nothing behind (its ``stop`` is not called), as
with ``__aenter__`` in an ``AsyncExitStack``. Lives in ``core`` because front ends implement
:class:`Service` too and may not import the runtime.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from duragent.errors import DuragentError

__all__ = [
    "Entry",
    "Hooks",
    "Service",
    "ServiceStack",
    "ServiceStartError",
    "ServiceStopError",
    "TaskService",
]

log = logging.getLogger(__name__)

C = TypeVar("C", contravariant=True)


class Service(Protocol):
    """A part of the server with a lifetime: started once, stopped once."""

    async def start(self) -> None:
        """Begin work; on failure raise and leave nothing running."""
        ...

    async def stop(self) -> None:
        """End work and release what ``start`` took."""
        ...


def _cause(exc: BaseException) -> str:
    """``exc`` for a person: its message, with its type when it is not one we raise on purpose."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, DuragentError | OSError):
        return text
    return f"{type(exc).__name__}: {text}"


class ServiceStartError(DuragentError):
    """An essential service could not start; the ones started before it were stopped."""

    def __init__(self, service: str, cause: BaseException) -> None:
        self.service = service
        self.cause = cause
        # The cause first: it is what a person acts on ("cannot listen on …; choose --port").
        super().__init__(f"{_cause(cause)} (service '{service}' did not start)")


class ServiceStopError(DuragentError):
    """One or more services failed to stop (every other service was still stopped)."""

    def __init__(self, failures: list[tuple[str, BaseException]]) -> None:
        self.failures = failures
        parts = "; ".join(f"service '{name}': {_cause(exc)}" for name, exc in failures)
        super().__init__(f"stopping failed for {parts}")


@dataclass(frozen=True)
class Entry(Generic[C]):
    """One line of the runtime's service list.

    ``build`` receives the runtime (or whatever context the list is for) when the entry's turn
    comes, so it sees what the entries before it set up; it returns ``None`` when the
    configuration does not ask for this service (an absent ``duragent.yaml`` section, a flag not
    given).
    """

    name: str
    build: Callable[[C], Service | None]
    essential: bool = True
    ready_without: bool = False
    """Optional entries only: whether the server is still ready when this one failed."""


class Hooks:
    """A service made of two functions, for parts that are not objects of their own."""

    def __init__(
        self,
        start: Callable[[], Awaitable[None]] | None = None,
        stop: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._start = start
        self._stop = stop

    async def start(self) -> None:
        """Run the start function, if any."""
        if self._start is not None:
            await self._start()

    async def stop(self) -> None:
        """Run the stop function, if any."""
        if self._stop is not None:
            await self._stop()


class TaskService:
    """A service that is one task: a loop such as the TTL sweep, or a one-off job.

    The task runs from ``start`` until it returns or ``stop`` cancels it; if it fails its
    exception is logged with the task's name (it is not lost, and ``stop`` does not raise it).
    """

    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.name = name
        self._run = run
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the task."""
        self._task = asyncio.create_task(self._run(), name=self.name)
        self._task.add_done_callback(self._report)

    def _report(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("%s failed: %s", self.name, _cause(exc), exc_info=exc)

    async def stop(self) -> None:
        """Cancel the task (if still running) and wait for it to end."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        await asyncio.wait([task])  # its outcome is reported by _report, never raised here


class ServiceStack:
    """Started services, stopped in reverse order (an ``AsyncExitStack`` that names them)."""

    def __init__(self) -> None:
        self._started: list[tuple[str, Service]] = []
        self.failed: dict[str, str] = {}
        """Optional services that did not start, with the cause (``/readyz``)."""
        self.ready_without: set[str] = set()
        """Of those, the ones the server is ready without (``Entry.ready_without``)."""

    @property
    def names(self) -> list[str]:
        """The services running, in start order."""
        return [name for name, _ in self._started]

    def not_ready(self) -> dict[str, str]:
        """The failed services the server is not ready without, with the cause."""
        return {n: c for n, c in self.failed.items() if n not in self.ready_without}

    async def start(self, entries: Iterable[Entry[C]], context: C) -> None:
        """Build and start each entry in order (see the module docstring for failures)."""
        for entry in entries:
            try:
                service = entry.build(context)
                if service is None:
                    log.debug("service %s: not configured", entry.name)
                    continue
                await service.start()
            except Exception as exc:
                if entry.essential:
                    log.debug("service %s did not start", entry.name, exc_info=True)
                    failures = await self.stop()
                    error = ServiceStartError(entry.name, exc)
                    if failures:
                        error.add_note(str(ServiceStopError(failures)))
                    raise error from exc
                log.error(
                    "service %s did not start: %s; the other services keep running",
                    entry.name,
                    _cause(exc),
                )
                self.failed[entry.name] = _cause(exc)
                if entry.ready_without:
                    self.ready_without.add(entry.name)
                log.debug("service %s did not start", entry.name, exc_info=True)
                continue
            self._started.append((entry.name, service))

    async def stop(self) -> list[tuple[str, BaseException]]:
        """Stop every started service, last first; returns the ones that failed (logged)."""
        failures: list[tuple[str, BaseException]] = []
        while self._started:
            name, service = self._started.pop()
            try:
                await service.stop()
            except Exception as exc:
                log.error("service %s did not stop cleanly: %s", name, _cause(exc), exc_info=exc)
                failures.append((name, exc))
        return failures
