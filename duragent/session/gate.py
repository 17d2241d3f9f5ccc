"""How many session actors may run Python at the same moment, and why it is bounded.

Every live session has its own thread, but Python runs one thread at a time (the GIL). With a
thousand actors ready at once they convoy on the GIL, and the event-loop thread — which serves
HTTP and every other front end — waits its turn behind them: measured here, p99 event-loop
stalls of 600–800 ms at 1,000 busy sessions.

The bound is applied on the event loop, before a request is sent: the registry admits at most
``DEFAULT_ACTIVE_ASKS`` asks in flight (``RegistrySettings.active_asks``), so at most that many
actor threads are runnable. The first version gated the actor threads themselves with a
semaphore; every message then cost a thread two sleeps and two wake-ups (inbox, then gate),
~25 context switches per turn. Waiting on the loop is a parked coroutine instead (measured in
``bench/sessions.py``; see specs/durable-sessions.md for the numbers).
"""

from __future__ import annotations

import sys

__all__ = ["DEFAULT_ACTIVE_ASKS", "SWITCH_INTERVAL_SECONDS", "tune_interpreter"]

DEFAULT_ACTIVE_ASKS = 4

SWITCH_INTERVAL_SECONDS = 0.001


def tune_interpreter() -> None:
    """Let the event loop take the GIL back sooner from a busy actor (5 ms → 1 ms).

    A server process calls this once; with CPython's default 5 ms switch interval an actor
    doing Python work delays the event loop by up to 5 ms (measured p99 stall 5.3 ms with one
    busy session; ~3 ms at 1 ms).
    """
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
