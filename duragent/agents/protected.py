"""What the runtime trusts on disk, and so what no tool may change: the one list of them.

An agent's behaviour is decided by files: ``agent.yaml`` (model endpoint, key source, tools),
its prompt files, skills, directives, CLI tool scripts and policy files, plus the workspace's
``duragent.yaml``, policy and ``.env``. A tool that could rewrite one (append a ``base_url``,
name ``duragent.yaml`` as the system prompt) would act with the owner's authority from the next
reload on. Two places keep tools away from them, both from this list:

- the bubblewrap sandbox (``tools.sandbox``) covers every protected entry of the agent's
  folder with a read-only mount (secrets with an empty one) and shows no other agent;
- in trust mode, the file-writing builtins (``memory``, background job logs) ask
  ``write_refusal`` before writing, so a symlink planted by a command cannot redirect them.

The agent's ``files`` folder (``agents.chat_files``: the documents people send, per chat) is
the opposite: data that tools of every chat write, so it is never part of the definition.
The loader refuses a definition path in it (``in_files_folder``); should ``agent.yaml`` name
one anyway (a reload that has not been accepted yet), the whole folder is shown read-only.

Protection is by **top-level entry** of the agent's folder: a prompt at ``prompts/soul.md``
protects the whole ``prompts`` folder. A mount point cannot be renamed, deleted or replaced
from inside the sandbox, but the folder holding one can: protecting only the file would let a
tool rename ``prompts`` away and write a new ``prompts/soul.md``.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from duragent.agents.chat_files import FILES_FOLDER
from duragent.config.envvars import expand_env
from duragent.errors import ConfigError

__all__ = [
    "AGENT_FILE",
    "DEFINITION_DIRS",
    "LOCAL_POLICY_FILE",
    "POLICY_FILE",
    "PROMPT_FILES",
    "SECRET_FILES",
    "WORKSPACE_FILES",
    "AgentEntries",
    "agent_entries",
    "in_files_folder",
    "write_refusal",
]

AGENT_FILE = "agent.yaml"
"""The only manifest name the loader reads (``agents.loader.AGENT_FILENAME``)."""
PROMPT_FILES = ("SOUL.md", "SYSTEM_PROMPT.md", "INSTRUCTIONS.md")
"""The conventional prompt names, protected even when ``agent.yaml`` does not name them yet
(an owner who adds ``instructions: ./INSTRUCTIONS.md`` later must not find a tool's text)."""
DEFINITION_DIRS = ("skills", "directives", "tools")
"""Skills, directives and CLI tool scripts (``tools/<name>/run``) of an agent."""
POLICY_FILE = "policy.yaml"
LOCAL_POLICY_FILE = "policy.local.yaml"
SECRET_FILES = (POLICY_FILE, LOCAL_POLICY_FILE, ".env")
"""Covered with an empty file in the sandbox: a tool neither changes nor reads them."""
WORKSPACE_FILES = ("duragent.yaml", POLICY_FILE, LOCAL_POLICY_FILE, ".env")
"""Protected names in the workspace root and its ``.duragent`` folder."""
_SPEC_PATHS = ("soul", "system_prompt", "instructions", "skills_dir")


@dataclass(frozen=True, slots=True)
class AgentEntries:
    """The protected top-level names of one agent's folder.

    Attributes:
        read_only: shown unchanged but not writable (``agent.yaml``, prompts, skills …).
        hidden: covered by an empty read-only file (policy files, ``.env``).
        folders: the names that are folders when they exist (placeholders are made as such).
        whole_folder: a definition path names the folder itself (``skills_dir: ./``) or
            ``agent.yaml`` cannot be read: only a read-only folder keeps it unchanged.
    """

    read_only: tuple[str, ...]
    hidden: tuple[str, ...]
    folders: tuple[str, ...] = DEFINITION_DIRS
    whole_folder: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        """Every protected name."""
        return (*self.read_only, *self.hidden)


def _named_paths(agent_dir: Path) -> tuple[list[tuple[str, bool]], bool]:
    """The paths ``agent.yaml`` names (prompts, skills, CLI scripts, readmes); unreadable?

    Each path comes with whether it is a folder (``skills_dir``).
    """
    file = agent_dir / AGENT_FILE
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], False
    except (OSError, UnicodeDecodeError):
        return [], True
    with contextlib.suppress(ConfigError):  # an unset variable: the raw text names the files
        text = expand_env(text, file=file)
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError:
        return [], True
    spec = doc.get("spec") if isinstance(doc, dict) else None
    if not isinstance(spec, dict):
        return [], False
    named = [(spec[k], k == "skills_dir") for k in _SPEC_PATHS if isinstance(spec.get(k), str)]
    tools = spec.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict):
            named += [
                (tool[k], False) for k in ("command", "readme") if isinstance(tool.get(k), str)
            ]
    return named, False


def _top_entry(agent_dir: Path, value: str) -> tuple[str, bool] | None:
    """The top-level entry of the agent's folder ``value`` lies in, and whether it is a folder.

    ``.`` is the folder itself; a folder is one on the way to ``value``. None when it lies
    outside the folder (such files are not shown in the sandbox at all).
    """
    joined = os.path.normpath(os.path.join(agent_dir, os.path.expanduser(value)))
    parts = PurePosixPath(os.path.relpath(joined, agent_dir)).parts
    first = parts[0] if parts else "."
    return None if first == ".." else (first, len(parts) > 1)


def in_files_folder(agent_dir: Path, value: str) -> bool:
    """Whether the definition path ``value`` lies in the agent's ``files`` folder.

    By its name (``files/x.md``, ``./a/../files``) or, symlinks followed, by where it leads:
    a prompt there could be rewritten by any chat's tool, as could a skill or a script.
    """
    folder = Path(os.path.abspath(agent_dir))
    found = _top_entry(folder, value)
    if found is not None and found[0] == FILES_FOLDER:
        return True
    real = Path(os.path.realpath(os.path.join(folder, os.path.expanduser(value))))
    return _inside(real, Path(os.path.realpath(folder / FILES_FOLDER)))


def agent_entries(agent_dir: Path) -> AgentEntries:
    """The protected entries of ``agent_dir``: fixed names plus every one ``agent.yaml`` names."""
    named, unreadable = _named_paths(agent_dir)
    folder = Path(os.path.abspath(agent_dir))
    read_only = [AGENT_FILE, *PROMPT_FILES, *DEFINITION_DIRS]
    folders = list(DEFINITION_DIRS)
    hidden = list(SECRET_FILES)
    whole = unreadable
    for value, is_folder in named:
        found = _top_entry(folder, value)
        if found is None:
            continue
        first, nested = found
        if first in (".", FILES_FOLDER):  # the folder itself, or where tools write: no entry
            whole = True
            continue
        if first not in read_only and first not in hidden:
            read_only.append(first)
        if (nested or is_folder) and first not in folders:
            folders.append(first)
    return AgentEntries(tuple(read_only), tuple(hidden), tuple(folders), whole)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def write_refusal(target: Path, *, folder: Path, agent_dir: Path, what: str) -> str | None:
    """Why the runtime must not write ``target`` for a tool, or None when it may.

    ``folder`` is where the write belongs (``<agent>/memory``, the world memory folder). The
    write is refused when, symlinks followed, ``target`` is not inside ``folder`` reached
    *without* symlinks (a command planted a link leading elsewhere) or when it is one of the
    agent's protected entries. The message names paths relative to the agent's folder only,
    never the server's absolute paths.
    """
    real = Path(os.path.realpath(target))
    agent_real = Path(os.path.realpath(agent_dir))
    folder_abs = Path(os.path.abspath(folder))
    agent_abs = Path(os.path.abspath(agent_dir))
    if _inside(folder_abs, agent_abs):
        expected = agent_real / folder_abs.relative_to(agent_abs)
        shown = folder_abs.relative_to(agent_abs).as_posix()
    else:
        expected = Path(os.path.realpath(folder))
        shown = folder_abs.name
    if _inside(real, agent_real):
        first = real.relative_to(agent_real).parts[:1]
        entries = agent_entries(agent_dir)
        if first and first[0] in entries.names:
            return (
                f"{what} refused: the file leads to {real.relative_to(agent_real).as_posix()}, "
                "part of the agent's definition (agent.yaml, prompts, skills, directives, "
                "tools, policy, .env), which tools may not change"
            )
    if not _inside(real, expected):
        return (
            f"{what} refused: a symbolic link in {shown}/ leads outside it; remove the link "
            "(tools write only inside their own folder)"
        )
    return None
