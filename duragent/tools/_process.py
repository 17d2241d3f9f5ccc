"""Run a child process with a hard timeout and a bounded capture of its output.

Shared by the ``bash`` tool and CLI tools, which must behave identically:

- The child starts in a **new session** (so in its own process group). When the command ends,
  times out, or the caller is cancelled, the whole group is sent SIGKILL: a command cannot
  leave orphans behind (``sleep 1000 &``), and a background child that still holds stdout
  cannot keep the call waiting. Long-lived processes belong to a dedicated tool, not ``bash``.
- Everything the command starts dies with the call and with the **server**, even by SIGKILL
  and however it detaches (``setsid``, a double fork, a daemon): the command runs under a
  **guardian** (``guardian``), a child subreaper that kills everything below it when the
  command ends or its lifeline (held by the server) closes. ``Launched.kill`` closes it.
- Where the guardian cannot run (``guardian.containment``), the group is watched by the
  reaper (``_reaper``), and the program starts behind a **gate**: ``/bin/sh`` reads one line
  from its stdin, then execs the program with stdin from ``/dev/null`` (same pid, group and
  exit status). The server writes that line once the group is registered, so no command runs
  unwatched; if the server dies first, the gate reads end-of-file and the program never
  starts. (A ``preexec_fn`` could register from inside the child, but it costs a full
  ``fork`` of the server on the event loop's thread, 8–25 ms, instead of ``vfork``.)
- Output is read **incrementally** from both pipes. At most ``cap`` bytes (stdout and stderr
  together) are kept; the rest is read and discarded, so the child never blocks on a full
  pipe and a command printing gigabytes costs no memory.
- The call returns when the command itself exits (not when its pipes close). Without the
  guardian, a process that escaped the group (``setsid``) and still holds a pipe open is given
  a short grace period, then its pipes are closed on our side.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import signal
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duragent.cpu import widened
from duragent.tools._launched import ExitProtocol, Launched, kill_group
from duragent.tools._reaper import register_group
from duragent.tools.base import ToolOutcome
from duragent.tools.guardian import containment, guardian_argv
from duragent.tools.sandbox import Confinement

__all__ = [
    "OUTPUT_CAP",
    "TRUNCATION_MARKER",
    "Launched",
    "ProcessResult",
    "child_env",
    "format_result",
    "kill_group",
    "launch",
    "run_process",
]

OUTPUT_CAP = 256 * 1024
TRUNCATION_MARKER = "\n\n[output truncated at 256 KB]"
"""What ``format_result`` appends at the default cap."""
_CHUNK = 64 * 1024
_PIPE_GRACE_SECONDS = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessResult:
    """What a finished (or killed) child printed and how it ended."""

    exit_code: int
    stdout: str
    stderr: str
    truncated: bool
    timed_out: bool
    timeout: float
    cap: int = OUTPUT_CAP


class _Capture:
    """One byte budget shared by stdout and stderr; whatever does not fit is drained."""

    def __init__(self, cap: int) -> None:
        self.remaining = cap
        self.truncated = False

    async def drain(self, stream: asyncio.StreamReader | None, into: bytearray) -> None:
        if stream is None:
            return
        while chunk := await stream.read(_CHUNK):
            if self.remaining <= 0:
                self.truncated = True
                continue
            kept = chunk[: self.remaining]
            into.extend(kept)
            self.remaining -= len(kept)
            if len(kept) < len(chunk):
                self.truncated = True


def child_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The server's environment plus the workspace variables the runtime passed to the tool."""
    return {**os.environ, **extra}


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    time_limit: float,
    env: Mapping[str, str] | None = None,
    cap: int = OUTPUT_CAP,
    confine: Confinement | None = None,
) -> ProcessResult:
    """Run ``argv`` in ``cwd``; kill its process group after ``time_limit`` seconds.

    A time limit rather than ``asyncio.timeout`` around the call: on expiry the group must be
    killed and the partial output still returned, not just the wait cancelled. ``confine``
    (the tool context's sandbox for this call) turns the command into a sandboxed one; it is
    applied here, the one place commands start, after the program is found.

    Raises:
        OSError: the program could not be started (missing, not executable, bad ``cwd``), or
            the sandbox cannot run it (it is then not started at all).
    """
    started = await launch(argv, cwd=cwd, env=env, confine=confine)
    transport, protocol = started.transport, started.protocol
    capture = _Capture(cap)
    out, err = bytearray(), bytearray()
    readers = asyncio.gather(
        capture.drain(protocol.stdout, out), capture.drain(protocol.stderr, err)
    )
    timed_out = False
    try:
        try:
            await asyncio.wait_for(protocol.exited.wait(), time_limit)
        except TimeoutError:
            timed_out = True
        started.kill()
        await protocol.exited.wait()
        _, pending = await asyncio.wait({readers}, timeout=_PIPE_GRACE_SECONDS)
        if pending:  # something outside the group holds a pipe open: stop listening
            transport.close()  # closing the pipes ends the readers with EOF
            await readers
    except BaseException:
        # Cancelled by the caller: nothing of the command may survive.
        started.kill()
        readers.cancel()
        readers.add_done_callback(_retrieve)
        raise
    finally:
        started.release()  # killed above in every path
        started.close()
    code = transport.get_returncode()
    return ProcessResult(
        exit_code=code if code is not None else -1,
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
        truncated=capture.truncated,
        timed_out=timed_out,
        timeout=time_limit,
        cap=cap,
    )


async def launch(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdout: int = asyncio.subprocess.PIPE,
    stderr: int = asyncio.subprocess.PIPE,
    keep_stdin: bool = False,
    confine: Confinement | None = None,
) -> Launched:
    """Start ``argv`` in a new session under a guardian (or behind the gate, with the reaper).

    The one place a tool process is started (``bash``, CLI tools, ``background_process``):
    whatever must wrap every tool process (a sandbox, the guardian) wraps ``argv`` here.
    ``stdout`` and ``stderr`` are ``PIPE`` or an open file descriptor (a background job's log
    file). With ``keep_stdin`` the program's stdin is a pipe (after the gate's line, without
    a guardian), so a caller can write to it; otherwise it reads ``/dev/null``. ``confine``
    (the call's sandbox) turns the command into a sandboxed one, after the program is found.
    The caller ends it with ``Launched.kill`` and ``Launched.release``.

    Raises:
        OSError: the program could not be started (missing, not executable, bad ``cwd``), or
            the sandbox cannot run it (it is then not started at all).
    """
    loop = asyncio.get_running_loop()
    program = _resolve(argv[0], cwd, env)
    if confine is not None:
        full, confined_env = confine.apply(
            [program, *argv[1:]], cwd=cwd, env=os.environ if env is None else env
        )
        program, argv, env = full[0], full, confined_env
    if containment().guardian:
        return await _guarded(loop, [program, *argv[1:]], cwd, env, stdout, stderr, keep_stdin)
    with widened():  # the program gets every CPU even when the server's threads are pinned
        transport, protocol = await loop.subprocess_exec(
            lambda: ExitProtocol(_CHUNK, loop),
            *(_GATE_KEEP_STDIN if keep_stdin else _GATE),
            program,
            *argv[1:],
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=asyncio.subprocess.PIPE,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    pgid = transport.get_pid()  # a new session: the leader's pid is the group id
    register_group(pgid)
    gate = transport.get_pipe_transport(0)
    assert isinstance(gate, asyncio.WriteTransport)
    gate.write(b"go\n")  # the program may run now
    if not keep_stdin:
        gate.close()
    return Launched(transport, protocol, pgid, gate if keep_stdin else None)


async def _guarded(
    loop: asyncio.AbstractEventLoop,
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str] | None,
    stdout: int,
    stderr: int,
    keep_stdin: bool,
) -> Launched:
    """Start ``argv`` under a guardian holding one end of a fresh lifeline (a socket pair).

    The guardian checks the lifeline before it starts the program (a server gone meanwhile
    means it never starts), so no gate line is needed: stdin is the program's own. It then
    writes the program's pid on the lifeline: the program's group, which signals and the
    process table know it by.
    """
    ours, theirs = socket.socketpair()  # both close-on-exec; theirs is passed on
    ours.setblocking(False)
    try:
        with widened():
            transport, protocol = await loop.subprocess_exec(
                lambda: ExitProtocol(_CHUNK, loop),
                *guardian_argv(theirs.fileno()),
                *_EXEC,
                *argv,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=asyncio.subprocess.PIPE if keep_stdin else asyncio.subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
            )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    stdin = transport.get_pipe_transport(0) if keep_stdin else None
    assert stdin is None or isinstance(stdin, asyncio.WriteTransport)
    started = Launched(transport, protocol, transport.get_pid(), stdin, ours, guarded=True)
    try:  # empty: the guardian exited without starting it (it said why on stderr)
        said = await loop.sock_recv(ours, 32)
    except BaseException:
        started.kill()
        started.close()
        raise
    if said.strip().isdigit():
        started.pgid = int(said)
    return started


_EXEC = ("/bin/sh", "-c", 'exec "$@"', "duragent-tool")
"""What the guardian starts: the program, exec'd as ``sh`` would (a script without ``#!``
runs as a shell script, as it does behind the gate)."""
_GATE = ("/bin/sh", "-c", 'read _ || exit 125; exec "$@" </dev/null', "duragent-tool")
"""Waits for the server's line on stdin, then becomes the program (see module docstring)."""
_GATE_KEEP_STDIN = ("/bin/sh", "-c", 'read _ || exit 125; exec "$@"', "duragent-tool")
"""The same, the program keeping the pipe as its stdin (``sh``'s ``read`` takes one line)."""


def _resolve(program: str, cwd: Path, env: Mapping[str, str] | None) -> str:
    """The program's path, found as ``exec`` would; OSError as a direct start would raise.

    The gate execs it, so without this a missing program would be an exit status 127 rather
    than the error callers report ("could not start ...").
    """
    if os.sep in program:
        path = os.path.join(cwd, program)  # a relative path is the child's, after its chdir
    else:
        search = os.pathsep.join(os.get_exec_path(dict(env) if env is not None else None))
        found = shutil.which(program, path=search)
        if found is None:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", program)
        path = found
    if not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", program)
    if not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, "Permission denied", program)
    return path


def _retrieve(readers: asyncio.Future[Any]) -> None:
    """Mark the cancelled readers' outcome as seen (no "exception never retrieved")."""
    if not readers.cancelled():
        readers.exception()


def _status_note(code: int) -> str:
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def format_result(result: ProcessResult) -> ToolOutcome:
    """The text the model reads: stdout, stderr, truncation marker, then how the command ended.

    Success means exit code 0 within the time limit. The status comes last so a long output
    cannot hide it, and an empty output still says something.
    """
    text = result.stdout
    if result.stderr:
        text += "\n--- stderr ---\n" + result.stderr
    if result.truncated:
        text += f"\n\n[output truncated at {result.cap // 1024} KB]"
    if result.timed_out:
        note = f"Command timed out after {result.timeout:g} s; its process group was killed"
        return ToolOutcome(False, f"{text.rstrip()}\n\n[{note}]" if text.strip() else note)
    success = result.exit_code == 0
    if not text:
        verb = "was" if result.exit_code < 0 else "completed with"
        return ToolOutcome(success, f"Command {verb} {_status_note(result.exit_code)}")
    if not success:
        text = f"{text.rstrip()}\n\n[{_status_note(result.exit_code)}]"
    return ToolOutcome(success, text)
