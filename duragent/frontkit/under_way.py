"""``UnderWay``: a gateway's calls to its platform in flight, so a graceful stop never cuts one.

Closing an HTTP client cuts every request on its connections ("Server disconnected"), and
the platform may have taken a cut send already: the message is in the chat, but its
delivery is never recorded, so the next process life sends it again (the month of strangers
saw exactly that across a graceful stop). A gateway's stop therefore first refuses new calls
(``stopping``), then lets the calls under way end (``ended``, bounded: each also ends at its
own read timeout), and only then closes its client. A call refused there was never sent; the
next life's recovery sends what is owed, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

__all__ = ["CLOSE_GRACE_SECONDS", "UnderWay"]

log = logging.getLogger(__name__)

CLOSE_GRACE_SECONDS = 10.0
"""How long a stop waits for the calls under way before it closes the client anyway."""


class UnderWay:
    """Counts a client's calls in flight; ``ended`` waits for none (see module docstring)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._count = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.stopping = False
        """Set by ``ended``: the client is closing, and a new call must not start."""

    def __len__(self) -> int:
        return self._count

    @contextlib.contextmanager
    def one(self) -> Iterator[None]:
        """Count the call in the ``with`` block as under way until it ends, however."""
        self._count += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._count -= 1
            if not self._count:
                self._idle.set()

    async def ended(self, grace: float = CLOSE_GRACE_SECONDS) -> int:
        """Refuse new calls, wait up to ``grace`` for those under way; how many still are."""
        self.stopping = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), grace)
        if self._count:
            log.warning(
                "%s: %d call(s) still under way after %.0fs; closing anyway",
                self._name,
                self._count,
                grace,
            )
        return self._count
