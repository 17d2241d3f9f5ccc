"""The listening socket: at most one failed ``accept()`` per back-off, not thousands.

When the process runs out of descriptors, asyncio's accept loop (CPython 3.11
``selector_events._accept_connection``) logs the EMFILE with a traceback, unregisters the
socket and schedules a retry in 1 s, but then *keeps looping* up to ``backlog`` (2048) times
in the same call, logging and scheduling a retry each time: thousands of tracebacks a second,
and as many retries piling up. This socket answers that loop's further ``accept()`` calls with
"would block" for a little under the retry delay, so each retry costs one failed accept and
one log record; and it tells :class:`ServerHealth` so ``/readyz`` says not ready.
"""

from __future__ import annotations

import errno
import socket
import time
from typing import Any

from duragent.gateways.http.health import ServerHealth

__all__ = ["GuardedListener"]

_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_QUIET_SECONDS = 0.9
"""A little under asyncio's ACCEPT_RETRY_DELAY (1 s), so its retry does try again."""


class GuardedListener(socket.socket):
    """A listening socket that backs off after running out of resources (see module doc)."""

    health: ServerHealth | None = None
    _quiet_until = 0.0

    def accept(self) -> tuple[socket.socket, Any]:
        """``socket.accept``, but "would block" for a while after an out-of-resources error."""
        now = time.monotonic()
        if now < self._quiet_until:
            raise BlockingIOError(errno.EAGAIN, "backing off: out of resources to accept")
        try:
            return super().accept()
        except OSError as exc:
            if exc.errno in _OUT_OF_RESOURCES:
                self._quiet_until = now + _QUIET_SECONDS
                if self.health is not None:
                    self.health.accept_failed(exc)
            raise
