"""Policy files: merging the three tiers and writing "allow always".

The decision rules live in ``policy``; this module only reads and writes the YAML a person
also edits (``<workspace>/.duragent/policy.yaml`` → ``<agent>/policy.yaml`` →
``<agent>/policy.local.yaml``). Reads are cached while the files are unchanged; writes are
round-trip (comments and quoting survive), atomic and serialised. One tier is read and
checked by ``policy_tier``; a ``policy.local.yaml`` the runtime cannot use is set aside by
``policy_quarantine`` (issue 34), failing closed: none of its allow rules apply, what makes
the policy stricter is kept. The person's files (``policy.yaml``, the workspace's) are never
moved: a mistake there still fails the agent's turns.
"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString
from ruamel.yaml.util import load_yaml_guess_indent

from duragent.agents.protected import LOCAL_POLICY_FILE, POLICY_FILE
from duragent.config.yamlio import load_yaml_text
from duragent.errors import ConfigError
from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps
from duragent.tools.policy import POLICY_TYPES, Mode, Notify, NotifyTarget, Policy, escape_glob
from duragent.tools.policy_quarantine import (
    LOCAL_POLICY_LOCK,
    forget_workspace_policies,
    local_policies_set_aside,
    note_workspace_policy,
    salvage_file,
    set_aside_local_policy,
    stricter,
)
from duragent.tools.policy_tier import (
    API_VERSION,
    PolicyError,
    field_error,
    parse_notify,
    parse_tier,
    read_policy_file,
    read_tier,
    read_yaml,
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

_loaded: dict[tuple[Path, ...], tuple[tuple[tuple[int, int, int] | None, ...], Policy]] = {}
_loaded_lock = threading.Lock()
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
    note_workspace_policy(agent_dir, workspace_policy_file)
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
                forget_workspace_policies()
                note_workspace_policy(agent_dir, workspace_policy_file)
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
            tier_mode, tier_deny, tier_allow, notify = read_tier(path)
        except PolicyError:
            if path.name != LOCAL_POLICY_FILE:
                raise  # the person's file: fixed by them, never moved
            # Fail closed, this turn included: no allow rule of it applies, what makes the
            # policy stricter does (also while it cannot be moved aside: read every turn).
            salvaged = salvage_file(path)
            set_aside_local_policy(path.parent, paths[0])
            mode = stricter(salvaged.mode, mode)
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
    with LOCAL_POLICY_LOCK:
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
        _, _, allow = parse_tier(doc)
        parse_notify(doc)  # the whole file must read back as a turn reads it
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
    text, doc = read_yaml(path) if path.exists() else ("", None)
    if doc is None or doc.data is None:
        yaml.indent(mapping=2, sequence=4, offset=2)  # the scaffolded files' "  - item" style
        return yaml, CommentedMap([("apiVersion", API_VERSION), ("kind", "Policy")])
    if not isinstance(doc.data, dict):
        raise field_error(doc, [], "a policy file must be a YAML mapping", type(doc.data).__name__)
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
