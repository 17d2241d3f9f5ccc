"""What a confined process sees of its agent's folder: the definition read-only, secrets covered.

``sandbox.Confinement`` binds the agent's folder writable, so a tool can keep its files there;
the mounts made here keep what defines the agent (``agents.protected``: ``agent.yaml``, its
prompts, skills, directives, tools) unchanged from inside, and its ``policy.yaml``,
``policy.local.yaml`` and ``.env`` unreadable: a tool must never write its own permissions
or prompts, nor read the keys beside them. They also show each chat only its own received
files (``chat_files_mounts``). Apart from ``sandbox`` because it is the one part of the
confinement that writes to the agent's folder (missing entries are created empty, so the
sandbox cannot create them either).
"""

from __future__ import annotations

import os
from pathlib import Path

from duragent.agents.chat_files import FILES_FOLDER, chat_files_dir
from duragent.agents.protected import AgentEntries

__all__ = ["chat_files_mounts", "cover_secrets", "protect_definition"]


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


def chat_files_mounts(
    agent_dir: Path, session_id: str, *, writable: bool
) -> tuple[list[str], list[str]]:
    """The mounts that show a session its own files folder and no other session's.

    The documents people send are saved in ``files/<session id>/`` (``agents.chat_files``),
    inside the agent's folder every session's tools share. An empty tmpfs over ``files``
    hides the other sessions' folders (absent, not just unreadable), and the session's own
    is bound back on it: writable, unless the agent's folder is shown read-only as a whole
    (then nothing of it is writable). Both folders are made first, so the mount points exist
    and a tool cannot remove or rename them from inside. Returns the mounts and the
    ``--remount-ro`` of the tmpfs, which goes after them (it is not recursive: the session's
    folder stays writable, while a file made beside it would vanish with the call).

    Raises:
        PermissionError: ``files`` or the session's folder is a symbolic link or a file (a
            mount would land where it points): the command is not started.
    """
    folder = agent_dir / FILES_FOLDER
    own = chat_files_dir(agent_dir, session_id)
    for path in (folder, own):
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise PermissionError(
                f"the agent's {path.relative_to(agent_dir).as_posix()} is not a folder (a "
                "symbolic link or a file): remove it, so that each chat sees only its own files"
            )
    own.mkdir(parents=True, exist_ok=True, mode=0o700)
    bind = "--bind" if writable else "--ro-bind"
    mounts = ["--tmpfs", str(folder), bind, str(own), str(own)]
    return mounts, ["--remount-ro", str(folder)]


def _create_empty(path: Path, mode: int = 0o644) -> None:
    """An empty file at ``path`` (kept if another call made it first)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    except FileExistsError:
        return
    os.close(fd)
