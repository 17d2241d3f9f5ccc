"""The websocket half of ``FakeDiscord``: Discord's gateway protocol, for discord.py.

HELLO on connect; heartbeat → ACK; IDENTIFY → refused with a close code when ``refusal``
says so (4004 wrong token, 4014 a privileged intent not granted), else a new session: READY
and the events ``greeting`` lists (the guild). ``dispatch`` sends an event to every session,
with the session's own sequence numbers.

A session outlives its connection for ``RESUME_SECONDS``, as on Discord: the events
dispatched meanwhile are kept (the last ``REPLAY_KEEP``), and a RESUME of it with the last
sequence number its client saw replays every event after that one, in order, then RESUMED.
So a bot whose connection dropped (discord.py closes a connection whose heartbeats go
unacknowledged, as on a starved event loop) misses nothing, as on Discord. A RESUME of an
unknown or expired session, or one that missed more than was kept, is INVALID_SESSION
(discord.py then identifies again and what was missed is lost, as on Discord).

A connection at ``/n/{node}/gateway`` is node ``{node}``'s (``_fake_nodes``; ``a`` at
``/gateway``): its session keeps the node, READY's ``resume_gateway_url`` carries the prefix
(``greeting`` is given the node), and ``connected_nodes`` says which nodes hold a connection,
so a cluster test sees which serve process has the bot online.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from duragent.testing._fake_nodes import DEFAULT_NODE, node_of

__all__ = ["GatewaySessions"]

HEARTBEAT_MS = 41_250
RESUME_SECONDS = 120.0
"""How long a session whose connection dropped can still be resumed."""
REPLAY_KEEP = 2_000
"""Events kept per session for a RESUME."""
Refusal = Callable[[dict[str, Any]], tuple[int, str] | None]
"""An IDENTIFY payload → the close code and reason it is refused with, or None."""
Greeting = Callable[[str, str], tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]]
"""A new session id and its node → READY's payload and the events that follow it."""


@dataclass
class _GatewaySession:
    """One identified session: its sequence, its recent events, its connection if any."""

    session_id: str
    seq: int = 0
    kept: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=REPLAY_KEEP))
    ws: web.WebSocketResponse | None = None
    dropped_at: float | None = None
    """``time.monotonic()`` when its connection closed (None: connected)."""
    node: str = DEFAULT_NODE
    """The node of its latest connection (the one that identified, or resumed it since)."""

    def frame(self, event: str, data: dict[str, Any]) -> str:
        """The next dispatch frame of this session, kept for a RESUME."""
        self.seq += 1
        text = json.dumps({"op": 0, "t": event, "s": self.seq, "d": data})
        self.kept.append((self.seq, text))
        return text

    def expired(self, now: float) -> bool:
        return self.dropped_at is not None and now - self.dropped_at > RESUME_SECONDS


class GatewaySessions:
    """Every gateway connection of one fake Discord (see module docstring)."""

    def __init__(self, token: Callable[[], str], refusal: Refusal, greeting: Greeting) -> None:
        self._token = token
        self._refusal = refusal
        self._greeting = greeting
        self._open: dict[web.WebSocketResponse, str] = {}
        """Connections that identified or resumed, and the node of each."""
        self._sessions: dict[str, _GatewaySession] = {}
        self._made = 0
        self.identified: list[dict[str, Any]] = []
        """Every IDENTIFY's payload (token, intents…), in order."""
        self.resumed = 0
        """Sessions resumed after a dropped connection."""
        self.replayed = 0
        """Events sent again to a resumed session."""

    @property
    def connected(self) -> int:
        """Connections that identified (or resumed) and are open."""
        return sum(1 for ws in self._open if not ws.closed)

    def connected_nodes(self) -> list[str]:
        """The node of each connection ``connected`` counts (one entry per connection)."""
        return [node for ws, node in list(self._open.items()) if not ws.closed]

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send ``event`` to every session (kept for a RESUME while one is disconnected)."""
        now = time.monotonic()
        for session in list(self._sessions.values()):
            if session.expired(now):
                del self._sessions[session.session_id]
                continue
            text = session.frame(event, data)
            ws = session.ws
            if ws is not None and not ws.closed:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await ws.send_str(text)

    async def close_all(self, code: int = 1001) -> None:
        """Close every connection with ``code`` (discord.py reconnects unless it is fatal)."""
        for ws in list(self._open):
            with contextlib.suppress(Exception):
                await ws.close(code=code)

    async def serve(self, request: web.Request) -> web.WebSocketResponse:
        """One connection, from HELLO until either side closes it."""
        node = node_of(request)
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": HEARTBEAT_MS}, "s": None})
        try:
            async for frame in ws:
                if frame.type != WSMsgType.TEXT:
                    continue
                payload = json.loads(frame.data)
                op = payload.get("op")
                if op == 1:
                    await ws.send_json({"op": 11, "d": None})
                elif op == 2:
                    await self._identify(ws, payload["d"], node)
                elif op == 6:
                    await self._resume(ws, payload["d"], node)
        finally:
            self._open.pop(ws, None)
            for session in self._sessions.values():
                if session.ws is ws:
                    session.ws, session.dropped_at = None, time.monotonic()
        return ws

    async def _identify(
        self, ws: web.WebSocketResponse, identify: dict[str, Any], node: str
    ) -> None:
        self.identified.append(identify)
        refused = self._refusal(identify)
        if refused is not None:
            await ws.close(code=refused[0], message=refused[1].encode())
            return
        self._made += 1
        session = _GatewaySession(f"session-{self._made}", ws=ws, node=node)
        self._sessions[session.session_id] = session
        self._open[ws] = node
        ready, then = self._greeting(session.session_id, node)
        await ws.send_str(session.frame("READY", ready))
        for event, data in then:
            await ws.send_str(session.frame(event, data))

    async def _resume(self, ws: web.WebSocketResponse, resume: dict[str, Any], node: str) -> None:
        session = self._sessions.get(str(resume.get("session_id")))
        seen = resume.get("seq")
        if (
            resume.get("token") != self._token()
            or session is None
            or session.expired(time.monotonic())
            or not isinstance(seen, int)
            or (session.kept and session.kept[0][0] > seen + 1)  # missed more than was kept
        ):
            await ws.send_json({"op": 9, "d": False})
            return
        old = session.ws
        session.ws, session.dropped_at, session.node = ws, None, node
        if old is not None and old is not ws:  # a connection it left half-open is done
            self._open.pop(old, None)
            with contextlib.suppress(Exception):
                await old.close(code=4000)
        self.resumed += 1
        self._open[ws] = node
        missed = [text for seq, text in session.kept if seq > seen]
        self.replayed += len(missed)
        for text in missed:
            await ws.send_str(text)
        await ws.send_str(session.frame("RESUMED", {}))
