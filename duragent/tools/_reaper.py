"""Tool processes die with the server, however the server dies (SIGKILL and OOM included).

The fallback where the guardian cannot run (``guardian``: it also catches processes that leave
their group, which this cannot). What follows is how the fallback works.

Every tool process leads its own process group, so the whole tree it starts can be killed as
one (``_process``). Whoever kills the group when the server dies must outlive the server. The
kernel's parent-death signal is not enough: ``prctl(PR_SET_PDEATHSIG)`` kills only the process
that set it (``bash``), not the children it forks (``sleep`` in ``touch x; sleep 5``), which are
re-parented to init and run on; and setting it needs a ``preexec_fn``, which turns every spawn
into a full ``fork`` of the server on the event loop's thread (measured: 8–25 ms a spawn for a
50–400 MB server, against ~1.2 ms with the ``vfork`` path).

So: **a reaper**, one small helper process per server (``python -I -S -c``, stdlib only, in its
own session so terminal signals miss it), started on first use. It reads a pipe whose only
write end the server holds (close-on-exec, so no child inherits it). The server registers each
tool group (``+pgid``) before the tool's command may run (``_process`` holds the command at a
gate until then) and deregisters it (``-pgid``) once it has killed the group. When the server
dies, the kernel closes the write end; the reaper reads end-of-file, SIGKILLs every group still
registered, and exits. If the reaper dies (killed by hand), the next spawn starts a new one and
hands it the groups still running. If it cannot be started at all, tools still run (logged
once), without this protection.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import subprocess
import sys
import threading

__all__ = ["REAPER_SOURCE", "register_group", "release_group"]

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


class _Reaper:
    """The server's reaper process, the write end of its pipe, and the groups it watches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._fd: int | None = None
        self._groups: set[int] = set()
        self._failed = False
        self._registered = False

    def register(self, pgid: int) -> bool:
        """Watch group ``pgid``; False when no reaper can run (the caller goes on anyway)."""
        with self._lock:
            self._groups.add(pgid)
            fd = self._running()
            if fd is None:
                return False
            try:
                os.write(fd, b"+%d\n" % pgid)
            except OSError:  # it died just now: a new one gets every group on the next call
                return self._running() is not None
            return True

    def release(self, pgid: int) -> None:
        """The group is dead: forget it (its id may be reused)."""
        with self._lock:
            self._groups.discard(pgid)
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.write(self._fd, b"-%d\n" % pgid)

    def _running(self) -> int | None:
        """The write end of a live reaper's pipe, starting one (with every group) if needed."""
        if self._process is not None and self._process.poll() is None and self._fd is not None:
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
        with contextlib.suppress(OSError):
            os.write(write_end, b"".join(b"+%d\n" % g for g in sorted(self._groups)))
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


_reaper = _Reaper()


def register_group(pgid: int) -> bool:
    """Have the reaper kill group ``pgid`` if the server dies (see module docstring)."""
    return _reaper.register(pgid)


def release_group(pgid: int) -> None:
    """Tell the reaper a group was killed."""
    _reaper.release(pgid)
