"""No tool process outlives its call or the server, however it detaches: the guardian.

Killing a tool's process group (``_process``) misses every process that leaves the group:
``setsid``, ``set -m`` jobs, a double fork, a daemon. They re-parent to init and run on, also
after the server is SIGKILLed, when nothing of the server runs to kill them. The kernel's
parent-death signal kills one process, not what it started. So the guarantee comes from a
**guardian**: a tiny process (``python -I -S -c``, stdlib only) that the server starts in
place of the command, and that starts the command itself. It is:

- a **child subreaper** (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux ≥ 3.4, no privilege): a
  process that loses its parent (``setsid -f``, a double fork, a daemon) re-parents to the
  guardian, not to init, so every process the command starts stays below the guardian;
- watching a **lifeline**: a socket pair whose other end only the server holds
  (close-on-exec, so no other child inherits it). The server closes it to kill the command
  (time limit, ``kill``, cancellation); the kernel closes it when the server dies, however it
  dies. The guardian writes the command's pid on it once, when the command has started;
- outside the command's **session** (the command leads its own, as before), so a command's
  ``kill -9 0`` or the server's signals to the command's group never reach it. SIGTERM (and
  INT, HUP, QUIT, USR1, USR2) sent to the guardian itself is passed on to that group.

When the command exits, or the lifeline closes, the guardian SIGKILLs every process below it
(walking ``/proc``; a process killed while forking leaves its children to the guardian, which
walks again until it has no child left), then exits with the command's own status (a command
killed by a signal makes the guardian kill itself with that signal). With no process left
behind it costs nothing: a subreaper that has no child has no descendant.

Without ``ctypes`` or the ``prctl`` (not Linux, a stripped Python), ``_process`` falls back to
the process group and the reaper (``_reaper``): a process that leaves its group can then
outlive a crashed server. ``containment`` says which is in use (``duragent doctor`` prints it).
Under ``sandbox.mode: bubblewrap`` the guardian starts ``bwrap``, whose PID namespace ends with
it. Not covered by either: a process handed to another, already running server (``tmux``,
``systemd-run``, ``at``), and a guardian killed on its own (by hand, or by the OOM killer).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import cache

__all__ = ["FALLBACK_FIX", "GUARDIAN_SOURCE", "Containment", "containment", "guardian_argv"]

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37

GUARDIAN_SOURCE = """
import os, select, signal, sys
lifeline, argv = int(sys.argv[1]), sys.argv[2:]
passed = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
          signal.SIGUSR2)
for sig in passed:
    signal.signal(sig, signal.SIG_IGN)
def fail(text):
    os.write(2, ("duragent: " + text + "; the command was not started\\n").encode())
    os._exit(125)
try:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
except Exception as exc:
    fail("cannot watch the tool's processes (prctl PR_SET_CHILD_SUBREAPER: %s)" % exc)
os.set_inheritable(lifeline, False)
wake, woken = os.pipe()
os.set_blocking(wake, False)
os.set_blocking(woken, False)
signal.set_wakeup_fd(woken, warn_on_full_buffer=False)
signal.signal(signal.SIGCHLD, lambda *_: None)
poller = select.poll()
poller.register(lifeline, select.POLLIN)
poller.register(wake, select.POLLIN)
def cut(timeout):
    gone = False
    for fd, _ in poller.poll(timeout):
        if fd == lifeline:
            gone = True
        else:
            try:
                while os.read(wake, 512):
                    pass
            except BlockingIOError:
                pass
    return gone
if cut(0):
    os._exit(125)
try:
    child = os.posix_spawn(argv[0], argv, os.environ, setsid=True,
                           setsigdef=(*passed, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ))
except OSError as exc:
    fail("cannot start %s: %s" % (argv[0], exc))
try:
    os.write(lifeline, b"%d\\n" % child)
except OSError:
    pass
status = None
def reap():
    global status
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        if pid == child:
            status = code
def passon(sig, _):
    if status is None:
        try:
            os.killpg(child, sig)
        except OSError:
            pass
for sig in passed:
    signal.signal(sig, passon)
released = False
while status is None and not released:
    released = cut(-1)
    reap()
for sig in passed:
    signal.signal(sig, signal.SIG_IGN)
def below():
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name, "rb") as file:
                    stat = file.read()
            except OSError:
                continue
            parents.setdefault(int(stat[stat.rindex(b")") + 2:].split()[1]), []).append(int(name))
    found, todo = [], [os.getpid()]
    while todo:
        for pid in parents.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found
while reap():
    for pid in below():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    cut(50)
if status is None:
    os._exit(125)
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(sig, signal.SIG_DFL)
    except (ImportError, OSError, ValueError):
        pass
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)
os._exit(os.waitstatus_to_exitcode(status))
"""
"""The guardian's whole program: ``argv[1]`` is the lifeline's fd, the rest the command."""


@dataclass(frozen=True, slots=True)
class Containment:
    """How tool processes are kept from outliving their call and the server, here."""

    guardian: bool
    """True: the subreaper guardian; False: the process group and the reaper (fallback)."""
    summary: str
    """One line for ``doctor``: the mechanism, and what the fallback cannot catch."""


@cache
def containment() -> Containment:
    """Whether this host and Python can run the guardian (checked once, in-process).

    The guardian runs on the same interpreter, so ``ctypes`` importing here and the kernel
    answering ``PR_GET_CHILD_SUBREAPER`` here mean it can become a subreaper there.
    """
    problem = _guardian_problem()
    if problem is None:
        return Containment(
            True,
            "a subreaper guardian per command (prctl PR_SET_CHILD_SUBREAPER): what it starts, "
            "detached or not, ends with it and with the server",
        )
    return Containment(
        False,
        f"process groups and a reaper ({problem}): a process that leaves its group "
        "(setsid, set -m, a daemon) outlives its command and can outlive a crashed server",
    )


FALLBACK_FIX = (
    "run duragent on Linux with a Python that has ctypes, or set sandbox.mode: bubblewrap "
    "(its PID namespace ends with each command)"
)
"""What to do when ``containment`` falls back (``doctor`` says it)."""


def _guardian_problem() -> str | None:
    if not sys.platform.startswith("linux") or not os.path.isdir("/proc/self"):
        return "not Linux with /proc"
    if not sys.executable:
        return "the Python interpreter's path is unknown"
    try:
        import ctypes  # only here: a Python without it falls back

        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        if libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
            return f"prctl PR_GET_CHILD_SUBREAPER: {os.strerror(ctypes.get_errno())}"
    except (ImportError, OSError, AttributeError) as exc:
        return f"no prctl through ctypes: {exc}"
    return None


def guardian_argv(lifeline: int) -> list[str]:
    """The start of a guarded command line; the command's own argv follows."""
    return [sys.executable, "-I", "-S", "-c", GUARDIAN_SOURCE, str(lifeline)]
