"""The websocket half of ``FakeDiscord``: Discord's gateway protocol, for discord.py.

HELLO on connect; heartbeat → ACK; IDENTIFY → refused with a close code when ``refusal``
says so (4004 wrong token, 4014 a privileged intent not granted), else READY and the events
``greeting`` lists (the guild); RESUME of a session this server started → RESUMED (nothing is
replayed), of any other → INVALID_SESSION (discord.py then identifies again). ``dispatch``
sends an event to every identified connection, with Discord's sequence numbers.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from aiohttp import WSMsgType, web

__all__ = ["GatewaySessions"]

HEARTBEAT_MS = 41_250
Refusal = Callable[[dict[str, Any]], tuple[int, str] | None]
"""An IDENTIFY payload → the close code and reason it is refused with, or None."""
Greeting = Callable[[str], tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]]
"""A new session id → READY's payload and the events that follow it."""


class GatewaySessions:
    """Every gateway connection of one fake Discord (see module docstring)."""

    def __init__(self, token: Callable[[], str], refusal: Refusal, greeting: Greeting) -> None:
        self._token = token
        self._refusal = refusal
        self._greeting = greeting
        self._open: set[web.WebSocketResponse] = set()
        self._session_ids: set[str] = set()
        self._seq = 0
        self.identified: list[dict[str, Any]] = []
        """Every IDENTIFY's payload (token, intents…), in order."""
        self.resumed = 0
        """Sessions resumed after a dropped connection."""

    @property
    def connected(self) -> int:
        """Connections that identified (or resumed) and are open."""
        return sum(1 for ws in self._open if not ws.closed)

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send ``event`` to every identified connection."""
        for ws in list(self._open):
            self._seq += 1
            with contextlib.suppress(ConnectionError, RuntimeError):
                await ws.send_str(json.dumps({"op": 0, "t": event, "s": self._seq, "d": data}))

    async def close_all(self, code: int = 1001) -> None:
        """Close every connection with ``code`` (discord.py reconnects unless it is fatal)."""
        for ws in list(self._open):
            with contextlib.suppress(Exception):
                await ws.close(code=code)

    async def serve(self, request: web.Request) -> web.WebSocketResponse:
        """One connection, from HELLO until either side closes it."""
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
                    await self._identify(ws, payload["d"])
                elif op == 6:
                    await self._resume(ws, payload["d"])
        finally:
            self._open.discard(ws)
        return ws

    async def _send(self, ws: web.WebSocketResponse, event: str, data: dict[str, Any]) -> None:
        self._seq += 1
        await ws.send_json({"op": 0, "t": event, "s": self._seq, "d": data})

    async def _identify(self, ws: web.WebSocketResponse, identify: dict[str, Any]) -> None:
        self.identified.append(identify)
        refused = self._refusal(identify)
        if refused is not None:
            await ws.close(code=refused[0], message=refused[1].encode())
            return
        self._open.add(ws)
        session_id = f"session-{len(self._session_ids) + 1}"
        self._session_ids.add(session_id)
        ready, then = self._greeting(session_id)
        await self._send(ws, "READY", ready)
        for event, data in then:
            await self._send(ws, event, data)

    async def _resume(self, ws: web.WebSocketResponse, resume: dict[str, Any]) -> None:
        if (
            resume.get("token") != self._token()
            or resume.get("session_id") not in self._session_ids
        ):
            await ws.send_json({"op": 9, "d": False})
            return
        self.resumed += 1
        self._open.add(ws)
        await self._send(ws, "RESUMED", {})
