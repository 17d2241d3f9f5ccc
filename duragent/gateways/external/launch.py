"""Starting a gateway's child process: which program, with what, and tied to our life.

**Which program** (``resolve_command``): an absolute ``command`` as written; one with a ``/``
against the directory of ``duragent.yaml`` (so ``./gateways/slack`` works from anywhere); a
bare name (``duragent-telegram``) in that directory when a file of that name is there, else
on ``PATH``. The reference joined every relative command to the config directory, so the bare
names its own docs suggest were never looked up on ``PATH``. A command that cannot be found
or run is a ``ConfigError`` naming ``gateways.external[i].command``, raised before anything
starts, so that gateway is reported and the others are unaffected.

**With what**: the arguments, duragent's environment plus ``env`` (already ``${VAR}``-expanded
with the rest of the file), stdin and stdout as pipes for the protocol, stderr inherited so
the child's log lines land in duragent's.

**Tied to our life**: two guarantees, because either alone has a gap. (1) On Linux the child
asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``, set between ``fork``
and ``exec``, followed by a check that the parent did not die in between); this holds even
for a gateway that never reads stdin. Note the kernel's "parent" is the *thread* that forked:
duragent spawns from its event-loop thread, which lives as long as the server. (2) Every
gateway sees end-of-file on stdin when duragent dies (the pipe's last writer is gone), and a
protocol gateway must exit then; the reference's gateways do, and so does the fake.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import os
import shutil
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from duragent.config.workspace import ExternalGatewayConfig
from duragent.errors import ConfigError

__all__ = ["Launch", "resolve_command"]

PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, slots=True)
class Launch:
    """Everything needed to start one gateway's child: resolved once, used at every restart."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    field: str = "gateways.external"
    """Where it is configured (``gateways.external[2]``), for messages that need a fix."""

    async def spawn(self) -> asyncio.subprocess.Process:
        """Start the child (raises ``OSError`` when it cannot be started)."""
        return await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=None,
            env=dict(self.env),
            preexec_fn=_die_with_parent(),
            start_new_session=False,
        )

    @classmethod
    def of(
        cls,
        config: ExternalGatewayConfig,
        index: int,
        config_dir: Path,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> Launch:
        """The launch for ``gateways.external[index]`` (``ConfigError`` if it cannot run)."""
        base = dict(os.environ if environ is None else environ)
        program = resolve_command(config.command, config_dir, index, config.name, base)
        argv = (program, *config.args)
        return cls(config.name, argv, {**base, **config.env}, f"gateways.external[{index}]")


def resolve_command(
    command: str, config_dir: Path, index: int, name: str, environ: Mapping[str, str]
) -> str:
    """The program to run for ``command`` (see module docstring), or a ``ConfigError``."""
    field = f"gateways.external[{index}].command"
    path = Path(command).expanduser()
    if path.is_absolute() or "/" in command:
        found = path if path.is_absolute() else config_dir / path
        where = str(found)
    else:
        local = config_dir / command
        on_path = shutil.which(command, path=environ.get("PATH", os.defpath))
        found = local if local.is_file() else Path(on_path) if on_path else local
        where = f"{config_dir} or on PATH"
    if not found.is_file():
        raise ConfigError(
            f"gateway '{name}': the command {command!r} was not found (looked in {where})",
            field=field,
            value=command,
            fix="give the path of the gateway's program (relative paths start from the "
            "directory of duragent.yaml), or install it on PATH",
        )
    if not os.access(found, os.X_OK):
        raise ConfigError(
            f"gateway '{name}': {found} is not executable",
            field=field,
            value=command,
            fix=f"chmod +x {found}, or set command to its interpreter and args to the script",
        )
    return str(found)


@functools.cache
def _prctl() -> Callable[..., int]:
    """Libc's ``prctl``, looked up once (and before any fork, never in the child)."""
    libc_name = ctypes.util.find_library("c") or "libc.so.6"
    prctl: Callable[..., int] = ctypes.CDLL(libc_name, use_errno=True).prctl
    return prctl


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking for SIGTERM when the parent dies (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = _prctl()
    parent = os.getpid()

    def arrange() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(1)

    return arrange
