"""How many session actors may run Python at the same moment, and why it is bounded.

Every live session has its own thread, but Python runs one thread at a time (the GIL). With a
thousand actors ready at once they convoy on the GIL, and the event-loop thread — which serves
HTTP and every other front end — waits its turn behind them: measured here, p99 event-loop
stalls of 600–800 ms at 1,000 busy sessions.

The bound is applied on the event loop, before a request is sent: the registry admits a
limited number of asks in flight, by default adaptively between ``DEFAULT_ACTIVE_ASKS`` and
``MAX_ACTIVE_ASKS`` so that few actor threads run Python at once while the others wait on
the disk (``session.admission``), or a fixed number (``RegistrySettings.active_asks``).
The first version gated the actor threads themselves with a semaphore; every message then
cost a thread two sleeps and two wake-ups (inbox, then gate), ~25 context switches per turn.
Waiting on the loop is a parked coroutine instead (measured in ``bench/sessions.py``; see
specs/durable-sessions.md for the numbers).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable

from duragent.cpu import pin_current_thread, restore_current_thread

__all__ = [
    "DEFAULT_ACTIVE_ASKS",
    "GC_THRESHOLDS",
    "MAX_ACTIVE_ASKS",
    "SWITCH_INTERVAL_SECONDS",
    "tune_interpreter",
]

DEFAULT_ACTIVE_ASKS = 8
"""The least the adaptive limit allows (the best fixed limit on this VM's fast disk)."""

MAX_ACTIVE_ASKS = 32
"""The most the adaptive limit allows (a very slow disk must not mean unbounded threads)."""

SWITCH_INTERVAL_SECONDS = 0.001

GC_THRESHOLDS = (20_000, 20, 20)
"""The cyclic collector's thresholds while serving (Python's default is ``(700, 10, 10)``).

A collection stops every thread: young ones are frequent under load (every 700 new
containers; a turn makes thousands), and a full one walks every object of every live
session. Collecting young objects every 20,000 and the rest 20 times less often, with the
objects made at start frozen out of the walk (``gc.freeze``), took a 1,000-chat Discord
benchmark from 461–473 to 520–611 messages/s and its open-loop p99 from 261–265 to
125–149 ms (``bench/discord_gateway.py --quick``). Reference cycles are still collected;
most of what a turn makes is freed by reference counting the moment it is done with.
"""


def tune_interpreter(*, pin_threads: bool = True) -> Callable[[], None]:
    """Tune the process for many session threads; return a function that undoes it.

    - Switch interval 5 ms → 1 ms: the event loop takes the GIL back sooner from a busy actor
      (measured p99 stall 5.3 ms with one busy session at 5 ms; ~3 ms at 1 ms).
    - ``pin_threads``: the calling thread (the event loop's, before it starts any actor) is
      pinned to one CPU, and so every actor thread it starts (see ``duragent.cpu``).
    - The cyclic garbage collector runs less often (``GC_THRESHOLDS``), and what the process
      made to start (modules, agents, config) is frozen out of its walks.
    """
    previous = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    pinned = pin_current_thread() if pin_threads else None

    def undo() -> None:
        sys.setswitchinterval(previous)
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        if pinned is not None:
            restore_current_thread()

    return undo
