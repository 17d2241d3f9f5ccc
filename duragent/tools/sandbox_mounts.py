"""What a confined process sees of its agent's folder: the definition read-only, secrets covered.

``sandbox.Confinement`` binds the agent's folder writable, so a tool can keep its files there;
the mounts made here keep what defines the agent (``agents.protected``: ``agent.yaml``, its
prompts, skills, directives, tools) unchanged from inside, and its ``policy.yaml``,
``policy.local.yaml`` and ``.env`` unreadable: a tool must never write its own permissions
or prompts, nor read the keys beside them. Apart from ``sandbox`` because it is the one part
of the confinement that writes to the agent's folder (missing entries are created empty, so
the sandbox cannot create them either).
"""

from __future__ import annotations

import os
from pathlib import Path

from duragent.agents.protected import AgentEntries

__all__ = ["cover_secrets", "protect_definition"]


def protect_definition(agent_dir: Path, entries: AgentEntries) -> list[str] | None:
    """The mounts that keep the agent's definition unchanged (``agents.protected``).

    Every protected top-level entry becomes a mount point: read-only, or covered by an empty
    file for secrets. A mount point cannot be written, renamed over, deleted or replaced by a
    symlink from inside; a missing entry is created empty first (a folder for ``skills`` and
    the like) so the sandbox cannot create it either. None when an entry is a symlink (a
    mount would land on its target): the caller then shows the whole folder read-only.
    """
    args: list[str] = []
    for name in entries.names:
        path = agent_dir / name
        if path.is_symlink():
            return None
        if not path.exists():
            if name in entries.folders:
                path.mkdir(exist_ok=True)
            else:
                _create_empty(path, 0o600 if name in entries.hidden else 0o644)
        if name not in entries.hidden:
            args += ["--ro-bind", str(path), str(path)]
        elif path.is_dir():
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            args += ["--ro-bind", "/dev/null", str(path)]
    return args


def cover_secrets(agent_dir: Path, entries: AgentEntries) -> list[str]:
    """Covers for the policy files and ``.env`` of a folder shown read-only as a whole."""
    args: list[str] = []
    for name in entries.hidden:
        path = agent_dir / name
        if path.is_file() and not path.is_symlink():
            args += ["--ro-bind", "/dev/null", str(path)]
    return args


def _create_empty(path: Path, mode: int = 0o644) -> None:
    """An empty file at ``path`` (kept if another call made it first)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    except FileExistsError:
        return
    os.close(fd)
