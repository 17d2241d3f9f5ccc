"""Interactive jobs in tmux sessions, which outlive the server and a person can attach to.

A job spawned with ``interactive: true`` runs in a detached tmux session ``duragent-<handle>``
(``tmux attach -t duragent-<handle>`` shows it), 200×50, in a real terminal (programs that
check ``isatty`` behave as for a person). Its screen is streamed to the job's log with
``pipe-pane``, and when the command ends its exit status is appended as ``EXIT_CODE:<n>``
(the reference's marker), which is how the exit status of a session that ended while no
server watched is known.

The command runs as ``bash -c <command>`` inside an outer ``bash`` that writes the marker, so
an ``exit`` in the command cannot skip it. tmux's own server is used (``socket`` selects
another one with ``-L``, which tests do to stay out of a person's sessions).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["EXIT_MARKER", "Tmux", "TmuxError", "parse_exit_code"]

log = logging.getLogger(__name__)

WIDTH, HEIGHT = 200, 50
KEY_DELAY_SECONDS = 0.05
"""Between keys of one ``send_keys`` (a TUI needs a moment per keystroke)."""
EXIT_MARKER = "EXIT_CODE:"
_EXIT_LINE = re.compile(r"^EXIT_CODE:(-?\d+)\s*$", re.MULTILINE)
_WRAPPER = 'tmux wait-for "$2"; bash -c "$0"; echo "EXIT_CODE:$?" >> "$1"'
"""The outer script: wait until the screen is logged (channel ``$2``), run the command
(``$0``), then append its status to the log (``$1``). Inside the session ``tmux`` talks to
the session's own server (``$TMUX``)."""


class TmuxError(OSError):
    """A tmux command failed (its stderr is the message)."""


def parse_exit_code(text: str) -> int | None:
    """The last ``EXIT_CODE:<n>`` line of a log, if any."""
    found = _EXIT_LINE.findall(text)
    return int(found[-1]) if found else None


class Tmux:
    """The tmux commands the background jobs use, against one tmux server."""

    def __init__(self, socket: str | None = None, program: str = "tmux") -> None:
        self.socket = socket
        self.program = program

    @property
    def available(self) -> bool:
        """Whether the tmux program is installed."""
        return shutil.which(self.program) is not None

    def _argv(self, *args: str) -> list[str]:
        head = [self.program] + (["-L", self.socket] if self.socket else [])
        return [*head, *args]

    async def _run(self, *args: str) -> str:
        process = await asyncio.create_subprocess_exec(
            *self._argv(*args),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        if process.returncode != 0:
            text = err.decode("utf-8", "replace").strip() or f"exit {process.returncode}"
            raise TmuxError(f"tmux {args[0]} failed: {text}")
        return out.decode("utf-8", "replace")

    async def new_session(
        self,
        name: str,
        command: str,
        log_path: Path,
        *,
        cwd: Path,
        env: Mapping[str, str],
    ) -> None:
        """Start ``command`` in a detached session ``name``, its screen going to ``log_path``."""
        env_args: list[str] = []
        for key, value in env.items():
            env_args += ["-e", f"{key}={value}"]
        await self._run(
            "new-session", "-d", "-s", name, "-x", str(WIDTH), "-y", str(HEIGHT),
            "-c", str(cwd), *env_args,
            "--", "bash", "-c", _WRAPPER, command, str(log_path), name,
        )  # fmt: skip
        try:
            quoted = str(log_path).replace("'", "'\\''")
            await self._run("pipe-pane", "-t", name, f"cat >> '{quoted}'")
        except TmuxError as exc:
            log.warning("tmux session %s: output not logged: %s", name, exc)
        finally:  # the command may start now (a channel signalled early stays signalled)
            with contextlib.suppress(OSError):
                await self._run("wait-for", "-S", name)

    async def has_session(self, name: str) -> bool:
        """Whether session ``name`` still exists (its command still runs)."""
        try:
            await self._run("has-session", "-t", f"={name}")
        except OSError:
            return False
        return True

    async def capture(self, name: str) -> str:
        """The session's visible screen, as text."""
        return await self._run("capture-pane", "-p", "-t", name)

    async def send_keys(self, name: str, keys: Sequence[str], *, enter: bool) -> None:
        """Send tmux key names (``Down``, ``C-c``…) one at a time, then ``Enter`` if asked."""
        parts = [*keys, "Enter"] if enter else list(keys)
        for index, key in enumerate(parts):
            if index:
                await asyncio.sleep(KEY_DELAY_SECONDS)
            await self._run("send-keys", "-t", name, key)

    async def send_literal(self, name: str, text: str, *, enter: bool) -> None:
        """Type ``text`` as is (spaces kept), then ``Enter`` if asked."""
        if text:
            await self._run("send-keys", "-t", name, "-l", "--", text)
        if enter:
            await self._run("send-keys", "-t", name, "Enter")

    async def kill_session(self, name: str) -> None:
        """End the session (and its command); nothing if it is already gone."""
        with contextlib.suppress(OSError):
            await self._run("kill-session", "-t", f"={name}")
