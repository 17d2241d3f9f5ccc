"""Live session actors: get or start them, find a chat's session.

- ``get(id)`` starts the session's actor on first use (lazy recovery: nothing is read at
  start-up except the chat index, so 10,000 sessions on disk cost nothing until used).
- ``for_chat(key, new)`` returns the chat's session or creates exactly one, even when many
  first messages for the same chat arrive at once; ``chat_session`` finds it without
  creating one, ``chat_sessions`` lists every agent's session in one chat, and ``end_chat``
  completes it so the chat's next message starts afresh (a chat's ``/reset``).
- Live actors are bounded (``live_cap``, an idle reaper) and out of open files idle ones make
  room: that policy is ``eviction.Evictor``. Listings are ``listing.SessionListing``.
- ``aclose`` stops every actor; each flushes and snapshots first. How an actor is started
  (once under concurrency) and asked (through the admission gate) is ``launcher``.
- With a store several nodes share (``SharedStorage``): leases are renewed while actors live
  (``cluster.LeaseKeeper``); an actor whose write was fenced, or whose lease was found lost,
  is dropped at once (``FencedWriteError`` reaches the caller, who serves the request again
  where the session lives now); store lookups run in threads (each is a query) and a
  chat's session is read through to the database (another node may have mapped it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ParamSpec, TypeVar

from duragent.cluster.chat_claims import ANY_MAPPING, AnyMapping, map_created_session
from duragent.cluster.leases import LeaseKeeper
from duragent.core.clock import utc_now
from duragent.core.ids import new_session_id
from duragent.core.snapshot import SessionStatus
from duragent.errors import DuragentError
from duragent.observability.metrics import Metrics
from duragent.session.actor import NewSession, SessionActor, SessionInfo, SessionQuarantinedError
from duragent.session.bridge import Request, SessionUnavailableError
from duragent.session.eviction import PRESSURE_RETRIES, Evictor, Live
from duragent.session.handle import SessionHandle
from duragent.session.keyed_locks import KeyedLocks
from duragent.session.launcher import ActorLauncher, SessionNotFoundError
from duragent.session.listing import QUARANTINED, UNAVAILABLE, SessionListing
from duragent.session.operations import SessionOps, idle_past
from duragent.session.ops import Op
from duragent.session.progress import ChatProgress, progress_on_disk
from duragent.store import (
    ChatKey,
    FencedWriteError,
    SessionStorage,
    SharedStorage,
)

__all__ = ["RegistrySettings", "SessionNotFoundError", "SessionRegistry"]

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True, kw_only=True)
class RegistrySettings:
    """Bounds and timeouts of the registry."""

    max_live: int = 1000
    idle_seconds: float = 600.0
    ask_timeout: float = 30.0
    default_rollover: str = "archive"
    min_idle_to_evict: float = 1.0
    """An actor used within this many seconds is not evicted (the cap is briefly exceeded)."""
    active_asks: int | None = None
    """At most this many asks in flight to actor threads at once; None: adaptive (``gate``)."""


TOKEN_COUNTS = 10_000
"""Completed chat sessions whose daily token count waits for the chat's next session."""


class SessionRegistry:
    """Session id ↔ live actor, and chat key → session (see module docstring)."""

    def __init__(
        self,
        store: SessionStorage,
        settings: RegistrySettings | None = None,
        *,
        on_change: Callable[[SessionInfo], None] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings or RegistrySettings()
        self._live: OrderedDict[str, Live] = OrderedDict()  # least recently used first
        self._actors = ActorLauncher(
            store,
            self.settings,
            self._live,
            on_change=on_change,
            on_started=lambda: self._evictor.evict_over_cap(),
        )
        self._evictor = Evictor(
            self._live,
            self._actors.ask,
            max_live=self.settings.max_live,
            idle_seconds=self.settings.idle_seconds,
            min_idle_to_evict=self.settings.min_idle_to_evict,
        )
        self._listing = SessionListing(
            store,
            is_live=lambda sid: sid in self._live or sid in self._actors.starting,
            info=self.info,
        )
        self._chat_locks: KeyedLocks[ChatKey] = KeyedLocks()
        self._usable: set[str] = set()
        self._token_counts: OrderedDict[ChatKey, tuple[str, int]] = OrderedDict()
        """Chat sessions this process saw usable (loaded, not completed): while their actor
        is live ``for_chat`` asks them nothing. A ``set_status``, a not-found or quarantined
        answer, or a delete drops one."""
        self._reaper: asyncio.Task[None] | None = None
        shared = store if isinstance(store, SharedStorage) else None  # a Protocol check: once
        self._shared: SharedStorage | None = shared
        self.leases = LeaseKeeper(shared, self._evictor.drop) if shared is not None else None
        """Renews this node's session leases (a shared store only)."""
        self._lease_task: asyncio.Task[None] | None = None
        self._closed = False

    def instrument(self, metrics: Metrics) -> None:
        """Count admission waits into ``metrics``; export live actors and asks at scrape time."""
        admission = self._actors.admission
        admission.on_wait = metrics.admission_wait_seconds.observe
        metrics.sample(
            "duragent_live_actors",
            "Session actors running (each holds its session in memory).",
            lambda: [((), float(len(self._live)))],
        )
        metrics.sample(
            "duragent_actor_asks",
            "Asks to session actors by state: in_flight (holding a permit) or waiting.",
            lambda: [(("in_flight",), float(admission.in_use)), (("waiting",), admission.waiting)],
            labels=("state",),
        )
        if self.leases is not None:
            self.leases.instrument(metrics)

    @property
    def active_limit(self) -> int:
        """Asks allowed in flight to actor threads right now (adaptive unless configured)."""
        return self._actors.admission.limit

    # --- lifecycle ------------------------------------------------------------------------

    async def open(self) -> None:
        """Prepare the directory and load the chat index; start the idle reaper."""
        await asyncio.to_thread(self.store.open)
        self._reaper = asyncio.create_task(self._evictor.reap_forever(), name="session-reaper")
        if self.leases is not None:
            self._lease_task = asyncio.create_task(self.leases.run_forever(), name="lease-keeper")

    async def aclose(self) -> None:
        """Stop every live actor (each flushes and snapshots)."""
        self._closed = True
        for task in (self._reaper, self._lease_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        stops = (self._actors.stop(sid) for sid in list(self._live))
        await asyncio.gather(*stops, return_exceptions=True)
        await asyncio.to_thread(self.store.close)  # after every actor's last write

    @property
    def live_count(self) -> int:
        """How many actors are running."""
        return len(self._live)

    def is_live(self, session_id: str) -> bool:
        """Whether ``session_id`` has a running actor."""
        return session_id in self._live

    # --- sessions -------------------------------------------------------------------------

    async def create(
        self, new: NewSession, *, replacing: str | AnyMapping | None = ANY_MAPPING
    ) -> str:
        """Create a session durably (folder, first event, snapshot) and return its id.

        A chat's session is mapped only if the chat still maps to ``replacing``
        (``chat_claims``: else another node's session is returned and this one deleted).
        """
        session_id = new_session_id()

        async def create() -> str:
            nonlocal session_id
            if session_id not in self._live:
                try:
                    await self._actors.start(session_id, new)
                except Exception:
                    session_id = new_session_id()  # a retry must not meet a half-made folder
                    raise
            if new.gateway and new.gateway_chat_id:
                key = (new.gateway, new.gateway_chat_id, new.agent)
                return await map_created_session(self, key, session_id, replacing)
            return session_id

        created: str = await self._evictor.making_room(session_id, PRESSURE_RETRIES, create)
        return created

    async def for_chat(self, key: ChatKey, new: NewSession) -> str:
        """The chat's current session id, creating exactly one if it has none."""
        async with self._chat_locks.hold(key):
            existing = await self._chat_of(key)
            if existing in self._usable and existing in self._live:  # loaded: cannot be
                return existing  # quarantined now, and completing it went through ``call``
            if existing is not None:
                try:
                    info = await self.call(existing, SessionOps.info)
                    if info.status is not SessionStatus.COMPLETED:
                        self._usable.add(existing)
                        return existing
                except (SessionNotFoundError, SessionQuarantinedError) as exc:
                    log.warning(
                        "chat %s: session %s unusable (%s); starting a new one", key, existing, exc
                    )
            carried = self._token_counts.pop(key, None)  # the chat's daily count goes on
            if carried is not None:
                new = replace(new, tokens_day=carried[0], tokens_today=carried[1])
            created = await self.create(new, replacing=existing)
            self._usable.add(created)
            return created

    def chat_sessions(self, gateway: str) -> list[tuple[str, str]]:
        """``(chat_id, session_id)`` of every chat of ``gateway`` (the chat index; no reads)."""
        return [(key[1], sid) for key, sid in self.store.chats.items() if key[0] == gateway]

    async def progress(self, session_id: str) -> ChatProgress:
        """Where the session stands: its snapshot header if current, else its actor's word."""
        if session_id not in self._live and session_id not in self._actors.starting:
            quick = await asyncio.to_thread(progress_on_disk, self.store, session_id)
            if quick is not None:
                return quick
        return ChatProgress.of(await self.info(session_id))

    async def _chat_of(self, key: ChatKey) -> str | None:
        """The chat's mapped session: read through to a shared store (in a thread)."""
        if self._shared is not None:
            return await asyncio.to_thread(self._shared.fetch_chat, key)
        return self.store.chats.get(key)

    async def chat_session(self, key: ChatKey) -> str | None:
        """The chat's current session id, or None (none yet, ended, or unusable)."""
        existing = await self._chat_of(key)
        if existing is None:
            return None
        try:
            info = await self.info(existing)
        except (SessionNotFoundError, SessionQuarantinedError):
            return None
        return None if info.status is SessionStatus.COMPLETED else existing

    async def sessions_of_chat_now(self, gateway: str, chat_id: str) -> list[tuple[str, str]]:
        """``sessions_of_chat`` as stored now: a shared store is read through (in a thread).

        As ``_chat_of`` reads one key: another node may have mapped the chat after this one
        loaded the map, and a button pressed in such a chat must still find its session (and
        so the node serving it).
        """
        if self._shared is not None:
            rows = await asyncio.to_thread(self._shared.fetch_chat_sessions, gateway, chat_id)
            return [(key[2], sid) for key, sid in rows]
        return self.sessions_of_chat(gateway, chat_id)

    def sessions_of_chat(self, gateway: str, chat_id: str) -> list[tuple[str, str]]:
        """``(agent, session_id)`` of every session this node's copy of the map holds.

        With a shared store, ``sessions_of_chat_now`` reads what is stored now.
        """
        return [
            (key[2], sid)
            for key, sid in self.store.chats.items()
            if key[0] == gateway and key[1] == chat_id
        ]

    async def end_chat(self, key: ChatKey) -> str | None:
        """Complete the chat's session (files kept, chat unmapped); its id, or None if none.

        Under the chat's lock: a first message racing the reset gets either the old session
        (before) or a new one (after), never the one being ended.
        """
        async with self._chat_locks.hold(key):
            session_id = await self.chat_session(key)
            if session_id is None:
                return None
            await self.complete(session_id)
            return session_id

    @property
    def live_cap(self) -> int:
        """Live actors allowed now (``max_live``, or lower after running out of descriptors)."""
        return self._evictor.cap

    @live_cap.setter
    def live_cap(self, cap: int) -> None:
        self._evictor.cap = max(1, cap)

    def handle(self, session_id: str) -> SessionHandle:
        """The typed operations of ``session_id`` (the way everything above uses ``call``)."""
        return SessionHandle(self, session_id)

    async def call(
        self,
        session_id: str,
        op: Op[SessionActor, P, R],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """Run ``op(*args, **kwargs)`` on the session's actor, starting or restarting it.

        The boundary under ``SessionHandle`` (use ``handle(session_id)`` instead): ``op`` is
        the actor's method itself (``SessionOps.info``), typed with its own parameters and
        result. Out of descriptors, idle actors make room and an op declared ``retry_safe``
        is tried again.
        """
        retries = PRESSURE_RETRIES if op.retry_safe else 0
        if op.ends_session:  # it may be completing the session
            self._usable.discard(session_id)
        try:
            result: R = await self._evictor.making_room(
                session_id, retries, lambda: self._call(session_id, op, args, kwargs)
            )
            return result
        except (SessionNotFoundError, SessionQuarantinedError):
            self._usable.discard(session_id)
            raise

    def stamp(self, session_id: str) -> tuple[object, int] | None:
        """Where the session's writes stand now (None: no live actor).

        Equal stamps mean no request that may change the session was sent in between: what
        a read returned then is still what the actor holds (a chat turn reuses the context
        its message was recorded with instead of asking again).
        """
        live = self._live.get(session_id)
        return None if live is None else (live, live.writes)

    def unchanged_since(self, session_id: str, stamp: tuple[object, int]) -> bool:
        """Whether the session's live actor is the same and took no write since ``stamp``."""
        now = self.stamp(session_id)
        return now is not None and now[0] is stamp[0] and now[1] == stamp[1]

    def tell(
        self,
        session_id: str,
        op: Op[SessionActor, P, R],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> bool:
        """Send ``op`` to the session's live actor without waiting (False: none is live).

        For a write whose outcome nobody waits for (a delivery record): one hand-off instead
        of an ask's two. The actor runs it in order with every other request and logs a
        failure; the caller asks instead when this returns False.
        """
        live = self._live.get(session_id)
        if live is None or live.leaving or not live.ref.is_alive():
            return False
        if not op.read_only:
            live.writes += 1
        live.ref.tell(Request(op, args, kwargs))
        return True

    async def _call(
        self,
        session_id: str,
        op: Op[SessionActor, ..., R],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> R:
        """``call``'s one attempt; ``args`` and ``kwargs`` as ``call`` collected them."""
        for attempt in (1, 2):
            live = self._live.get(session_id)
            if live is None or not live.ref.is_alive():
                live = await self._actors.ensure_live(session_id)
            live.last_used = time.monotonic()
            self._live.move_to_end(session_id)
            live.busy += 1
            if not op.read_only:
                live.writes += 1
            try:
                return await self._actors.ask(live.ref, op, *args, **kwargs)
            except FencedWriteError as exc:  # another node owns it: never write here again
                log.warning("session %s: write refused by the lease fence: %s", session_id, exc)
                await self._evictor.drop(session_id)
                raise
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
        return await self.call(session_id, SessionOps.info)

    async def complete(self, session_id: str) -> None:
        """Mark the session completed and unmap its chat (files are kept)."""
        await self.call(session_id, SessionOps.set_status, status=SessionStatus.COMPLETED)
        await self._let_go(session_id)

    async def _let_go(self, session_id: str) -> None:
        """After completing: unmap the session's chats and stop its actor."""
        await self._keep_token_count(session_id)
        await asyncio.to_thread(self.store.chats.remove_session, session_id)
        await self._actors.stop(session_id)

    async def _keep_token_count(self, session_id: str) -> None:
        """Remember a completed chat session's token count for the chat's next session.

        ``tokens_per_chat_per_day`` is the chat's: ``/reset`` or a TTL end must not give it a
        fresh allowance. Kept in memory (a restart between the end and the next message
        forgets it), at most ``TOKEN_COUNTS`` chats.
        """
        try:
            info = await self.call(session_id, SessionOps.info)
        except DuragentError:
            return
        if info.tokens_today and info.gateway and info.gateway_chat_id:
            key = (info.gateway, info.gateway_chat_id, info.agent)
            self._token_counts[key] = (info.tokens_day, info.tokens_today)
            while len(self._token_counts) > TOKEN_COUNTS:
                self._token_counts.popitem(last=False)

    async def delete(self, session_id: str) -> None:
        """Stop the session and delete its folder."""
        self._usable.discard(session_id)
        exists = await asyncio.to_thread(self.store.exists, session_id)
        if not exists and session_id not in self._live:
            raise await asyncio.to_thread(self._actors.missing, session_id)
        if self._shared is not None and session_id not in self._live:
            await asyncio.to_thread(self._shared.own, session_id)  # LeaseHeldError: forwarded
        await self._actors.stop(session_id)
        await asyncio.to_thread(self.store.delete, session_id)

    async def list_sessions(self, *, limit: int = 100) -> list[dict[str, Any]]:
        """Newest sessions first: live ones from their actor, others from snapshot headers.

        Every session on disk is listed; those that cannot be loaded now carry a ``status``
        of ``quarantined`` or ``unavailable`` and a ``reason`` (see ``listing``).
        """
        return await self._listing.sessions(limit)

    async def expire(self, ttl_hours_for: Callable[[str], float | None]) -> list[str]:
        """Complete every session idle longer than its agent's TTL; return their ids.

        ``ttl_hours_for(agent)`` gives the TTL in hours, or None/0 when expiry is disabled.
        The listing picks the candidates; each session's actor decides on its own state
        (``expire_if_idle``: a header may be stale, a turn may have begun since).
        """
        now = utc_now()
        expired: list[str] = []
        for entry in await self.list_sessions(limit=1_000_000):
            if entry["status"] in (SessionStatus.COMPLETED.value, QUARANTINED, UNAVAILABLE):
                continue
            ttl = ttl_hours_for(entry["agent"])
            if not ttl or not idle_past(entry["updated_at"], now, ttl):
                continue
            sid = entry["session_id"]
            try:
                ended = await self.call(sid, SessionOps.expire_if_idle, ttl_hours=ttl)
            except Exception as exc:  # unusable now: the next sweep looks again
                log.info("TTL: session %s not checked: %s", sid, exc)
                continue
            if ended:
                await self._let_go(sid)
                expired.append(sid)
        if expired:
            log.info("expired %d idle session(s)", len(expired))
        return expired

    async def stop(self, session_id: str) -> None:
        """Stop the session's actor if it is running (state stays on disk)."""
        await self._actors.stop(session_id)
