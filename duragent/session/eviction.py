"""Keeping live actors within bounds: the cap, the idle reaper, and room under descriptor pressure.

Separate from the registry's core (get or start an actor, find a chat's session) because these
are policy, with rules of their own that each fixed a real failure (see
specs/202611232150.workspace-lock-and-descriptors.md):

- the least recently used idle actor is stopped when more than ``cap`` are live, and any actor
  idle longer than ``idle_seconds`` is stopped by a reaper; a request to a stopped actor
  restarts it from disk;
- out of open files (``EMFILE``), up to ``EVICT_BATCH`` idle actors are stopped (closing their
  logs), the cap is lowered to what fitted, and the request is retried if it had recorded
  nothing (its op is declared ``retry_safe``, see ``ops``; decided by the caller);
- an actor being asked (``busy``) or awaiting a tool result is never evicted (its restart would
  mark the call interrupted), and an evicted actor stays registered until its stop is
  answered, so a request arriving meanwhile queues behind the stop, never beside it;
- an actor whose session another node took (a shared store's lease, ``cluster.leases``) is
  dropped whatever it is doing, with the same care (``drop``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, Protocol, TypeVar

import pykka

from duragent.session.actor import SessionActor
from duragent.session.bridge import SessionUnavailableError
from duragent.session.descriptors import MIN_ACTORS, is_out_of_descriptors
from duragent.session.ops import Op

__all__ = ["EVICT_BATCH", "PRESSURE_RETRIES", "Evictor", "Live"]

log = logging.getLogger(__name__)

PRESSURE_RETRIES = 5
EVICT_BATCH = 8

P = ParamSpec("P")
R = TypeVar("R")


class Ask(Protocol):
    """``ask(ref, op, *args, **kwargs)``: the registry's admitted ask (``ActorLauncher.ask``)."""

    def __call__(
        self,
        ref: pykka.ActorRef[Any],
        op: Op[SessionActor, P, R],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> Awaitable[R]: ...


@dataclass(slots=True)
class Live:
    """A running actor as the registry tracks it."""

    ref: pykka.ActorRef[Any]
    last_used: float
    busy: int = 0
    """Asks of this actor in flight (an actor being asked is never evicted)."""
    leaving: bool = False
    """An eviction is under way (counted as gone by the cap)."""
    writes: int = 0
    """Requests sent to this actor that may change the session (``SessionRegistry.stamp``)."""


class Evictor:
    """Stops idle actors of ``live`` (the registry's own map) to respect the cap (see above)."""

    def __init__(
        self,
        live: OrderedDict[str, Live],
        ask: Ask,
        *,
        max_live: int,
        idle_seconds: float,
        min_idle_to_evict: float,
    ) -> None:
        self._live = live
        self._ask = ask
        self.max_live = max_live
        self.cap = max_live  # lowered when the process runs out of descriptors
        self._idle_seconds = idle_seconds
        self._min_idle = min_idle_to_evict

    def evict_over_cap(self) -> None:
        """Stop the least recently used idle actors over the cap.

        Actors used within ``min_idle_to_evict`` are spared (the cap is briefly exceeded),
        unless the cap was lowered to fit the open-file limit: then it holds for every actor
        not being asked, since each one holds a descriptor.
        """
        staying = [(sid, live) for sid, live in self._live.items() if not live.leaving]
        excess = len(staying) - self.cap
        if excess <= 0:
            return
        now = time.monotonic()
        spare = self._min_idle if self.cap >= self.max_live else 0.0
        victims = [sid for sid, live in staying if not live.busy and now - live.last_used >= spare][
            :excess
        ]
        for sid in victims:
            asyncio.get_running_loop().create_task(self.evict(sid))

    async def evict(self, session_id: str) -> bool:
        """Stop an idle actor to free its thread and log descriptor; False if it must stay.

        It stays registered until its stop is answered (files final), so a request arriving
        meanwhile queues behind the stop and restarts it from disk, never beside it.
        """
        live = self._live.get(session_id)
        if live is None or live.busy or live.leaving:
            return False
        live.leaving = True
        try:
            stopped = await self._ask(live.ref, SessionActor.close, if_idle=True)
        except SessionUnavailableError:
            stopped = True
        except Exception as exc:
            log.warning("session %s: could not be evicted: %s", session_id, exc)
            stopped = False
        if stopped is False:
            live.leaving = False
        elif self._live.get(session_id) is live:
            del self._live[session_id]
        return stopped is not False

    async def drop(self, session_id: str) -> None:
        """Stop an actor that lost its session to another node (its writes are fenced).

        Busy or not: it can never write again. Like an eviction it stays registered until
        its stop is answered, so a request arriving meanwhile queues behind the stop, and a
        new actor here claims a new epoch only after the old one's last (refused) write.
        """
        live = self._live.get(session_id)
        if live is None or live.leaving:
            return
        live.leaving = True
        with contextlib.suppress(SessionUnavailableError):
            await self._ask(live.ref, SessionActor.close)
        if self._live.get(session_id) is live:
            del self._live[session_id]

    async def making_room(
        self, keep: str, retries: int, action: Callable[[], Awaitable[Any]]
    ) -> Any:
        """``action()``, retried up to ``retries`` times after making room for descriptors."""
        for attempt in range(retries + 1):
            try:
                return await action()
            except Exception as exc:
                if attempt == retries or not is_out_of_descriptors(exc):
                    raise
                await self._relieve_pressure(keep, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _relieve_pressure(self, keep: str, attempt: int) -> None:
        """Out of descriptors: evict idle actors (least recently used first), lower the cap."""
        victims = [
            sid
            for sid, live in self._live.items()
            if sid != keep and not live.busy and not live.leaving
        ]
        freed = 0
        for sid in victims:
            if freed >= EVICT_BATCH:
                break
            freed += await self.evict(sid)
        cap = max(MIN_ACTORS, len(self._live))
        if cap < self.cap:
            log.warning(
                "out of open files with %d live sessions: at most %d (was %d) stay live from "
                "now on, idle ones restart from disk; raise the open-file limit (ulimit -n, "
                "LimitNOFILE=) or lower server.max_connections",
                len(self._live) + freed,
                cap,
                self.cap,
            )
            self.cap = cap
        if not freed:  # nothing idle to close: give in-flight work a moment to finish
            await asyncio.sleep(0.05 * (attempt + 1))

    async def reap_forever(self) -> None:
        """Stop actors idle longer than ``idle_seconds``, forever (cancelled at close)."""
        interval = max(0.05, min(self._idle_seconds / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            idle = [
                sid
                for sid, live in self._live.items()
                if now - live.last_used >= self._idle_seconds
            ]
            for sid in idle:
                await self.evict(sid)
