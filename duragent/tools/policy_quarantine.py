"""A ``policy.local.yaml`` the runtime cannot use: set aside, failing closed (issue 34).

``policy.local.yaml`` is the machine's file ("allow always" writes it). One the runtime cannot
use (YAML that does not parse, an entry of the wrong type, an unknown mode) no longer fails
every turn of the agent: it is set aside to ``<agent>/_quarantine/`` with the reason beside it
(``set_aside_local_policy``), logged once, listed in ``/readyz``'s ``skipped_records``
(``local_policies_set_aside``) and by ``doctor``. It fails closed: its allow rules never
apply, but what makes the policy *stricter* is salvaged (``_salvage``) and written to a fresh
``policy.local.yaml``, which "allow always" then adds to: every deny entry that is a pattern,
and its mode when stricter than what the other tiers give. When part of it that may have been
stricter cannot be read (no YAML, not a mapping, an unknown mode, a deny entry that is not a
pattern) the fresh file's mode is at least ``ask``: what the person's own files do not allow
is asked for until someone looks at the copy set aside. The person's files (``policy.yaml``,
the workspace's) are never moved: a mistake there still fails the agent's turns, as before.

Kept apart from ``policy_files`` (merging and "allow always") because this is a recovery path
with its own rules (what counts as stricter, what the fresh file says); both take
``LOCAL_POLICY_LOCK`` so neither ever sees the other's half-done write.
"""

from __future__ import annotations

import contextlib
import io
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from duragent.agents.protected import LOCAL_POLICY_FILE, POLICY_FILE
from duragent.config.yamlio import load_yaml_text
from duragent.errors import ConfigError
from duragent.store.atomic import atomic_write
from duragent.store.quarantine import (
    QUARANTINE_DIRNAME,
    REASON_SUFFIX,
    copy_aside,
    move_aside,
    set_aside,
)
from duragent.tools.policy import _MODES, Mode
from duragent.tools.policy_tier import API_VERSION, PolicyError, parse_tier, read_tier

__all__ = [
    "LOCAL_POLICY_LOCK",
    "Salvaged",
    "forget_workspace_policies",
    "local_policies_set_aside",
    "note_workspace_policy",
    "salvage_file",
    "set_aside_local_policy",
    "stricter",
]

log = logging.getLogger(__name__)

LOCAL_POLICY_LOCK = threading.RLock()
"""Serialises "allow always" read-modify-writes (so two approvals at once both land) and
moving a bad ``policy.local.yaml`` aside (never a fresh file written meanwhile)."""

_workspace_files: dict[Path, Path] = {}
"""Agent folder → the workspace policy file ``load_policy`` last merged it with: which mode
applies without a broken ``policy.local.yaml`` when "allow always" sets one aside."""


def note_workspace_policy(agent_dir: Path, workspace_policy_file: Path) -> None:
    """Remember the workspace policy file ``load_policy`` merges this agent's tiers with."""
    _workspace_files[agent_dir] = workspace_policy_file


def forget_workspace_policies() -> None:
    """Forget every agent's workspace policy file (``load_policy`` keeps its caches bounded)."""
    _workspace_files.clear()


def set_aside_local_policy(
    agent_dir: Path, workspace_policy_file: Path | None = None
) -> Path | None:
    """Set the agent's ``policy.local.yaml`` aside if it cannot be used; where it went.

    What makes the policy stricter (``_salvage``: its deny patterns, its mode if stricter
    than what ``workspace_policy_file`` and ``policy.yaml`` give; None: the workspace file
    ``load_policy`` last used for this agent) is written to a fresh ``policy.local.yaml``
    (atomic; the original is copied aside first, so a crash cannot lose it); with nothing
    to keep, the file is moved aside. Read again under the write lock, so a fresh file
    "allow always" just wrote is never touched. None: absent, valid, unreadable
    (``OSError``: the disk's fault, left in place) or it could not be set aside (logged;
    ``load_policy`` then salvages it on every read until it is fixed).
    """
    path = agent_dir / LOCAL_POLICY_FILE
    folder = agent_dir / QUARANTINE_DIRNAME
    with LOCAL_POLICY_LOCK:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:  # the disk's fault (or a folder of that name), not the record's
            log.error(
                "%s cannot be read (its allow rules do not apply, the mode is at least ask; "
                "left as it is): %s",
                path, exc,
            )  # fmt: skip
            return None
        try:
            read_tier(path)
        except PolicyError as exc:
            problem = exc.render()
        else:
            return None
        salvaged = _salvage(data, path)
        if workspace_policy_file is None:
            workspace_policy_file = _workspace_files.get(agent_dir)
        above = _mode_above(workspace_policy_file, agent_dir)
        mode = salvaged.mode if stricter(salvaged.mode, above) != above else None
        kept = _kept(salvaged.deny, mode, salvaged.lost)
        reason = f"{problem}; {kept}" if kept else problem
        moved = None
        try:
            if kept:
                moved = copy_aside(path, data, folder, reason)
                fresh = _salvaged_file(path, moved, salvaged, mode, above)
                atomic_write(path, fresh, keep_mode=True, new_file_mode=0o644, hidden_temp=True)
            else:
                moved = move_aside(path, folder, reason)
        except OSError as exc:
            if kept and moved is not None:  # left in place: no second copy on the next read
                for leftover in (moved, moved.with_name(moved.name + REASON_SUFFIX)):
                    with contextlib.suppress(OSError):
                        leftover.unlink(missing_ok=True)
            log.error(
                "%s could not be used (its allow rules do not apply) nor set aside: %s; %s",
                path, exc, reason,
            )  # fmt: skip
            return None
    if kept:
        log.error(
            "%s could not be used and was copied to %s; its allow rules no longer apply, %s: %s",
            path, moved, kept, problem,
        )  # fmt: skip
    else:
        log.error(
            "%s could not be used and was moved to %s; its rules no longer apply, none "
            "would make the policy stricter (the next 'allow always' starts a new file): %s",
            path, moved, problem,
        )  # fmt: skip
    return moved


_STRICTNESS: dict[Mode, int] = {"dangerous": 0, "ask": 1, "restrict": 2}
"""``policy``'s modes, least to most strict: ``dangerous`` runs what is not denied, ``ask``
pauses what is not allowed for a person's approval, ``restrict`` refuses it."""


def stricter(mode: Mode | None, other: Mode) -> Mode:
    """The stricter of two modes (``other`` when ``mode`` is None)."""
    if mode is None or _STRICTNESS[mode] <= _STRICTNESS[other]:
        return other
    return mode


@dataclass(frozen=True, slots=True)
class Salvaged:
    """What of a broken local policy makes the policy stricter."""

    deny: tuple[str, ...] = ()
    mode: Mode | None = None
    """Its mode when valid; at least ``ask`` when ``lost``."""
    lost: str | None = None
    """What could not be read that may have been stricter (a deny entry, the mode, …)."""


def _salvage(data: bytes, path: Path) -> Salvaged:
    """The deny patterns and the mode of a policy file that cannot be used as a whole.

    Allow entries are never kept. A deny list given as one string counts as that pattern;
    an entry that is not a non-empty string is dropped and, since it may have been meant as
    a deny (``- bash: rm *`` reads as a mapping), makes the mode at least ``ask``; so does a
    file that is not YAML, not a mapping, an unknown mode or a deny that is not a list.
    """
    try:
        doc = load_yaml_text(data.decode("utf-8"), file=path)
    except (UnicodeDecodeError, ConfigError):
        return Salvaged(mode="ask", lost="it is not valid YAML")
    fields = {} if doc.data is None else doc.data
    if not isinstance(fields, dict):
        return Salvaged(mode="ask", lost="it is not a mapping")
    lost: list[str] = []
    mode: Mode | None = None
    raw_mode = fields.get("mode")
    if raw_mode in _MODES:
        mode = raw_mode
    elif raw_mode is not None:
        lost.append(f"its mode {str(raw_mode)[:40]!r} is not a mode")
    raw = fields.get("deny")
    deny: list[str] = []
    if isinstance(raw, str) and raw:
        deny.append(raw)
    elif isinstance(raw, list):
        deny.extend(item for item in raw if isinstance(item, str) and item)
        dropped = len(raw) - len(deny)
        if dropped:
            lost.append(f"{dropped} deny entr{'y is' if dropped == 1 else 'ies are'} not a pattern")
    elif raw is not None:
        lost.append("its deny is not a list")
    if lost:
        mode = stricter(mode, "ask")
    return Salvaged(tuple(dict.fromkeys(deny)), mode, "; ".join(lost) or None)


def salvage_file(path: Path) -> Salvaged:
    """``_salvage`` of the file as it is now (unreadable: nothing known, so ``ask``)."""
    try:
        return _salvage(path.read_bytes(), path)
    except FileNotFoundError:  # moved aside meanwhile, nothing in it stricter to keep
        return Salvaged()
    except OSError:
        return Salvaged(mode="ask", lost="it cannot be read")


def _mode_above(workspace_policy_file: Path | None, agent_dir: Path) -> Mode:
    """The mode that applies without ``policy.local.yaml`` (a broken tier sets none)."""
    mode: Mode = "dangerous"
    for path in (workspace_policy_file, agent_dir / POLICY_FILE):
        if path is None or not path.exists():
            continue
        try:
            mode = read_tier(path)[0] or mode
        except PolicyError:
            continue  # its agent's turns fail until it is fixed
    return mode


def _kept(deny: tuple[str, ...], mode: Mode | None, lost: str | None) -> str:
    """What the fresh file keeps, in words ("" when nothing)."""
    parts = []
    if deny:
        parts.append(f"{len(deny)} deny rule{'s' if len(deny) != 1 else ''}")
    if mode is not None:
        parts.append(f"mode {mode}" + (f" (at least ask: {lost})" if lost else ""))
    return f"kept in a fresh {LOCAL_POLICY_FILE}: {' and '.join(parts)}" if parts else ""


def _salvaged_file(
    path: Path, moved: Path, salvaged: Salvaged, mode: Mode | None, above: Mode
) -> bytes:
    """The fresh ``policy.local.yaml``: the kept rules, and a comment saying where from.

    ``mode``: the salvaged mode if stricter than ``above`` (what the other tiers give), else
    None. Checked as a turn reads it; should a kept pattern not read back, the file keeps no
    deny rule and a mode of at least ``ask`` instead (when that is stricter than ``above``).
    """
    lost = salvaged.lost
    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)  # the scaffolded files' "  - item" style
    yaml.width = 1 << 16
    where = moved.relative_to(path.parent) if moved.is_relative_to(path.parent) else moved
    note = (
        f"Written by duragent: the {LOCAL_POLICY_FILE} that was here could not be used; it is\n"
        f"kept as {where} (why: {where.name}.reason.txt beside it).\n"
        "Only what makes the policy stricter was kept (its deny rules, its mode if stricter),\n"
        "none of its allow rules. Fix the copy and merge back what you still want."
    )
    if lost:
        note += f"\nAt least mode ask until then: {lost}."
    floor = stricter(mode, "ask")
    fallback = floor if stricter(floor, above) != above else None
    for deny, final in ((salvaged.deny, mode), ((), fallback)):
        doc = CommentedMap([("apiVersion", API_VERSION), ("kind", "Policy")])
        doc.yaml_set_start_comment(note)
        if final is not None:
            doc["mode"] = final
        if deny:
            rules = CommentedSeq(DoubleQuotedScalarString(p) for p in deny)
            rules.fa.set_block_style()
            doc["deny"] = rules
        out = io.StringIO()
        yaml.dump(doc, out)
        text = out.getvalue()
        try:
            if parse_tier(load_yaml_text(text, file=path))[:2] == (final, list(deny)):
                return text.encode("utf-8")
        except (ConfigError, UnicodeError):
            pass
    raise AssertionError("a policy of a mode alone always reads back")  # pragma: no cover


def local_policies_set_aside(agent_dirs: Iterable[Path]) -> list[dict[str, str]]:
    """Each moved-aside ``policy.local.yaml`` of these agents, with its reason (``/readyz``)."""
    return [
        {"record": str(path), "reason": reason, "moved_to": str(path)}
        for agent_dir in agent_dirs
        for path, reason in set_aside(agent_dir / QUARANTINE_DIRNAME, "policy.local*.yaml").items()
    ]
