"""Starting session actors once each, and asking them through the admission gate.

Split from the registry, which decides *which* actor a request needs (a chat's session, a
restart after a crash, a drop after a fence); this module is how an actor comes to life and
is spoken to, with the rules that each fixed a real failure:

- a session is loaded by one actor even when many requests for it arrive while it loads
  (they wait on one future), and a load that fails leaves no actor behind;
- loading runs on the new actor's thread, so it holds an admission permit like any ask
  (``gate``): ten thousand sessions woken at once cannot start ten thousand loads;
- a permit belongs to an ask, not a thread: an actor stuck in a hung fsync holds one only
  until its ask times out;
- a session that is not on disk is told apart: quarantined (409 with the reason, every time)
  or not found (404).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import pykka

from duragent.errors import NotFoundError
from duragent.session.actor import NewSession, SessionActor, SessionInfo, SessionQuarantinedError
from duragent.session.admission import AskAdmission, AskMix
from duragent.session.bridge import Request, SessionUnavailableError, ask
from duragent.session.eviction import Live
from duragent.session.gate import DEFAULT_ACTIVE_ASKS, MAX_ACTIVE_ASKS
from duragent.session.ops import Op
from duragent.store import SessionStorage

if TYPE_CHECKING:
    from duragent.session.registry import RegistrySettings

__all__ = ["ActorLauncher", "SessionNotFoundError"]

P = ParamSpec("P")
R = TypeVar("R")


class SessionNotFoundError(NotFoundError):
    """No session with this id exists on disk."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"session '{session_id}' not found")


class ActorLauncher:
    """Starts, asks and stops the actors of ``live`` (the registry's own map; see above)."""

    def __init__(
        self,
        store: SessionStorage,
        settings: RegistrySettings,
        live: OrderedDict[str, Live],
        *,
        on_change: Callable[[SessionInfo], None] | None,
        on_started: Callable[[], None],
    ) -> None:
        """``on_started`` runs after each start (the registry evicts over its cap then)."""
        self._store = store
        self._settings = settings
        self._live = live
        self._on_change = on_change
        self._on_started = on_started
        self.starting: dict[str, asyncio.Future[Live]] = {}
        """Sessions being loaded now, each by one actor (later requests wait on its future)."""
        asks = settings.active_asks
        self._mix: AskMix | None = None  # shared with the actors when the limit adapts
        if asks is None:
            self._mix = AskMix()
            self.admission = AskAdmission(DEFAULT_ACTIVE_ASKS, high=MAX_ACTIVE_ASKS, mix=self._mix)
        else:
            self.admission = AskAdmission(asks)

    async def ensure_live(self, session_id: str) -> Live:
        """The session's running actor, started (loaded from the store) if it has none."""
        live = self._live.get(session_id)
        if live is not None and live.ref.is_alive():
            return live
        if live is not None:
            del self._live[session_id]
        if not await asyncio.to_thread(self._store.exists, session_id):  # a query, in Postgres
            raise await asyncio.to_thread(self.missing, session_id)
        live = self._live.get(session_id)  # another caller may have started it meanwhile
        if live is not None and live.ref.is_alive():
            return live
        return await self.start(session_id, None)

    def missing(self, session_id: str) -> Exception:
        """Not on disk: quarantined (409 every time, with the reason) or not found."""
        reason = self._store.quarantine_reason(session_id)
        if reason is not None:
            return SessionQuarantinedError(session_id, reason)
        return SessionNotFoundError(session_id)

    async def start(self, session_id: str, new: NewSession | None) -> Live:
        """Start the session's actor (creating the session when ``new`` is given), once."""
        pending = self.starting.get(session_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Live] = asyncio.get_running_loop().create_future()
        self.starting[session_id] = future
        timeout = self._settings.ask_timeout
        try:
            # loading runs on the new actor's thread: it counts as an ask (see ``gate``)
            await self.admission.enter(timeout)
            try:
                ref = SessionActor.start(
                    self._store,
                    session_id,
                    new=new,
                    default_rollover=self._settings.default_rollover,
                    on_change=self._on_change,
                    mix=self._mix,
                )
                try:
                    await ask(ref, timeout, SessionActor.info)
                except BaseException:
                    with contextlib.suppress(pykka.ActorDeadError):
                        ref.tell(Request(SessionActor.close))
                    raise
            finally:
                self.admission.leave()
            live = Live(ref=ref, last_used=time.monotonic())
            self._live[session_id] = live
            future.set_result(live)
            self._on_started()
            return live
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved for waiters that never came
            raise
        finally:
            del self.starting[session_id]

    async def stop(self, session_id: str) -> None:
        """Stop the session's actor if it runs (it flushes and snapshots first)."""
        live = self._live.pop(session_id, None)
        if live is None:
            return
        with contextlib.suppress(SessionUnavailableError):
            await self.ask(live.ref, SessionActor.close)

    async def ask(
        self,
        ref: pykka.ActorRef[Any],
        op: Op[SessionActor, P, R],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """``bridge.ask`` once admitted (at most ``active_asks`` in flight, see ``gate``)."""
        admission = self.admission
        if not admission.try_enter():  # the common case needs no extra await
            await admission.enter(self._settings.ask_timeout)
        try:
            return await ask(ref, self._settings.ask_timeout, op, *args, **kwargs)
        finally:
            admission.leave()
