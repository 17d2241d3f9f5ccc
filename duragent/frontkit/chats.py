"""One chat gateway's kit, assembled: what every platform adapter hands its messages to.

An adapter (Telegram, Discord, an external gateway) translates its platform's updates into
``InboundMessage`` and ``ButtonPress``; everything after that is the same for all of them and
is built here once the bot is known: ``ChatTurns`` over the adapter's outbound port (turn +
delivery + "typing…"), the per-session queues, the ``ChatFront`` pipeline over the router, and
the recovery of what a crash left, which the adapter runs before it takes the first message.

Each message and button press is claimed in the workspace's inbound ledger (``Cluster``)
before it is handled, by (gateway, chat, platform id): delivered to two nodes (a webhook
retried through a load balancer, a Discord message every connected node receives), it is
handled by one and recognised as a duplicate by the other, which answers nothing.

Recovery needs to know whether a chat is a group (its queue rules and the group context
block): each platform says so its own way (Telegram by the id's sign, Discord from its
channel cache); a platform that cannot (an external gateway) resumes a chat with a DM's
rules, and new messages, which carry their chat type, get the full rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from duragent.agents import AgentCatalog
from duragent.agents.roles import access_of
from duragent.agents.spec import ContextBufferSpec, QueueSpec
from duragent.cluster import run_as_leader
from duragent.errors import NotFoundError
from duragent.frontkit.access import GROUP_CHAT_TYPES, mention_context
from duragent.frontkit.chat import TYPING_EVERY_SECONDS, ChatTurns
from duragent.frontkit.gateway import ChatFront
from duragent.frontkit.inbound import ButtonPress, InboundMessage
from duragent.frontkit.media import MediaSettings, MediaSource
from duragent.frontkit.media_intake import MediaIntake
from duragent.frontkit.outbound import OutboundPort, metered
from duragent.frontkit.owners import (
    EXTRA_SECONDS,
    InboundBusyError,
    LeftToOwnerError,
    defer_to_owner,
    serve_at_owner,
    until_owner_takes,
)
from duragent.frontkit.queue import SessionQueues
from duragent.frontkit.recovery import RecoveryReport, recover_chats
from duragent.frontkit.relayed import ChatRelay, Relayed
from duragent.frontkit.routing import Router
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.store.cluster import INBOUND_HOLD_LEASES, Cluster, local_cluster
from duragent.store.cluster_protocols import ClaimOutcome
from duragent.turns import TurnRunner

__all__ = ["ChatHandler", "GatewayChats", "InboundBusyError", "gateway_chats"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

BUSY_POLL_SECONDS = 0.25


class ChatHandler(Protocol):
    """What a platform adapter hands translated updates to (``GatewayChats``)."""

    async def message(self, msg: InboundMessage) -> None:
        """Route, check and record ``msg``; return once it is on disk or dropped."""
        ...

    async def press(self, press: ButtonPress) -> None:
        """Act on a button press."""
        ...

    async def recover(self) -> None:
        """Finish what a crash left unfinished (run before the first update is taken)."""
        ...

    async def close(self) -> None:
        """Stop what ``recover`` left running (the gateway stops)."""
        ...


@dataclass(frozen=True, slots=True)
class GatewayChats:
    """One gateway's chat front, and its recovery before it takes messages.

    See the module docstring.
    """

    gateway: str
    front: ChatFront
    queues: SessionQueues
    chat: ChatTurns
    catalog: Callable[[], AgentCatalog]
    is_group: Callable[[str], bool] | None = None
    """Whether a chat id is a group's (for recovery); None: the platform cannot tell."""
    cluster: Cluster = field(default_factory=local_cluster)
    """Its ``inbound`` ledger takes each platform message once across nodes."""
    fans_out: bool = False
    """Every node receives every message (Discord): the chat's owner takes it (``owners``)."""
    relay: ChatRelay | None = None
    """Several nodes, each message reaching one: handed to the chat's owner (``relayed``)."""
    _sweepers: list[asyncio.Task[None]] = field(default_factory=list)
    _unlisten: list[Callable[[], None]] = field(default_factory=list)
    _recovering: set[str] = field(default_factory=set)
    """Sessions a recovery of this gateway is finishing now (one at a time each)."""

    async def message(self, msg: InboundMessage) -> None:
        """Route, check and record ``msg`` (``ChatFront.message``), once across nodes."""
        if msg.edited:  # the edited message's id: not a new message (no platform sends one)
            if self.relay is None:
                await self.front.message(msg)
            else:
                await self.relay.serve(msg, lambda: self.front.message(msg))
            return
        key = (msg.gateway, msg.chat_id, msg.message_id)
        handle = await self._owner_first(msg, lambda: self.front.message(msg))
        if await self._once(key, handle):
            return
        # debug: with Discord every node receives every message, so this is the common case
        log.debug("%s message %s was taken in already; not answered again", msg.chat.target, key[2])

    async def press(self, press: ButtonPress) -> None:
        """Act on a button press (``ChatFront.press``), once across nodes."""
        key = (press.gateway, press.chat_id, f"press:{press.callback_id}")
        handle = await self._owner_first(press, lambda: self.front.press(press))
        if not await self._once(key, handle):
            log.debug("%s button press %s was handled already", press.chat.target, key[2])

    async def _owner_first(
        self, value: Relayed, handle: Callable[[], Awaitable[None]]
    ) -> Callable[[], Awaitable[None]]:
        """``handle`` where the chat's session lives.

        A platform that fans out: after the chat's owner had its turn to claim first
        (``owners``). One that hands each message to one node: at the owner (``relayed``).
        """
        if not self.fans_out:
            relay = self.relay
            if relay is None:
                return handle
            return lambda: relay.serve(value, handle)
        # after the wait the owner did not take it: taken over. Without one, the session may
        # still have been claimed a moment ago by a node that has its own copy: waited out too
        await defer_to_owner(self.cluster, value.gateway, value.chat_id)
        lease = self.cluster.leaders.seconds

        return lambda: serve_at_owner(value, handle, lease)

    async def _once(self, key: tuple[str, str, str], handle: Callable[[], Awaitable[None]]) -> bool:
        """Run ``handle`` if this node is first to claim ``key``; False: a duplicate.

        Raises ``InboundBusyError`` when another node is recording it right now (on a platform
        that fans out, once that node held it for its whole hold: ``_while_busy``). The claim is
        settled once ``handle`` returned (the message is on disk or deliberately dropped) and
        released if it raised, so a redelivery is taken at once.
        """
        outcome = await self._ledger(self.cluster.inbound.claim, key)
        if outcome == "busy" and self.fans_out:
            outcome = await self._while_busy(key)
        if outcome == "duplicate":
            return False
        if outcome == "busy":
            raise InboundBusyError(
                f"{key[0]}:{key[1]} message {key[2]} is being taken in by another node"
            )
        try:
            await handle()
        except LeftToOwnerError as left:  # watched until the owner took it or died
            with contextlib.suppress(Exception):
                await self._ledger(self.cluster.inbound.release, key)
            window = INBOUND_HOLD_LEASES * self.cluster.leaders.seconds + EXTRA_SECONDS
            claim, release = self.cluster.inbound.claim, self.cluster.inbound.release
            if not await until_owner_takes(
                lambda: self._ledger(claim, key), lambda: self._ledger(release, key),
                left.handle, window,
            ):  # fmt: skip
                return False
        except BaseException:
            with contextlib.suppress(Exception):
                await self._ledger(self.cluster.inbound.release, key)
            raise
        await self._ledger(self.cluster.inbound.settle, key)
        return True

    async def _while_busy(self, key: tuple[str, str, str]) -> ClaimOutcome:
        """Claim ``key`` again until the node taking it in settles or lets go of it.

        A platform that fans out delivers a message once to each node and never again: a
        node that met another's claim and gave up would lose the message whenever that node
        then failed to take it in (it met a lease this node holds, say). The claim is held at
        most ``INBOUND_HOLD_LEASES`` leases, so the wait ends.
        """
        hold = INBOUND_HOLD_LEASES * self.cluster.leaders.seconds
        deadline = time.monotonic() + hold + EXTRA_SECONDS
        outcome: ClaimOutcome = "busy"
        while outcome == "busy" and time.monotonic() < deadline:
            await asyncio.sleep(BUSY_POLL_SECONDS)
            outcome = await self._ledger(self.cluster.inbound.claim, key)
        return outcome

    async def _ledger(self, call: Callable[[str, str, str], _T], key: tuple[str, str, str]) -> _T:
        """``call(*key)``: in a thread when it asks a database, inline for this process's memory."""
        if self.cluster.shared:
            return await asyncio.to_thread(call, *key)
        return call(*key)

    async def recover(self) -> None:
        """Deliver, ask again and answer what a crash left (``recover_chats``).

        With several nodes: at start, only the chats no live node serves (free leases, this
        node's own, expired ones); then, on the holder of the ``recovery:<gateway>`` leader
        lease, every lease period, the chats whose node died since (``_sweep_forever``); and
        at once, on this node, a chat whose session this node took over from a dead node
        before any sweep saw it (``store.takeovers``: a sweep looks at expired leases only).
        """
        orphans = self.cluster.orphans
        if orphans is None:
            await self._recover_chats(None)
            return
        loop = asyncio.get_running_loop()

        def taken_over(session_id: str) -> None:  # on the claiming actor's thread
            loop.call_soon_threadsafe(self._taken_over, session_id)

        self._unlisten.append(self.cluster.takeovers.listen(taken_over))
        node = self.cluster.leaders.node_id
        await self._recover_chats(
            await asyncio.to_thread(lambda: orphans.chats(self.gateway, owned_by=node))
        )
        leading = run_as_leader(
            self.cluster.leaders, f"recovery:{self.gateway}", self._sweep_forever
        )
        self._sweepers.append(asyncio.create_task(leading, name=f"{self.gateway}-recovery"))

    async def _recover_chats(self, chats: list[tuple[str, str]] | None) -> RecoveryReport:
        """``recover_chats`` for ``chats``, but those a recovery here is finishing already."""
        if chats is None:  # one node: its start's recovery is the only one
            return await self._recover_now(None)
        chats = [(chat, sid) for chat, sid in chats if sid not in self._recovering]
        mine = {sid for _, sid in chats}
        self._recovering.update(mine)  # loading them takes them over: nothing more to do
        try:
            return await self._recover_now(chats)
        finally:
            self._recovering.difference_update(mine)

    async def _recover_now(self, chats: list[tuple[str, str]] | None) -> RecoveryReport:
        return await recover_chats(
            self.gateway,
            self.chat.turns.sessions,
            self.chat.delivery,
            self.queues,
            settings=self._rules,
            chats=chats,
        )

    def _taken_over(self, session_id: str) -> None:
        """This node took ``session_id`` from a dead node: finish it if it is our chat's."""
        if session_id in self._recovering:
            return
        self._recovering.add(session_id)
        self.queues.tasks.spawn(
            self._finish_taken(session_id), name=f"{self.gateway}-taken-over-{session_id}"
        )

    async def _finish_taken(self, session_id: str) -> None:
        try:
            info = await self.chat.turns.sessions.info(session_id)
            chat_id = info.gateway_chat_id
            if info.gateway != self.gateway or chat_id is None:
                return  # another gateway's, or no chat's (HTTP): its own front finishes it
            log.info(
                "%s: session %s was taken over from a stopped node; finishing what it left",
                self.gateway,
                session_id,
            )
            await self._recover_now([(chat_id, session_id)])
        except Exception as exc:  # the sweep tries again once the lease runs out
            log.warning("%s: finishing session %s failed: %s", self.gateway, session_id, exc)
        finally:
            self._recovering.discard(session_id)

    async def _sweep_forever(self) -> None:
        """Finish the chats of sessions whose node died (their leases expired), then free them."""
        orphans = self.cluster.orphans
        assert orphans is not None
        while True:
            await asyncio.sleep(self.cluster.leaders.seconds)
            try:
                chats = await asyncio.to_thread(orphans.chats, self.gateway)
                if chats:
                    log.info(
                        "%s: finishing %d chat(s) a stopped node left", self.gateway, len(chats)
                    )
                    report = await self._recover_chats(chats)
                    done = [sid for _, sid in chats if sid not in report.failed_sessions]
                    await asyncio.to_thread(orphans.adopt, done)  # the failed: next period
            except OSError as exc:  # StorageError: the database is away; next period
                log.warning(
                    "%s: looking for chats a stopped node left failed: %s", self.gateway, exc
                )

    async def close(self) -> None:
        """Stop the sweep for chats other nodes left (the gateway stops)."""
        unlisten, self._unlisten[:] = list(self._unlisten), []
        for stop in unlisten:
            stop()
        sweepers, self._sweepers[:] = list(self._sweepers), []
        for task in sweepers:
            task.cancel()
        await asyncio.gather(*sweepers, return_exceptions=True)

    def bot_named(self, username: str) -> None:
        """The bot's name on the platform is known (``/reset@<name>`` is then a command)."""
        self.front.bot_username = username

    def _rules(
        self, agent_name: str, chat_id: str, chat_type: str | None
    ) -> tuple[QueueSpec, ContextBufferSpec | None]:
        """The queue and group context a chat's messages would have had through ``ChatFront``.

        A group is what the platform said when the session began (``chat_type``); for a
        session older than that record, what the chat id tells, where it tells anything.
        """
        try:
            access = self.catalog().get(agent_name).spec.access
        except NotFoundError:
            return QueueSpec(), None
        if chat_type is not None:
            group = chat_type in GROUP_CHAT_TYPES
        else:
            group = self.is_group is not None and self.is_group(chat_id)
        if not group:
            return QueueSpec(), None
        groups = access_of(access).groups  # no access block: the defaults, as ChatFront
        return groups.queue, mention_context(groups)


def gateway_chats(
    gateway: str,
    outbound: OutboundPort,
    turns: TurnRunner,
    tasks: BackgroundTasks,
    *,
    router: Router,
    catalog: Callable[[], AgentCatalog],
    bot_username: str | None = None,
    request_timeout: float | None = None,
    typing_every: float = TYPING_EVERY_SECONDS,
    is_group: Callable[[str], bool] | None = None,
    cluster: Cluster | None = None,
    fans_out: bool = False,
    relay: ChatRelay | None = None,
    media: MediaSource | None = None,
    media_settings: MediaSettings | None = None,
) -> GatewayChats:
    """The kit for ``gateway`` over ``outbound`` (its adapter calls this once the bot is known).

    ``request_timeout``: how long a turn may run before the queue gives up on it;
    ``typing_every``: how often "typing…" is renewed (the platform shows it for a while);
    ``cluster``: what the nodes of the workspace share (None: this process alone);
    ``fans_out``: every node receives every message (Discord), so the chat's owner takes it;
    ``relay``: with several nodes, a message for a chat another node serves is handed to that
    node (not with ``fans_out``: the owner receives its own copy), and messages other nodes
    hand here go through this gateway's pipeline; ``media``: how the platform's files are
    downloaded (None: a message's files are not taken in, its caption is), taken in by
    ``media_settings`` (limits, transcription).
    """
    outbound = metered(outbound, gateway, turns.metrics)
    cluster = cluster or local_cluster()
    chat = ChatTurns(turns, outbound, tasks, typing_every=typing_every, previews=cluster.previews)
    queues = SessionQueues(turns, chat, outbound, tasks, turn_timeout=request_timeout)
    if turns.metrics is not None:
        turns.metrics.chat_queue(gateway, queues.pending)
    log.info("%s: %s", gateway, router.startup_note())
    intake = None if media is None else MediaIntake(turns, outbound, media, media_settings)
    front = ChatFront(chat, router, catalog, queues, bot_username=bot_username, media=intake)
    if relay is not None:
        relay.register(gateway, front)
    return GatewayChats(
        gateway,
        front,
        queues,
        chat,
        catalog,
        is_group,
        cluster,
        fans_out,
        None if fans_out else relay,
    )
