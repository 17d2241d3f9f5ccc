"""Keeping the runtime's Python threads on one CPU, and letting child processes go free.

Python runs one thread at a time (the GIL), so a duragent server never runs Python on two
cores at once; yet with its threads spread over two cores every hand-over between the event
loop and a session actor is a cross-core wake-up (an inter-processor interrupt, ~30–50 µs on a
VM) and the GIL ping-pongs between caches. Measured with ``bench/components/sessions.py`` on
this 2-core VM, 1,000 busy sessions: CPU per durable turn 550–620 µs spread → ~310 µs on one core,
throughput ~2,000/s → ~2,500–3,000/s. The kernel's own work for us (journal commits, disk
interrupts) still runs on the other cores.

Affinity is per thread on Linux and inherited by new threads *and child processes*, so
``widened()`` is used around spawning a program (a tool's ``make -j8`` must get every core).
Only the calling thread is pinned; it must be the thread that will create the others (the
event loop's), before it creates them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["current_cpu", "pin_current_thread", "restore_current_thread", "widened"]

_wide: set[int] | None = None  # the mask before pinning (what children should get)
_narrow: set[int] | None = None  # the one CPU the runtime's threads are pinned to


def _supported() -> bool:
    return hasattr(os, "sched_getaffinity") and hasattr(os, "sched_setaffinity")


def current_cpu() -> int | None:
    """The CPU the calling thread last ran on (Linux ``/proc``), or None if unknown."""
    try:
        stat = Path("/proc/thread-self/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[36])  # field 39: "processor"
    except (OSError, ValueError, IndexError):
        return None


def pin_current_thread() -> int | None:
    """Pin the calling thread to one CPU it may use; return it (None: left as it was).

    Nothing happens with fewer than two usable CPUs or where affinity is not supported. The
    CPU is the one the thread is running on, so several servers on one machine spread out
    the way the scheduler placed them.
    """
    global _wide, _narrow
    if not _supported():
        return None
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        return None
    here = current_cpu()
    cpu = here if here in allowed else min(allowed)
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:
        return None
    _wide, _narrow = set(allowed), {cpu}
    return cpu


def restore_current_thread() -> None:
    """Undo ``pin_current_thread`` for the calling thread (threads it created stay pinned)."""
    global _wide, _narrow
    if _wide is not None and _supported():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, _wide)
    _wide = _narrow = None


@contextlib.contextmanager
def widened() -> Iterator[None]:
    """Within this block the calling thread may use every CPU it had before pinning.

    Wrap the spawning of a child process in it: the child inherits the wide mask. On exit
    the thread goes back to the pinned CPU (not to "whatever it was", which an overlapping
    use could have left wide).
    """
    wide = _wide
    if wide is None or not _supported():
        yield
        return
    with contextlib.suppress(OSError):
        os.sched_setaffinity(0, wide)
    try:
        yield
    finally:
        narrow = _narrow
        if narrow is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, narrow)
