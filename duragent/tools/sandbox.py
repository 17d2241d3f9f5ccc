"""Where tool processes run: as the server's own (``trust``) or inside ``bwrap`` (``bubblewrap``).

The one place a tool's command line is turned into a confined one: ``Confinement.apply`` takes
the argv, working directory and environment a tool would start and returns the argv and
environment to start instead. ``_process.run_process`` calls it for every command it starts
(``bash``, CLI tools, and any later launcher), so no tool can forget it.

What a ``bubblewrap`` process sees (an allowlist, so what is not named is not there):

- the **system** read-only: ``/usr``, ``/bin``, ``/sbin``, ``/lib*``, ``/etc``, ``/opt``, the
  Python that runs duragent (``.py`` CLI tools use it), and the workspace's ``tools`` folder;
  a fresh ``/proc``, a minimal ``/dev`` and an empty private ``/tmp`` for the call;
- the **agent's folder** writable, except its definition (``agents.protected``; the mounts
  are ``sandbox_mounts``'): ``agent.yaml``, ``SOUL.md``, ``SYSTEM_PROMPT.md``,
  ``INSTRUCTIONS.md``, ``skills/``, ``directives/``, ``tools/`` and every top-level entry
  ``agent.yaml`` names are read-only mounts; its
  ``policy.yaml``, ``policy.local.yaml`` and ``.env`` are covered by an empty read-only file.
  Missing ones are created empty first, so the sandbox cannot create one either (a tool must
  never write its own permissions or prompts). If one is a symlink, or ``agent.yaml`` names
  the folder itself, the whole folder is read-only. A file the *server* replaces by rename
  while a sandboxed process runs loses its cover for that process (the kernel detaches a
  mount whose file is replaced outside it): such a process can then change the new file;
- of the agent's **received files** (``files/<session id>/``, ``agents.chat_files``) only
  the calling session's own folder, writable; ``files`` itself is an empty read-only tmpfs,
  so another chat's documents are not there at all. Under ``trust`` there is no such
  boundary: a command sees every chat's files, as it sees the whole machine;
- a **per-session scratch folder** (``<workspace>/scratch/<session_id>``), writable, kept
  between calls, and the process's ``HOME``;
- nothing else of the workspace: sessions, other agents (absent, not just read-only),
  schedules, policies, directives, logs, world memory, ``duragent.yaml`` and ``.env`` are not
  mounted (and covered when a layout puts one inside a mounted folder);
- an **environment** of ``PATH``, ``LANG``, ``LANGUAGE``, ``LC_*``, ``TERM``, ``TZ`` plus the
  names in ``sandbox.env``; a ``*`` there never passes a name that looks like a secret
  (``*_TOKEN``, ``*_KEY``, ``*SECRET*`` …: such a variable must be named in full);
- the **network** only with ``sandbox.network: true``; otherwise a private namespace with
  nothing but its own loopback (the host's ``127.0.0.1`` services are out of reach too).

Every namespace bwrap offers is new (pid, ipc, uts, cgroup, user), every capability is dropped
(duragent may run as root), and the process dies with its parent. The process group, reaper and
timeout of ``_process`` apply unchanged: bwrap is the group's leader.

Fail closed: nothing here falls back to running unconfined. ``serve`` probes the sandbox when it
starts (``probe``) and refuses to start when bwrap is missing or cannot create its namespaces.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from duragent.agents.protected import LOCAL_POLICY_FILE, agent_entries
from duragent.config.workspace import SandboxConfig, WorkspacePaths
from duragent.errors import ConfigError
from duragent.tools.sandbox_mounts import chat_files_mounts, cover_secrets, protect_definition

__all__ = [
    "BASE_ENV",
    "INSTALL_HINT",
    "TRUST",
    "Confinement",
    "Sandbox",
    "check",
    "for_workspace",
    "looks_secret",
    "probe",
    "prune_scratch",
]

log = logging.getLogger(__name__)

SandboxMode = Literal["trust", "bubblewrap", "docker"]

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
"""Shown read-only when present (a symlink, as ``/bin`` → ``usr/bin`` is, stays a symlink)."""
SCRATCH_GRACE_SECONDS = 3600.0
"""A scratch folder this recent is never swept (see ``prune_scratch``)."""

BASE_ENV = ("PATH", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ")
"""Variables every sandboxed process gets (when the server has them)."""
_SECRET = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION")
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
_PROBE_SECONDS = 20.0
DOCKER_FIX = "set sandbox.mode to bubblewrap (the same isolation without a Docker daemon) or trust"


def looks_secret(name: str) -> bool:
    """Whether a variable's name suggests it holds a credential (``GITHUB_TOKEN``, ``AWS_…KEY``)."""
    return _SECRET.search(name.upper()) is not None


def _python_homes() -> tuple[Path, ...]:
    """The interpreter duragent runs on, which ``.py`` CLI tools are started with."""
    homes = {Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent}
    return tuple(sorted(homes))


@dataclass(frozen=True, slots=True, kw_only=True)
class Sandbox:
    """The workspace's sandbox settings (``sandbox:`` in ``duragent.yaml``), resolved once.

    Args:
        mode: ``trust`` (run as is), ``bubblewrap``, or ``docker`` (refused: every command
            fails to start, and ``serve`` refuses to start first, see ``check``).
        network: whether confined processes share the host's network.
        env: extra variable names (or ``PREFIX_*``) passed in besides ``BASE_ENV``.
        scratch_root: where per-session scratch folders are made.
        readable: folders shown read-only besides the system (the workspace's ``tools``).
        hidden: workspace paths never shown, covered if a mounted folder contains one.
        bwrap: the ``bwrap`` program (found on ``PATH`` when not given).
    """

    mode: SandboxMode = "trust"
    network: bool = False
    env: tuple[str, ...] = ()
    scratch_root: Path | None = None
    readable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    bwrap: str | None = None
    python_homes: tuple[Path, ...] = field(default_factory=_python_homes)

    @property
    def confines(self) -> bool:
        """Whether processes run confined (anything but ``trust``)."""
        return self.mode != "trust"

    def program(self) -> str | None:
        """The absolute path of ``bwrap``, or None when it is not installed."""
        if self.bwrap is None:
            return shutil.which("bwrap")
        return self.bwrap if os.access(self.bwrap, os.X_OK) else None

    def confine(self, agent_dir: Path, session_id: str, *readable: Path) -> Confinement:
        """The confinement of one call by ``session_id``'s agent (``readable``: its script)."""
        return Confinement(self, agent_dir, session_id, tuple(readable))

    def filter_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """The variables a confined process may see (see module docstring)."""
        wanted = (*BASE_ENV, *self.env)
        exact = {name for name in wanted if not name.endswith("*")}
        prefixes = [name for name in wanted if name.endswith("*")]
        return {
            name: value
            for name, value in env.items()
            if name in exact
            or (
                not looks_secret(name)
                and any(fnmatch.fnmatchcase(name, prefix) for prefix in prefixes)
            )
        }


TRUST = Sandbox()
"""No confinement: tools run as the server's own processes (the reference's only mode)."""


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


@dataclass(frozen=True, slots=True)
class Confinement:
    """One call's confinement: the workspace's sandbox, the agent and the session it runs for."""

    sandbox: Sandbox
    agent_dir: Path
    session_id: str
    readable: tuple[Path, ...] = ()

    def apply(
        self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        """The argv and environment that start ``argv`` confined (as is under ``trust``).

        ``argv[0]`` must be an absolute path (``_process`` resolves it first, so a missing
        program is reported as such, not as bwrap's exit status).

        Raises:
            OSError: bwrap is not installed, or the scratch folder cannot be made: the
                command is not started (never run unconfined instead).
        """
        sandbox = self.sandbox
        if not sandbox.confines:
            return list(argv), dict(env)
        if sandbox.mode != "bubblewrap":
            raise PermissionError(f"sandbox.mode {sandbox.mode} is not supported: {DOCKER_FIX}")
        bwrap = sandbox.program()
        if bwrap is None:
            raise FileNotFoundError(
                f"sandbox.mode is bubblewrap but bwrap is missing: {INSTALL_HINT}"
            )
        agent_dir = Path(os.path.abspath(self.agent_dir))
        scratch = self._scratch()
        args = [bwrap, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
        if sandbox.network:
            args.append("--share-net")
        for system in SYSTEM_PATHS:
            if os.path.islink(system):
                args += ["--symlink", os.readlink(system), system]
            elif os.path.isdir(system):
                args += ["--ro-bind", system, system]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        if sandbox.network:
            resolv = os.path.realpath("/etc/resolv.conf")  # e.g. systemd's stub under /run
            if not resolv.startswith("/etc/") and os.path.exists(resolv):
                args += ["--ro-bind", resolv, resolv]
        mounted = [agent_dir]
        shown = [Path(s) for s in SYSTEM_PATHS]
        for path in (*sandbox.python_homes, *sandbox.readable, *self.readable):
            absolute = Path(os.path.abspath(path))
            if absolute.exists() and not any(_inside(absolute, s) for s in shown):
                shown.append(absolute)
                args += ["--ro-bind", str(absolute), str(absolute)]
                mounted.append(absolute)
        entries = agent_entries(agent_dir)
        covers = protect_definition(agent_dir, entries)
        whole = entries.whole_folder or covers is None
        args += ["--ro-bind" if whole else "--bind", str(agent_dir), str(agent_dir)]
        remount: list[str] = []
        for hidden in sandbox.hidden:
            hidden = Path(os.path.abspath(hidden))
            if not any(_inside(hidden, m) for m in mounted) or not hidden.exists():
                continue
            if hidden.is_dir():
                args += ["--tmpfs", str(hidden)]
                remount += ["--remount-ro", str(hidden)]
            else:
                args += ["--ro-bind", "/dev/null", str(hidden)]
        args += covers or cover_secrets(agent_dir, entries)
        files, files_remount = chat_files_mounts(agent_dir, self.session_id, writable=not whole)
        args += files
        remount += files_remount
        args += ["--bind", str(scratch), str(scratch), *remount, "--remount-ro", "/"]
        args += ["--chdir", os.path.abspath(cwd), "--", *argv]
        confined = sandbox.filter_env(env)
        confined["HOME"] = str(scratch)
        return args, confined

    def _scratch(self) -> Path:
        root = self.sandbox.scratch_root
        if root is None:
            raise FileNotFoundError("the sandbox has no scratch folder (a bug: scratch_root)")
        if not _SESSION_ID.fullmatch(self.session_id) or set(self.session_id) == {"."}:
            raise PermissionError(f"not a session id usable as a folder name: {self.session_id!r}")
        scratch = Path(os.path.abspath(root)) / self.session_id
        scratch.mkdir(parents=True, exist_ok=True, mode=0o700)
        return scratch


def probe(sandbox: Sandbox) -> str | None:
    """Why confined commands cannot run here, or None when a trial command ran confined.

    The trial runs ``true`` with the very options real calls use (namespaces, mounts, dropped
    capabilities) in a throw-away agent folder, so "works" means what a tool call needs.
    """
    if not sandbox.confines:
        return None
    if sandbox.mode != "bubblewrap":
        return (
            f"sandbox.mode {sandbox.mode} is not supported (duragent's sandbox is bubblewrap; "
            "a Docker daemon is not needed)"
        )
    bwrap = sandbox.program()
    if bwrap is None:
        return f"bwrap is not installed: {INSTALL_HINT}"
    true = shutil.which("true") or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="duragent-sandbox-probe-") as tmp:
        agent = Path(tmp) / "agent"
        agent.mkdir()
        trial = Sandbox(
            mode=sandbox.mode,
            network=sandbox.network,
            scratch_root=Path(tmp) / "scratch",
            bwrap=bwrap,
            python_homes=(),
        )
        try:
            argv, env = trial.confine(agent, "probe").apply([true], cwd=agent, env=os.environ)
            done = subprocess.run(
                argv, env=env, capture_output=True, timeout=_PROBE_SECONDS, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{bwrap} could not be run: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.returncode}"
        return f"{bwrap} cannot create its sandbox here: {said}"
    return None


def for_workspace(config: SandboxConfig, paths: WorkspacePaths) -> Sandbox:
    """The sandbox ``duragent.yaml`` asks for (not yet probed: see ``check``)."""
    if config.mode == "trust":
        return TRUST
    ws = paths.workspace
    return Sandbox(
        mode=config.mode,
        network=config.network,
        env=config.env,
        scratch_root=ws / "scratch",
        readable=(paths.tools,),
        hidden=(
            paths.sessions,
            paths.schedules,
            ws / "processes",
            ws / "scratch",
            paths.logs,
            paths.policy,
            paths.policy.with_name(LOCAL_POLICY_FILE),
            paths.directives,
            paths.world_memory,
            paths.config_file,
            paths.root / ".env",
            ws / ".env",
        ),
    )


def check(sandbox: Sandbox, config_file: Path) -> None:
    """Refuse a sandbox that cannot confine commands here (``serve`` calls it when starting).

    Raises:
        ConfigError: naming ``sandbox.mode`` in ``config_file`` and the fix.
    """
    problem = probe(sandbox)
    if problem is None:
        return
    if sandbox.mode == "docker":
        fix = DOCKER_FIX
    else:
        fix = (
            f"{INSTALL_HINT} and make sure user namespaces are allowed, or set sandbox.mode: trust"
        )
    raise ConfigError(
        f"{problem}; tools will not run unconfined", file=config_file, field="sandbox.mode", fix=fix
    )


def prune_scratch(sandbox: Sandbox, session_ids: Callable[[], Iterable[str]]) -> list[str]:
    """Remove the scratch folders of sessions that no longer exist; their ids.

    A scratch folder lives as long as its session (an ended session may be resumed); once the
    session is deleted, nothing can use it again. Run by the server's hourly sweep.
    ``session_ids``: the store's sessions (asked once per sweep; with PostgreSQL no session
    has a folder, so the store is asked, never the disk). A folder changed within the last
    ``SCRATCH_GRACE_SECONDS`` is kept: its session may have begun after the store was asked.
    """
    root = sandbox.scratch_root
    if root is None or not root.is_dir():
        return []
    known = set(session_ids())
    recent = time.time() - SCRATCH_GRACE_SECONDS
    removed = []
    for folder in sorted(root.iterdir()):
        try:
            if not folder.is_dir() or folder.name in known or folder.stat().st_mtime > recent:
                continue
            shutil.rmtree(folder)
        except OSError as exc:
            log.warning("cannot remove the scratch folder %s: %s", folder, exc)
            continue
        removed.append(folder.name)
    return removed
