"""Which workspace a command works on, and what to say when it names none.

A command's workspace is the one ``-c`` (or DURAGENT_CONFIG) names, else the current
directory's (``duragent.yaml`` or ``.duragent/``). README's first command serves
``examples/duragent.yaml`` from the clone's root; a reader who then typed ``duragent doctor``
or ``duragent serve status`` there was told only to run ``duragent init`` (or worse: ``agent
list`` said "no agents" and ``serve status`` "No server running" while the example's server
ran, both exiting 0: issue 39). Every command now refuses alike, naming the exact ``-c`` to
add: the workspaces one folder down and the nearest one above, each with its running server
if it has one. None is chosen silently: a command run in the wrong folder would otherwise
serve, change or stop a workspace nobody named.
"""

from __future__ import annotations

import itertools
import os
import shlex
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from duragent.cli.options import DEFAULT_CONFIG
from duragent.config import CONFIG_FILENAME, LoadedWorkspace, load_workspace
from duragent.errors import ConfigError
from duragent.store.serve_lock import lock_files, read_holder

__all__ = ["NoWorkspace", "open_workspace", "workspace_problem"]

_SHOWN = 5
"""At most this many nearby workspaces are named."""
_SCANNED = 1000
"""At most this many entries of the current directory are looked into (a home folder)."""


def _has_workspace(directory: Path) -> bool:
    return (directory / CONFIG_FILENAME).is_file() or (directory / ".duragent").is_dir()


def _nearby(here: Path) -> list[Path]:
    """``duragent.yaml`` files one folder down (hidden ones skipped), then the nearest above.

    Above, a folder with only ``.duragent/`` is named as the folder (``-c`` takes either).
    """
    found: list[Path] = []
    try:
        entries = sorted(itertools.islice(here.iterdir(), _SCANNED))
    except OSError:
        entries = []
    for entry in entries:
        candidate = entry / CONFIG_FILENAME
        if not entry.name.startswith(".") and candidate.is_file():
            found.append(candidate)
    above = next((p for p in here.parents if _has_workspace(p)), None)
    if above is not None:
        file = above / CONFIG_FILENAME
        found.append(file if file.is_file() else above)
    return found


def _server_of(config: Path) -> str:
    """`` (its server is running: PID n at URL)``, or nothing when none runs or it is unclear."""
    try:
        paths = load_workspace(config, needed=()).paths
    except (ConfigError, OSError):
        return ""
    for lock in lock_files(paths.workspace, paths.sessions):
        holder = read_holder(lock)
        if holder is not None:
            pid = f"PID {holder.pid}" if holder.pid is not None else "a process"
            at = f" at {holder.address}" if holder.address else ""
            return f" (its server is running: {pid}{at})"
    return ""


def _shown(config: Path, here: Path) -> str:
    return shlex.quote(os.path.relpath(config, here))


@dataclass(frozen=True, slots=True)
class NoWorkspace:
    """Why a command has no workspace, and what to pass or run instead."""

    problem: str
    fix: str

    def __str__(self) -> str:
        return f"{self.problem}; {self.fix}"


def _no_workspace_here(here: Path) -> NoWorkspace:
    problem = f"no workspace in {here} (no {CONFIG_FILENAME}, no .duragent/)"
    init = "run `duragent init` to create one here"
    nearby = _nearby(here)
    if not nearby:
        return NoWorkspace(problem, f"pass -c path/to/{CONFIG_FILENAME}, or {init}")
    if len(nearby) == 1:
        chosen = nearby[0]
        shown = f"-c {_shown(chosen, here)}{_server_of(chosen)}"
        return NoWorkspace(problem, f"pass {shown}, or {init}")
    listed = "; ".join(f"-c {_shown(c, here)}{_server_of(c)}" for c in nearby[:_SHOWN])
    more = f" ({len(nearby) - _SHOWN} more)" if len(nearby) > _SHOWN else ""
    return NoWorkspace(problem, f"pass one of: {listed}{more}; or {init}")


def workspace_problem(config: Path) -> NoWorkspace | None:
    """Why ``config`` (from ``-c``, DURAGENT_CONFIG or the default) names no workspace.

    None when it names one: a ``duragent.yaml``, or a folder with one or with ``.duragent/``.
    A path given that does not exist is named; the default, in a folder that is no
    workspace, gets the ``-c`` to add (see the module docstring).
    """
    if config == DEFAULT_CONFIG:
        here = Path.cwd()
        return None if _has_workspace(here) else _no_workspace_here(here)
    path = config.expanduser()
    if not path.exists():
        return NoWorkspace(
            f"{config} does not exist (from -c/--config or DURAGENT_CONFIG)",
            "pass the right path, or run `duragent init` to create a workspace",
        )
    if path.is_dir() and not _has_workspace(path):
        return NoWorkspace(
            f"no workspace in {path} (no {CONFIG_FILENAME}, no .duragent/)",
            f"pass -c with a workspace's {CONFIG_FILENAME}, or run "
            f"`duragent init {shlex.quote(str(path))}`",
        )
    return None


def open_workspace(config: Path, *, needed: Collection[str] = ()) -> LoadedWorkspace:
    """The workspace ``config`` names, loaded for a command that reads ``needed`` sections.

    ``needed``: the sections of ``duragent.yaml`` whose ``${VAR}``s the command uses (e.g.
    ``("server",)`` to reach the server); unset variables elsewhere, such as a chat
    platform's token, do not stop it (``config.env_scope``).

    Raises:
        ValueError: ``config`` names no workspace (the message says which ``-c`` to pass).
    """
    problem = workspace_problem(config)
    if problem:
        raise ValueError(str(problem))
    return load_workspace(config, needed=needed)
