"""Live session actors: get or start them, find a chat's session, and bound their number.

- ``get(id)`` starts the session's actor on first use (lazy recovery: nothing is read at
  start-up except the chat index, so 10,000 sessions on disk cost nothing until used).
- ``for_chat(key, new)`` returns the chat's session or creates exactly one, even when many
  first messages for the same chat arrive at once.
- Live actors are bounded: the least recently used idle one is stopped (its state is on disk)
  when more than ``live_cap`` (``max_live``, or less to fit the open-file limit) are running,
  and any actor idle longer than ``idle_seconds`` is stopped by a reaper. A request to a
  stopped actor transparently restarts it from disk.
- Out of open files (``EMFILE``), a request is not failed: the least recently used idle
  actors are stopped (closing their logs), the cap is lowered to what fitted, and the
  request is retried if it had recorded nothing (``RETRY_SAFE_OPS``). An actor in the middle
  of a tool call is never evicted (its restart would mark the call interrupted).
- ``aclose`` stops every actor; each flushes and snapshots first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pykka

from duragent.core.ids import new_session_id
from duragent.core.snapshot import SessionStatus
from duragent.errors import NotFoundError
from duragent.session.actor import NewSession, SessionActor, SessionInfo, SessionQuarantinedError
from duragent.session.admission import Admission, AskMix
from duragent.session.bridge import Request, SessionUnavailableError, ask
from duragent.session.descriptors import MIN_ACTORS, RETRY_SAFE_OPS, is_out_of_descriptors
from duragent.session.gate import DEFAULT_ACTIVE_ASKS, MAX_ACTIVE_ASKS
from duragent.store import ChatKey, SessionStore
from duragent.store.session_store import QUARANTINE_DIRNAME
from duragent.store.snapshot_file import read_header

__all__ = ["RegistrySettings", "SessionNotFoundError", "SessionRegistry"]

log = logging.getLogger(__name__)

QUARANTINED = "quarantined"
"""The ``status`` a listing gives a quarantined session (not a ``SessionStatus``: not loadable)."""
PRESSURE_RETRIES = 5
EVICT_BATCH = 8


class SessionNotFoundError(NotFoundError):
    """No session with this id exists on disk."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"session '{session_id}' not found")


@dataclass(frozen=True, slots=True, kw_only=True)
class RegistrySettings:
    """Bounds and timeouts of the registry."""

    max_live: int = 1000
    idle_seconds: float = 600.0
    ask_timeout: float = 30.0
    default_compaction: str = "archive"
    min_idle_to_evict: float = 1.0
    """An actor used within this many seconds is not evicted (the cap is briefly exceeded)."""
    active_asks: int | None = None
    """At most this many asks in flight to actor threads at once; None: adaptive (``gate``)."""


@dataclass(slots=True)
class _Live:
    ref: pykka.ActorRef[Any]
    last_used: float
    busy: int = 0
    """Asks of this actor in flight (an actor being asked is never evicted)."""
    leaving: bool = False
    """An eviction is under way (counted as gone by the cap)."""


class SessionRegistry:
    """Session id ↔ live actor, and chat key → session (see module docstring)."""

    def __init__(
        self,
        store: SessionStore,
        settings: RegistrySettings | None = None,
        *,
        on_change: Callable[[SessionInfo], None] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings or RegistrySettings()
        self._live: OrderedDict[str, _Live] = OrderedDict()
        self._starting: dict[str, asyncio.Future[_Live]] = {}
        self._chat_locks: dict[ChatKey, asyncio.Lock] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._on_change = on_change
        self._closed = False
        self._cap = self.settings.max_live  # lowered when the process runs out of descriptors
        asks = self.settings.active_asks
        self._mix: AskMix | None = None  # shared with the actors when the limit adapts
        if asks is None:
            self._mix = AskMix()
            self._admission = Admission(DEFAULT_ACTIVE_ASKS, high=MAX_ACTIVE_ASKS, mix=self._mix)
        else:
            self._admission = Admission(asks)

    @property
    def active_limit(self) -> int:
        """Asks allowed in flight to actor threads right now (adaptive unless configured)."""
        return self._admission.limit

    # --- lifecycle ------------------------------------------------------------------------

    async def open(self) -> None:
        """Prepare the directory and load the chat index; start the idle reaper."""
        await asyncio.to_thread(self.store.open)
        self._reaper = asyncio.create_task(self._reap_forever(), name="session-reaper")

    async def aclose(self) -> None:
        """Stop every live actor (each flushes and snapshots)."""
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        await asyncio.gather(*(self._stop(sid) for sid in list(self._live)), return_exceptions=True)

    @property
    def live_count(self) -> int:
        """How many actors are running."""
        return len(self._live)

    def is_live(self, session_id: str) -> bool:
        """Whether ``session_id`` has a running actor."""
        return session_id in self._live

    # --- sessions -------------------------------------------------------------------------

    async def create(self, new: NewSession) -> str:
        """Create a session durably (folder, first event, snapshot) and return its id."""
        session_id = new_session_id()

        async def create() -> str:
            nonlocal session_id
            if session_id not in self._live:
                try:
                    await self._start(session_id, new)
                except Exception:
                    session_id = new_session_id()  # a retry must not meet a half-made folder
                    raise
            if new.gateway and new.gateway_chat_id:
                key = (new.gateway, new.gateway_chat_id, new.agent)
                await asyncio.to_thread(self.store.chats.set, key, session_id)
            return session_id

        created: str = await self._making_room(session_id, PRESSURE_RETRIES, create)
        return created

    async def for_chat(self, key: ChatKey, new: NewSession) -> str:
        """The chat's current session id, creating exactly one if it has none."""
        lock = self._chat_locks.setdefault(key, asyncio.Lock())
        async with lock:
            existing = self.store.chats.get(key)
            if existing is not None:
                try:
                    info = await self.call(existing, "info")
                    if info.status is not SessionStatus.COMPLETED:
                        return existing
                except (SessionNotFoundError, SessionQuarantinedError) as exc:
                    log.warning(
                        "chat %s: session %s unusable (%s); starting a new one", key, existing, exc
                    )
            return await self.create(new)

    @property
    def live_cap(self) -> int:
        """Live actors allowed now (``max_live``, or lower after running out of descriptors)."""
        return self._cap

    @live_cap.setter
    def live_cap(self, cap: int) -> None:
        self._cap = max(1, cap)

    async def call(self, session_id: str, op: str, **kwargs: Any) -> Any:
        """Run ``op`` on the session's actor, starting or restarting it as needed.

        Out of descriptors, idle actors make room and a retry-safe op is tried again.
        """
        retries = PRESSURE_RETRIES if op in RETRY_SAFE_OPS else 0
        return await self._making_room(
            session_id, retries, lambda: self._call(session_id, op, **kwargs)
        )

    async def _call(self, session_id: str, op: str, **kwargs: Any) -> Any:
        for attempt in (1, 2):
            live = self._live.get(session_id)
            if live is None or not live.ref.is_alive():
                live = await self._ensure_live(session_id)
            live.last_used = time.monotonic()
            self._live.move_to_end(session_id)
            live.busy += 1
            try:
                return await self._ask(live.ref, op, **kwargs)
            except SessionUnavailableError:
                if self._live.get(session_id) is live:
                    del self._live[session_id]
                if attempt == 2:
                    raise
            finally:
                live.busy -= 1
        raise AssertionError("unreachable")  # pragma: no cover

    async def info(self, session_id: str) -> SessionInfo:
        """The session's summary."""
        info: SessionInfo = await self.call(session_id, "info")
        return info

    async def complete(self, session_id: str) -> None:
        """Mark the session completed and unmap its chat (files are kept)."""
        await self.call(session_id, "set_status", status=SessionStatus.COMPLETED.value)
        await asyncio.to_thread(self.store.chats.remove_session, session_id)
        await self._stop(session_id)

    async def delete(self, session_id: str) -> None:
        """Stop the session and delete its folder."""
        if not self.store.exists(session_id) and session_id not in self._live:
            raise self._missing(session_id)
        await self._stop(session_id)
        await asyncio.to_thread(self.store.delete, session_id)

    async def list_sessions(self, *, limit: int = 100) -> list[dict[str, Any]]:
        """Newest sessions first (live ones from their actor, others from snapshot headers).

        Quarantined sessions are listed too, with status ``quarantined`` and their ``reason``.
        """
        on_disk = set(self.store.list_ids())
        quarantined = set(self.store.quarantined()) - on_disk
        ids = sorted(on_disk | quarantined, reverse=True)[:limit]
        headers = await asyncio.to_thread(
            lambda: {
                sid: read_header(self.store.directory(sid))
                for sid in ids
                if sid not in self._live and sid not in quarantined
            }
        )
        out: list[dict[str, Any]] = []
        for sid in ids:
            if sid in quarantined:
                out.append(await asyncio.to_thread(self._quarantined_entry, sid))
                continue
            if sid in self._live:
                info = await self.info(sid)
                out.append(
                    {
                        "session_id": sid,
                        "agent": info.agent,
                        "status": info.status.value,
                        "created_at": info.created_at,
                        "updated_at": info.updated_at,
                    }
                )
                continue
            head = headers.get(sid)
            if head is None:
                continue
            out.append(
                {
                    "session_id": sid,
                    "agent": str(head.get("agent", "")),
                    "status": str(head.get("status", "active")),
                    "created_at": str(head.get("created_at", "")),
                    "updated_at": str(head.get("updated_at") or head.get("snapshot_at") or ""),
                }
            )
        return out

    def _quarantined_entry(self, session_id: str) -> dict[str, Any]:
        head = read_header(self.store.root / QUARANTINE_DIRNAME / session_id) or {}
        return {
            "session_id": session_id,
            "agent": str(head.get("agent", "")),
            "status": QUARANTINED,
            "created_at": str(head.get("created_at", "")),
            "updated_at": str(head.get("updated_at") or head.get("snapshot_at") or ""),
            "reason": self.store.quarantine_reason(session_id) or "",
        }

    async def expire(self, ttl_hours_for: Callable[[str], float | None]) -> list[str]:
        """Complete every session idle longer than its agent's TTL; return their ids.

        ``ttl_hours_for(agent)`` gives the TTL in hours, or None/0 when expiry is disabled.
        """
        now = datetime.now(UTC)
        expired: list[str] = []
        for entry in await self.list_sessions(limit=1_000_000):
            if entry["status"] in (SessionStatus.COMPLETED.value, QUARANTINED):
                continue
            ttl = ttl_hours_for(entry["agent"])
            if not ttl:
                continue
            try:
                updated = datetime.fromisoformat(entry["updated_at"].replace("Z", "+00:00"))
            except ValueError:
                continue
            if (now - updated).total_seconds() >= ttl * 3600:
                await self.complete(entry["session_id"])
                expired.append(entry["session_id"])
        if expired:
            log.info("expired %d idle session(s)", len(expired))
        return expired

    async def stop(self, session_id: str) -> None:
        """Stop the session's actor if it is running (state stays on disk)."""
        await self._stop(session_id)

    # --- internals --------------------------------------------------------------------------

    async def _ensure_live(self, session_id: str) -> _Live:
        live = self._live.get(session_id)
        if live is not None and live.ref.is_alive():
            return live
        if live is not None:
            del self._live[session_id]
        if not self.store.exists(session_id):
            raise self._missing(session_id)
        return await self._start(session_id, None)

    def _missing(self, session_id: str) -> Exception:
        """Not on disk: quarantined (409 every time, with the reason) or not found."""
        reason = self.store.quarantine_reason(session_id)
        if reason is not None:
            return SessionQuarantinedError(session_id, reason)
        return SessionNotFoundError(session_id)

    async def _start(self, session_id: str, new: NewSession | None) -> _Live:
        pending = self._starting.get(session_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[_Live] = asyncio.get_running_loop().create_future()
        self._starting[session_id] = future
        try:
            # loading runs on the new actor's thread: it counts as an ask (see ``gate``)
            await self._admission.enter(self.settings.ask_timeout)
            try:
                ref = SessionActor.start(
                    self.store,
                    session_id,
                    new=new,
                    default_compaction=self.settings.default_compaction,
                    on_change=self._on_change,
                    mix=self._mix,
                )
                try:
                    await ask(ref, "info", within=self.settings.ask_timeout)
                except BaseException:
                    with contextlib.suppress(pykka.ActorDeadError):
                        ref.tell(Request("stop"))
                    raise
            finally:
                self._admission.leave()
            live = _Live(ref=ref, last_used=time.monotonic())
            self._live[session_id] = live
            future.set_result(live)
            self._evict_over_cap()
            return live
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved for waiters that never came
            raise
        finally:
            del self._starting[session_id]

    async def _stop(self, session_id: str) -> None:
        live = self._live.pop(session_id, None)
        if live is None:
            return
        with contextlib.suppress(SessionUnavailableError):
            await self._ask(live.ref, "stop")

    async def _ask(self, ref: pykka.ActorRef[Any], op: str, **kwargs: Any) -> Any:
        """``bridge.ask`` once admitted (at most ``active_asks`` in flight, see ``gate``).

        A permit belongs to an ask, not a thread: an actor stuck in a hung fsync holds one
        only until its ask times out.
        """
        admission = self._admission
        if not admission.try_enter():  # the common case needs no extra await
            await admission.enter(self.settings.ask_timeout)
        try:
            return await ask(ref, op, within=self.settings.ask_timeout, **kwargs)
        finally:
            admission.leave()

    def _evict_over_cap(self) -> None:
        """Stop the least recently used idle actors over the cap.

        Actors used within ``min_idle_to_evict`` are spared (the cap is briefly exceeded),
        unless the cap was lowered to fit the open-file limit: then it holds for every actor
        not being asked, since each one holds a descriptor.
        """
        staying = [(sid, live) for sid, live in self._live.items() if not live.leaving]
        excess = len(staying) - self._cap
        if excess <= 0:
            return
        now = time.monotonic()
        spare = self.settings.min_idle_to_evict if self._cap >= self.settings.max_live else 0.0
        victims = [sid for sid, live in staying if not live.busy and now - live.last_used >= spare][
            :excess
        ]
        for sid in victims:
            asyncio.get_running_loop().create_task(self._evict(sid))

    async def _evict(self, session_id: str) -> bool:
        """Stop an idle actor to free its thread and log descriptor; False if it must stay.

        It stays registered until its stop is answered (files final), so a request arriving
        meanwhile queues behind the stop and restarts it from disk, never beside it.
        """
        live = self._live.get(session_id)
        if live is None or live.busy or live.leaving:
            return False
        live.leaving = True
        try:
            stopped = await self._ask(live.ref, "stop", if_idle=True)
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

    async def _making_room(
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
            freed += await self._evict(sid)
        cap = max(MIN_ACTORS, len(self._live))
        if cap < self._cap:
            log.warning(
                "out of open files with %d live sessions: at most %d (was %d) stay live from "
                "now on, idle ones restart from disk; raise the open-file limit (ulimit -n, "
                "LimitNOFILE=) or lower server.max_connections",
                len(self._live) + freed,
                cap,
                self._cap,
            )
            self._cap = cap
        if not freed:  # nothing idle to close: give in-flight work a moment to finish
            await asyncio.sleep(0.05 * (attempt + 1))

    async def _reap_forever(self) -> None:
        interval = max(0.05, min(self.settings.idle_seconds / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            idle = [
                sid
                for sid, live in self._live.items()
                if now - live.last_used >= self.settings.idle_seconds
            ]
            for sid in idle:
                await self._evict(sid)
