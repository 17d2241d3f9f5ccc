"""Policy files: merging the three tiers, validating them, and writing "allow always".

The decision rules live in ``policy``; this module only reads and writes the YAML a person
also edits (``<workspace>/.duragent/policy.yaml`` → ``<agent>/policy.yaml`` →
``<agent>/policy.local.yaml``). Reads are cached while the files are unchanged; writes are
round-trip (comments and quoting survive), atomic and serialised.

``policy.local.yaml`` is the machine's file ("allow always" writes it). One the runtime cannot
use (YAML that does not parse, an entry of the wrong type, an unknown mode) no longer fails
every turn of the agent (issue 34): it is set aside to ``<agent>/_quarantine/`` with the
reason beside it (``set_aside_local_policy``), logged once, listed in ``/readyz``'s
``skipped_records`` (``local_policies_set_aside``) and by ``doctor``. It fails closed: its
allow rules never apply, but what makes the policy *stricter* is salvaged (``_salvage``) and
written to a fresh ``policy.local.yaml``, which "allow always" then adds to: every deny entry
that is a pattern, and its mode when stricter than what the other tiers give. When part of
it that may have been stricter cannot be read (no YAML, not a mapping, an unknown mode, a deny
entry that is not a pattern) the fresh file's mode is at least ``ask``: what the person's own
files do not allow is asked for until someone looks at the copy set aside. The person's files
(``policy.yaml``, the workspace's) are never moved: a mistake there still fails the agent's
turns, as before.
"""

from __future__ import annotations

import contextlib
import io
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString
from ruamel.yaml.util import load_yaml_guess_indent

from duragent.agents.protected import LOCAL_POLICY_FILE, POLICY_FILE
from duragent.config.fields import unsupported_warnings
from duragent.config.yamlio import LocatedYaml, load_yaml_text, read_text
from duragent.errors import ConfigError
from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps
from duragent.store.quarantine import (
    QUARANTINE_DIRNAME,
    REASON_SUFFIX,
    copy_aside,
    move_aside,
    set_aside,
)
from duragent.tools.policy import (
    _MODES,
    POLICY_TYPES,
    Mode,
    Notify,
    NotifyTarget,
    Policy,
    escape_glob,
)

__all__ = [
    "API_VERSION",
    "LOCAL_POLICY_FILE",
    "POLICY_FILE",
    "PolicyError",
    "load_policy",
    "local_policies_set_aside",
    "read_policy_file",
    "save_allow_always",
    "set_aside_local_policy",
]

log = logging.getLogger(__name__)

API_VERSION = "duragent/v1alpha1"
_WRITE_LOCK = threading.RLock()
"""Serialises "allow always" read-modify-writes (so two approvals at once both land) and
moving a bad ``policy.local.yaml`` aside (never a fresh file written meanwhile)."""


class PolicyError(ConfigError):
    """A policy file is malformed; the message names file, line, field, value and the fix."""


def _read(path: Path) -> tuple[str, LocatedYaml]:
    """The file's text and parsed YAML; unreadable files and syntax errors raise PolicyError."""
    try:
        text = read_text(path)
        return text, load_yaml_text(text, file=path)
    except ConfigError as exc:
        error = PolicyError(exc.reason, file=exc.file, line=exc.line, fix=exc.fix)
        raise error from None


_loaded: dict[tuple[Path, ...], tuple[tuple[tuple[int, int, int] | None, ...], Policy]] = {}
_loaded_lock = threading.Lock()
_workspace_files: dict[Path, Path] = {}
"""Agent folder → the workspace policy file ``load_policy`` last merged it with: which mode
applies without a broken ``policy.local.yaml`` when "allow always" sets one aside."""
_RACY_NS = 2_000_000_000


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What identifies one version of a file (None: absent): inode, size, mtime in ns."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def load_policy(workspace_policy_file: Path, agent_dir: Path) -> Policy:
    """Merge the three policy tiers; missing files are fine, malformed ones raise PolicyError.

    Patterns are the union of all tiers (first occurrence kept); ``mode`` comes from the most
    specific tier that sets it, else ``dangerous``. Every turn asks for the policy, so the
    merged result is reused while none of the three files changed (inode, size and mtime;
    ``save_allow_always`` replaces the file, so its own writes are always seen); an edited or
    malformed file is read again, and its error raised, on the next turn.
    """
    paths = (workspace_policy_file, agent_dir / POLICY_FILE, agent_dir / LOCAL_POLICY_FILE)
    _workspace_files[agent_dir] = workspace_policy_file
    stamps = tuple(_stamp(p) for p in paths)
    with _loaded_lock:
        known = _loaded.get(paths)
    if known is not None and known[0] == stamps:
        return known[1]
    policy = _merge_tiers(paths)
    # A file changed within the last moments could change again within the same timestamp
    # tick (the kernel's file clock is coarse) without its stamp changing: not cached yet.
    settled = time.time_ns() - _RACY_NS
    if all(stamp is None or stamp[2] < settled for stamp in stamps):
        with _loaded_lock:
            if len(_loaded) > 256:  # agents come and go with reloads; never grow without bound
                _loaded.clear()
                _workspace_files.clear()
                _workspace_files[agent_dir] = workspace_policy_file
            _loaded[paths] = (stamps, policy)
    return policy


def _merge_tiers(paths: tuple[Path, ...]) -> Policy:
    """Mode: the most specific tier that sets it; lists: unions (as the reference merges).

    ``notify.enabled`` is on when any tier turns it on (the reference's merge): a workspace
    that audits commands cannot be silenced by one agent's file.
    """
    mode: Mode = "dangerous"
    allow: dict[str, None] = {}
    deny: dict[str, None] = {}
    enabled = False
    patterns: dict[str, None] = {}
    deliveries: dict[NotifyTarget, None] = {}
    for path in paths:
        if not path.exists():
            continue
        try:
            tier_mode, tier_deny, tier_allow, notify = _tier(path)
        except PolicyError:
            if path.name != LOCAL_POLICY_FILE:
                raise  # the person's file: fixed by them, never moved
            # Fail closed, this turn included: no allow rule of it applies, what makes the
            # policy stricter does (also while it cannot be moved aside: read every turn).
            salvaged = _salvage_file(path)
            set_aside_local_policy(path.parent, paths[0])
            mode = _stricter(salvaged.mode, mode)
            deny.update(dict.fromkeys(salvaged.deny))
            continue
        mode = tier_mode or mode
        deny.update(dict.fromkeys(tier_deny))
        allow.update(dict.fromkeys(tier_allow))
        enabled = enabled or notify.enabled
        patterns.update(dict.fromkeys(notify.patterns))
        deliveries.update(dict.fromkeys(notify.deliveries))
    return Policy(
        mode=mode,
        allow=tuple(allow),
        deny=tuple(deny),
        notify=Notify(enabled, tuple(patterns), tuple(deliveries)),
    )


def _tier(path: Path) -> tuple[Mode | None, list[str], list[str], Notify]:
    """One tier read and checked as a turn uses it (PolicyError when it cannot be used)."""
    doc = _read(path)[1]
    mode, deny, allow = _parse_tier(doc)
    return mode, deny, allow, _notify(doc)


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
    with _WRITE_LOCK:
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
            _tier(path)
        except PolicyError as exc:
            problem = exc.render()
        else:
            return None
        salvaged = _salvage(data, path)
        if workspace_policy_file is None:
            workspace_policy_file = _workspace_files.get(agent_dir)
        above = _mode_above(workspace_policy_file, agent_dir)
        mode = salvaged.mode if _stricter(salvaged.mode, above) != above else None
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


def _stricter(mode: Mode | None, other: Mode) -> Mode:
    """The stricter of two modes (``other`` when ``mode`` is None)."""
    if mode is None or _STRICTNESS[mode] <= _STRICTNESS[other]:
        return other
    return mode


@dataclass(frozen=True, slots=True)
class _Salvaged:
    """What of a broken local policy makes the policy stricter."""

    deny: tuple[str, ...] = ()
    mode: Mode | None = None
    """Its mode when valid; at least ``ask`` when ``lost``."""
    lost: str | None = None
    """What could not be read that may have been stricter (a deny entry, the mode, …)."""


def _salvage(data: bytes, path: Path) -> _Salvaged:
    """The deny patterns and the mode of a policy file that cannot be used as a whole.

    Allow entries are never kept. A deny list given as one string counts as that pattern;
    an entry that is not a non-empty string is dropped and, since it may have been meant as
    a deny (``- bash: rm *`` reads as a mapping), makes the mode at least ``ask``; so does a
    file that is not YAML, not a mapping, an unknown mode or a deny that is not a list.
    """
    try:
        doc = load_yaml_text(data.decode("utf-8"), file=path)
    except (UnicodeDecodeError, ConfigError):
        return _Salvaged(mode="ask", lost="it is not valid YAML")
    fields = {} if doc.data is None else doc.data
    if not isinstance(fields, dict):
        return _Salvaged(mode="ask", lost="it is not a mapping")
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
        mode = _stricter(mode, "ask")
    return _Salvaged(tuple(dict.fromkeys(deny)), mode, "; ".join(lost) or None)


def _salvage_file(path: Path) -> _Salvaged:
    """``_salvage`` of the file as it is now (unreadable: nothing known, so ``ask``)."""
    try:
        return _salvage(path.read_bytes(), path)
    except FileNotFoundError:  # moved aside meanwhile, nothing in it stricter to keep
        return _Salvaged()
    except OSError:
        return _Salvaged(mode="ask", lost="it cannot be read")


def _mode_above(workspace_policy_file: Path | None, agent_dir: Path) -> Mode:
    """The mode that applies without ``policy.local.yaml`` (a broken tier sets none)."""
    mode: Mode = "dangerous"
    for path in (workspace_policy_file, agent_dir / POLICY_FILE):
        if path is None or not path.exists():
            continue
        try:
            mode = _tier(path)[0] or mode
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
    path: Path, moved: Path, salvaged: _Salvaged, mode: Mode | None, above: Mode
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
    floor = _stricter(mode, "ask")
    fallback = floor if _stricter(floor, above) != above else None
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
            if _parse_tier(load_yaml_text(text, file=path))[:2] == (final, list(deny)):
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


_KNOWN_FIELDS: dict[tuple[str, ...], tuple[str, ...]] = {
    (): ("apiVersion", "kind", "mode", "deny", "allow", "notify"),
    ("notify",): ("enabled", "patterns", "deliveries"),
}


def read_policy_file(path: Path) -> tuple[Policy, list[ConfigError]]:
    """One tier on its own (``doctor``): its policy, and its warnings.

    A warning for each unknown field, and for each field not acted on (``config.fields``).

    Unknown fields are not errors at run time (the reference ignores them, and a policy
    error stops every turn of the agent); ``doctor`` names them so a typo is not silent.

    Raises:
        PolicyError: the file is malformed, as ``load_policy`` would say.
    """
    doc = _read(path)[1]
    mode, deny, allow = _parse_tier(doc)
    notify = _notify(doc)
    policy = Policy(mode=mode or "dangerous", allow=tuple(allow), deny=tuple(deny), notify=notify)
    warnings: list[ConfigError] = []
    data = doc.data if isinstance(doc.data, dict) else {}
    for at, known in _KNOWN_FIELDS.items():
        section = data.get(at[0]) if at else data
        if not isinstance(section, dict):
            continue
        for key in section:
            if key not in known:
                reason = "unknown field (ignored)"
                warnings.append(
                    _invalid(doc, [*at, str(key)], reason, None, allowed=", ".join(known))
                )
    return policy, warnings + unsupported_warnings("policy", doc)


_DELIVERY_FIX = "write each delivery as '- type: log' or '- type: webhook' with 'url: https://…'"


def _notify(doc: LocatedYaml) -> Notify:
    """The tier's ``notify:`` (``_parse_tier`` has checked it is a mapping or absent)."""
    data = doc.data if isinstance(doc.data, dict) else {}
    notify = data.get("notify")
    if notify is None:
        return Notify()
    enabled = notify.get("enabled", False)
    if not isinstance(enabled, bool):
        raise _invalid(doc, ["notify", "enabled"], "must be true or false", enabled)
    patterns = _patterns(doc, notify, "patterns", at=["notify"])
    raw = notify.get("deliveries")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise _invalid(doc, ["notify", "deliveries"], "must be a list", raw, fix=_DELIVERY_FIX)
    deliveries = []
    for i, item in enumerate(raw):
        at: list[str | int] = ["notify", "deliveries", i]
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "log":
            deliveries.append(NotifyTarget("log"))
        elif kind == "webhook":
            url = item.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise _invalid(
                    doc, [*at, "url"], "must be an http:// or https:// URL", url, fix=_DELIVERY_FIX
                )
            deliveries.append(NotifyTarget("webhook", url))
        else:
            shown = kind if isinstance(item, dict) else item
            raise _invalid(doc, [*at, "type"], "invalid value", shown, allowed="log, webhook")
    return Notify(enabled, tuple(patterns), tuple(deliveries))


def _invalid(
    doc: LocatedYaml, key: list[str | int], reason: str, value: object, **extra: str
) -> PolicyError:
    field = "".join(
        f"[{k}]" if isinstance(k, int) else f".{k}" if i else k for i, k in enumerate(key)
    )
    line = doc.line_of(key)
    return PolicyError(reason, file=doc.file, line=line, field=field or None, value=value, **extra)


def _parse_tier(doc: LocatedYaml) -> tuple[Mode | None, list[str], list[str]]:
    data = {} if doc.data is None else doc.data
    if not isinstance(data, dict):
        start = "start from 'apiVersion: duragent/v1alpha1', 'kind: Policy', 'allow: []'"
        raise _invalid(
            doc, [], "a policy file must be a YAML mapping", type(data).__name__, fix=start
        )
    for key, expected in (("apiVersion", API_VERSION), ("kind", "Policy")):
        if key in data and data[key] != expected:
            raise _invalid(doc, [key], "invalid value", data[key], allowed=expected)
    mode = data.get("mode")
    if mode is not None and mode not in _MODES:
        raise _invalid(
            doc,
            ["mode"],
            "invalid value",
            mode,
            allowed=", ".join(_MODES),
            fix="ask (approve what is not allowed) or restrict (refuse it); dangerous runs "
            "everything not denied",
        )
    if data.get("notify") is not None and not isinstance(data["notify"], dict):
        raise _invalid(doc, ["notify"], "must be a mapping of keys to values", data["notify"])
    return mode, _patterns(doc, data, "deny"), _patterns(doc, data, "allow")


def _patterns(
    doc: LocatedYaml, data: dict[str, Any], key: str, *, at: list[str | int] | None = None
) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    where: list[str | int] = [*(at or []), key]
    fix = f"write one quoted pattern per line under '{key}:', e.g.  - \"bash:ls *\""
    if not isinstance(value, list):
        shown = type(value).__name__ if isinstance(value, dict) else value
        raise _invalid(doc, where, "must be a list of patterns", shown, fix=fix)
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item:
            reason = "a pattern must be a non-empty string"
            raise _invalid(doc, [*where, index], reason, item, fix=fix)
    return list(value)


def save_allow_always(
    agent_dir: Path, policy_type: str, invocation: str, ops: FileOps = OS_FILE_OPS
) -> str:
    """Append ``<policy_type>:<invocation>`` (escaped) to the agent's ``policy.local.yaml``.

    The escaped pattern has no wildcards, so it allows exactly the approved command and no
    other. The file is edited round-trip (comments, quoting and order survive), ``mode`` is
    never written (a later change of the agent's mode must still apply), and the write is
    atomic and serialised, so a crash or two approvals at once cannot lose the file or an
    entry. Returns the pattern, whether it was written now or was already present.
    """
    if policy_type not in POLICY_TYPES:
        raise ValueError(f"unknown policy type {policy_type!r}; expected {sorted(POLICY_TYPES)}")
    command = invocation.strip() if policy_type == "bash" else invocation
    pattern = f"{policy_type}:{escape_glob(command)}"
    path = agent_dir / LOCAL_POLICY_FILE
    with _WRITE_LOCK:
        # A file no turn can use is set aside first; the rule goes into the fresh file (with
        # what it kept of the old one's deny rules and mode) or starts a new one.
        set_aside_local_policy(agent_dir)
        yaml, doc = _load_round_trip(path)
        allow = doc.get("allow")
        if allow is None:
            allow = doc["allow"] = CommentedSeq()
        if not isinstance(allow, list):
            raise PolicyError("must be a list of patterns", file=path, field="allow", value=allow)
        if pattern in (str(item) for item in allow):
            return pattern
        if not allow and isinstance(allow, CommentedSeq):
            allow.fa.set_block_style()  # 'allow: []' would otherwise grow as a flow list
        allow.append(DoubleQuotedScalarString(pattern))
        out = io.StringIO()
        yaml.dump(doc, out)
        text = out.getvalue()
        _check_round_trip(path, text, pattern)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(
            path, text.encode(), ops, keep_mode=True, new_file_mode=0o644, hidden_temp=True
        )
    return pattern


def _check_round_trip(path: Path, text: str, pattern: str) -> None:
    """Refuse a write the runtime could not read back with ``pattern`` in it.

    Every later turn of the agent reads this file: an entry that does not survive a read
    (a character YAML cannot carry, an encoding error) would break them all. The file is
    left as it was.
    """
    try:
        text.encode("utf-8")
        doc = load_yaml_text(text, file=path)
        _, _, allow = _parse_tier(doc)
        _notify(doc)  # the whole file must read back as a turn reads it
    except ConfigError as exc:
        problem = f"line {exc.line}: {exc.reason}" if exc.line else exc.reason
    except (UnicodeError, ValueError) as exc:
        problem = str(exc)
    else:
        if pattern in allow:
            return
        problem = "the pattern read back differs from the one written"
    raise PolicyError(
        f"cannot save 'allow always' for this command: {problem}",
        file=path,
        fix="the file was left unchanged; approve with allow_once, or add the pattern by hand",
    )


def _load_round_trip(path: Path) -> tuple[YAML, CommentedMap]:
    """The file as a round-trip document (a fresh one if it is missing or empty)."""
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 1 << 16  # never fold a long command across lines
    text, doc = _read(path) if path.exists() else ("", None)
    if doc is None or doc.data is None:
        yaml.indent(mapping=2, sequence=4, offset=2)  # the scaffolded files' "  - item" style
        return yaml, CommentedMap([("apiVersion", API_VERSION), ("kind", "Policy")])
    if not isinstance(doc.data, dict):
        raise _invalid(doc, [], "a policy file must be a YAML mapping", type(doc.data).__name__)
    # Keep the file's own list indentation so the diff is only the new line.
    try:
        _, indent, offset = load_yaml_guess_indent(text)
        data: CommentedMap = yaml.load(text)
    except YAMLError as exc:  # ruamel is stricter than PyYAML, e.g. about duplicate keys
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = mark.line + 1 if mark is not None else None
        raise PolicyError(f"cannot edit this YAML: {problem}", file=path, line=line) from None
    yaml.indent(mapping=2, sequence=indent or 4, offset=2 if offset is None else offset)
    return yaml, data
