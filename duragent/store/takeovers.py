"""``TakeOvers``: the sessions this node took from a node that stopped serving them.

A node that dies (or is cut off from the database) leaves its sessions' leases to run out.
Whatever it was doing in them (a reply not delivered, an approved call whose turn never went
on, a message never answered) is finished by whoever serves the session next. The sweep for
chats a dead node left (``OrphanedChats``) finds the ones nobody touched; but a session can
be *taken over* first, by anything that needs it (a message or a button press handed on by
the relay, a forwarded HTTP call, a scheduled run). That node then holds a live lease no
sweep looks at, so it must finish the session itself: the store tells it here, from the
claim that took the session (``Lease.taken_over``), and the chat gateways listen.

Listeners run on the thread that claimed the session (an actor's): they must only hand the
work to their own loop, never block or raise.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["TakeOvers"]

log = logging.getLogger(__name__)

Listener = Callable[[str], None]


class TakeOvers:
    """Who to tell when this node took a session over (see module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(session_id)`` for every take-over from now on; returns the undo."""
        with self._lock:
            self._listeners.append(listener)

        def stop() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return stop

    def taken_over(self, session_id: str) -> None:
        """This node took ``session_id`` from a node whose lease had run out."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(session_id)
            except Exception:  # one listener's bug must not fail the claim (or the others)
                log.exception("a listener for session %s taken over failed", session_id)
