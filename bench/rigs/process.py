"""What a child process has used, read from Linux's ``/proc``: CPU seconds and memory."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cpu_seconds", "rss_mb", "run_seconds"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process has used (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_seconds(pid: int) -> float:
    """CPU seconds the process's threads have run, to the nanosecond (``schedstat``).

    ``cpu_seconds`` counts in clock ticks (10 ms): too coarse for one turn of a few ms. A
    thread that ended takes its time with it; a server's threads (its event loop, worker pool,
    session actors) live as long as it does.
    """
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended between the listing and the read
    return total / 1e9


def rss_mb(pid: int) -> tuple[float, float]:
    """The process's resident memory now and at its peak (VmRSS, VmHWM), in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024
