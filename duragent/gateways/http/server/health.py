"""What ``/readyz`` reports: ready means a new request would be taken and served now.

Ready requires both:

- **accepting**: the listening socket has not failed to accept a connection (out of file
  descriptors or memory: EMFILE, ENFILE, ENOBUFS, ENOMEM) in the last
  ``ACCEPT_TROUBLE_SECONDS``; while it fails, connections wait in the kernel's queue;
- **room for a connection**: no connection has had to wait in the listen queue because the
  connection cap was reached (``listener.py``) in the last ``ACCEPT_TROUBLE_SECONDS``;
- **a free slot**: fewer than ``server.max_connections`` API requests are being served
  (one more would wait for a slot rather than start).

A probe that gets an answer was itself accepted, so "connections are open up to the cap" says
nothing by itself; what matters is whether others were left waiting, recently.

A probe that cannot connect at all (every descriptor in use) sees a connect error or timeout,
which probes already treat as not ready. ``/livez`` says only that the process answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["ACCEPT_TROUBLE_SECONDS", "ServerHealth"]

ACCEPT_TROUBLE_SECONDS = 5.0


class ServerHealth:
    """Shared by the listener, the concurrency limit and ``/readyz`` (one event loop)."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.busy = 0
        self._accept_failed_at: float | None = None
        self._accept_error = ""
        self._full_at: float | None = None
        self._cap = 0
        self.clock: Callable[[], float] = time.monotonic

    def accept_failed(self, exc: OSError) -> None:
        """Record that ``accept()`` failed for lack of resources."""
        self._accept_failed_at = self.clock()
        self._accept_error = exc.strerror or str(exc)

    def connections_full(self, cap: int) -> None:
        """Record that a connection waits to be accepted because ``cap`` are open."""
        self._full_at = self.clock()
        self._cap = cap

    def not_ready_reason(self) -> str | None:
        """Why the server is not ready, or None when it is."""
        failed = self._accept_failed_at
        if failed is not None and self.clock() - failed < ACCEPT_TROUBLE_SECONDS:
            return f"cannot accept new connections: {self._accept_error}"
        full = self._full_at
        if full is not None and self.clock() - full < ACCEPT_TROUBLE_SECONDS:
            return (
                f"all {self._cap} connections the open-file limit allows are open; "
                "new connections wait to be accepted"
            )
        if self.busy >= self.slots:
            return f"all {self.slots} request slots are in use (server.max_connections)"
        return None
