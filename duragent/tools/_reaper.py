"""Tool processes die with the server, however the server dies (SIGKILL and OOM included).

Every tool process runs as the leader of its own process group, so the whole tree it starts
can be killed as one (``_process``). Whoever kills it must outlive the server, and the kernel's
parent-death signal alone is not enough: ``prctl(PR_SET_PDEATHSIG)`` kills only the process
that set it (``bash``), not the children it forks (``sleep`` in ``touch x; sleep 5``), which are
re-parented to init and keep running. So there are two mechanisms:

1. **A reaper**: one small helper process per server (``python -I -S -c``, stdlib only, its own
   session so terminal signals miss it), started on first use. It reads a pipe whose only
   write end is held by the server (close-on-exec, so no tool inherits it). Each tool child
   registers its group (``+pgid``) *from inside the child, between fork and exec*: by the time
   the command runs, the reaper knows it, and while the child has not yet exec'd it still holds
   a copy of the write end, so the reaper cannot see end-of-file before the registration. The
   server deregisters a group (``-pgid``) once it has killed it. When the server dies the
   kernel closes the write end; the reaper reads end-of-file, SIGKILLs every group still
   registered, and exits.
2. **A parent-death signal** on the group leader (Linux): if the reaper itself is gone (killed
   by hand), the leader still dies with the thread that started it, the event loop's thread,
   which lives as long as the server. A leader whose server died before it could set the
   signal notices (its parent changed) and exits before running anything.

If the reaper cannot be started, tools still run (logged once), protected by (2) only.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

__all__ = ["REAPER_SOURCE", "child_setup", "release_group"]

log = logging.getLogger(__name__)

REAPER_SOURCE = """
import os, signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
groups, pending = set(), b""
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    *lines, pending = (pending + chunk).split(b"\\n")
    for line in lines:
        if line[:1] == b"+":
            groups.add(int(line[1:]))
        elif line[:1] == b"-":
            groups.discard(int(line[1:]))
for group in groups:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
"""
"""The reaper's whole program: register/deregister groups until end-of-file, then kill."""

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[[int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[[int, int], int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_prctl = _load_prctl()  # resolved once: the child between fork and exec should do little


class _Reaper:
    """The server's reaper process and the write end of its pipe (restarted if it died)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._fd: int | None = None
        self._failed = False
        self._registered = False

    def fd(self) -> int | None:
        """The pipe's write end, starting the reaper first if needed; None if it cannot run."""
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                return self._fd
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            read_end, write_end = os.pipe()  # both close-on-exec
            try:
                self._process = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", REAPER_SOURCE],
                    stdin=read_end,
                    stdout=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as exc:
                os.close(write_end)
                if not self._failed:
                    log.error(
                        "cannot start the tool reaper (%s): tool processes may outlive a "
                        "crashed server",
                        exc,
                    )
                    self._failed = True
                return None
            finally:
                os.close(read_end)
            self._fd = write_end
            if not self._registered:
                atexit.register(self.close)
                self._registered = True
            return write_end

    def close(self) -> None:
        """At a normal exit: end the reaper's input and wait for it (it kills what is left)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(timeout=5)

    def release(self, pgid: int) -> None:
        """The group is dead: the reaper forgets it (its id may be reused)."""
        fd = self._fd
        if fd is not None:
            with contextlib.suppress(OSError):
                os.write(fd, b"-%d\n" % pgid)


_reaper = _Reaper()


def child_setup() -> Callable[[], None]:
    """The ``preexec_fn`` for a tool child: parent-death signal, then register with the reaper.

    Runs in the child between fork and exec, after ``setsid`` (so its pid is its group id).
    It must never raise (that would fail the start) and does only system calls.
    """
    fd = _reaper.fd()
    server = os.getpid()

    def setup() -> None:
        try:
            if _prctl is not None:
                _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
                if os.getppid() != server:  # the server died before the signal was armed
                    os._exit(1)
            if fd is not None:
                os.write(fd, b"+%d\n" % os.getpid())
        except BaseException:  # never fail the start from here
            pass

    return setup


def release_group(pgid: int) -> None:
    """Tell the reaper a group was killed (see ``_Reaper.release``)."""
    _reaper.release(pgid)
