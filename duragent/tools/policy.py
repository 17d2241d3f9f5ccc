"""Which tool calls may run, which need a person's approval, and which are refused.

A policy is a mode plus two pattern lists, merged from three files (least to most specific):
``<workspace>/.duragent/policy.yaml`` → ``<agent>/policy.yaml`` → ``<agent>/policy.local.yaml``.

- ``dangerous`` (the default, as in the reference): everything not denied runs.
- ``ask``: the allow list runs; anything else pauses for approval.
- ``restrict``: the allow list runs; anything else is refused.

The deny list is checked first, in every mode. A pattern is ``type:glob`` (``bash:ls *``,
``builtin:web:fetch``, ``cli:deploy``); the type may be ``*``, and a pattern whose first
``:``-separated word is not a tool type applies to every type (``ls -la``, ``web:fetch``).

Unlike the reference, whose substring matching let ``bash:ls *`` allow ``rm -rf x; ls y``,
matching is **anchored**: the glob (``fnmatch`` syntax, case-sensitive) must match the whole
text; as a convenience a glob ending in `` *`` also matches without it (``bash:ls *`` allows a
bare ``ls``, and ``bash:rm *`` denies one). A bash command is split into segments
(``shell_segments``) and **every** segment must be allowed; **any** denied segment denies the
command. Three further rules keep patterns honest:

- A segment that redirects output to a file is allowed only by a pattern that itself contains
  ``>``, so ``bash:echo *`` does not allow ``echo x > /etc/passwd``.
- A command is matched against globs only when it is *fully understood*: the splitter reads
  it without a problem and ``shell_grammar`` models every construct in it (plain, quoted and
  ``$name`` words, substitutions, pipes, lists, ``if``/``for``/``while``, simple redirects).
  Anything else — unbalanced quotes, functions, arithmetic, ``[[ ]]``, ``${x:=…}``, builtins
  that evaluate their arguments (``eval``, ``read``, ``printf -v`` …), a command longer than
  ``MAX_ANALYSED_BYTES`` — needs approval in ``ask``, is refused in ``restrict``, and in
  ``dangerous`` runs unless a deny pattern matches the raw text or one of the segments found.
  A ``*`` in a pattern may match a word only because the word is then known to be inert.
- A pattern without wildcards allows the *whole* command it spells, even if that command has
  several segments: this is what "allow always" writes (metacharacters escaped as ``[*]``), so
  the approved command runs again unasked, and nothing else does.

Deny patterns also see each segment without leading ``NAME=value`` words (``X=1 rm -rf /``),
but a deny list is a speed bump, not a sandbox: ``/bin/rm`` or ``$(printf rm)`` dodge
``bash:rm *``. Use ``ask`` or ``restrict`` where it matters.
"""

from __future__ import annotations

import enum
import fnmatch
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from duragent.tools.shell_grammar import MAX_ANALYSED_BYTES, unmodelled
from duragent.tools.shell_segments import Segment, SplitResult, split_command

__all__ = [
    "POLICY_TYPES",
    "Decision",
    "Mode",
    "Notify",
    "NotifyTarget",
    "Policy",
    "PolicyDecision",
    "escape_glob",
]

POLICY_TYPES = frozenset({"bash", "builtin", "cli"})
Mode = Literal["dangerous", "ask", "restrict"]
_MODES: tuple[Mode, ...] = ("dangerous", "ask", "restrict")
_ASSIGNMENTS = re.compile(r"""(?:[A-Za-z_]\w*=(?:'[^']*'|"(?:[^"\\]|\\.)*"|\\.|[^\s'"\\])*\s+)+""")


class Decision(enum.StrEnum):
    """What happens to a tool call."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """A decision, a sentence saying why, and the pattern(s) that decided it (if any)."""

    decision: Decision
    reason: str
    matched: str | None = None


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: str
    tool_type: str | None  # None: every type
    regex: re.Pattern[str]
    literal: bool  # matches exactly one string
    writes: bool  # may allow a segment that redirects output

    def matches(self, text: str) -> bool:
        return self.regex.match(text) is not None


@lru_cache(maxsize=4096)
def _rule(pattern: str) -> _Rule:
    head, colon, rest = pattern.partition(":")
    typed = bool(colon) and (head in POLICY_TYPES or head == "*")
    glob = rest if typed else pattern
    tool_type = head if typed and head != "*" else None
    literal = not re.search(r"[*?\[]", re.sub(r"\[[*?\[]\]", "", glob))
    regex = fnmatch.translate(glob)
    if glob.endswith(" *"):  # "ls *" also allows a bare "ls": same program, no arguments
        regex = f"{regex}|{fnmatch.translate(glob[:-2])}"
    return _Rule(pattern, tool_type, re.compile(regex), literal, ">" in glob)


def escape_glob(text: str) -> str:
    """``text`` as a glob matching only itself (``*`` → ``[*]``, likewise ``?`` and ``[``)."""
    return re.sub(r"[*?\[]", lambda m: f"[{m.group(0)}]", text)


@dataclass(frozen=True, slots=True)
class NotifyTarget:
    """Where a notification goes: ``log`` (the server's log) or ``webhook`` (POST to ``url``)."""

    type: Literal["log", "webhook"]
    url: str | None = None


@dataclass(frozen=True, slots=True)
class Notify:
    """``notify:`` of the policy files: tell someone after a command ran (``tools.notify``).

    ``patterns`` select the calls (all of them when empty) and match exactly as deny patterns
    do, segments of a bash command included: a notification is an audit trail, so a command
    that hides ``rm`` behind ``ls;`` is still reported.
    """

    enabled: bool = False
    patterns: tuple[str, ...] = ()
    deliveries: tuple[NotifyTarget, ...] = ()


@dataclass(frozen=True, slots=True)
class Policy:
    """A mode and the merged allow and deny patterns; ``decide`` is pure and thread-safe."""

    mode: Mode = "dangerous"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    notify: Notify = Notify()

    def should_notify(self, policy_type: str, invocation: str) -> bool:
        """Whether a call that ran is to be notified (``notify.enabled`` and a pattern matched)."""
        notify = self.notify
        if not notify.enabled:
            return False
        if not notify.patterns:
            return True
        matched = Policy(deny=notify.patterns).decide(policy_type, invocation)
        return matched.decision is Decision.DENY

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ValueError(f"policy mode must be one of {', '.join(_MODES)}, not {self.mode!r}")

    def decide(self, policy_type: str, invocation: str) -> PolicyDecision:
        """Decide one tool call; ``invocation`` is the command, ``name:action`` or tool name."""
        deny = [r for r in map(_rule, self.deny) if r.tool_type in (None, policy_type)]
        allow = [r for r in map(_rule, self.allow) if r.tool_type in (None, policy_type)]
        if policy_type != "bash":
            return self._decide_whole(invocation, deny, allow)
        text = invocation.strip()
        oversized = len(text.encode("utf-8", "surrogatepass")) > MAX_ANALYSED_BYTES
        split = _TOO_LONG if oversized else split_command(text)
        for candidate in _deny_candidates(text, split.segments):
            for rule in deny:
                if rule.matches(candidate):
                    where = f" (segment '{candidate}')" if candidate != text else ""
                    reason = f"denied by pattern '{rule.pattern}'{where}"
                    return PolicyDecision(Decision.DENY, reason, rule.pattern)
        for rule in allow:
            if rule.literal and rule.matches(text):
                reason = f"allowed by pattern '{rule.pattern}' (exact command)"
                return PolicyDecision(Decision.ALLOW, reason, rule.pattern)
        if self.mode == "dangerous":
            note = f" (not fully analysed: {split.problem})" if split.problem else ""
            return PolicyDecision(Decision.ALLOW, f"mode dangerous: not denied{note}")
        problem = split.problem or unmodelled(text, split.segments)
        if problem:
            decision = Decision.ASK if self.mode == "ask" else Decision.DENY
            shown = text if len(text) <= 200 else text[:197] + "..."
            reason = f"cannot be analysed safely ({problem}) (mode {self.mode}): '{shown}'"
            return PolicyDecision(decision, reason)
        return self._decide_segments(text, split.segments or (Segment(text),), allow)

    def _decide_whole(self, text: str, deny: list[_Rule], allow: list[_Rule]) -> PolicyDecision:
        for rule in deny:
            if rule.matches(text):
                return PolicyDecision(
                    Decision.DENY, f"denied by pattern '{rule.pattern}'", rule.pattern
                )
        for rule in allow:
            if rule.matches(text):
                return PolicyDecision(
                    Decision.ALLOW, f"allowed by pattern '{rule.pattern}'", rule.pattern
                )
        return self._not_allowed(text, "")

    def _decide_segments(
        self, text: str, segments: tuple[Segment, ...], allow: list[_Rule]
    ) -> PolicyDecision:
        used: dict[str, None] = {}
        for segment in segments:
            rule = next(
                (
                    r
                    for r in allow
                    if r.matches(segment.text) and (r.writes or not segment.redirects_output)
                ),
                None,
            )
            if rule is None:
                detail = f" (segment '{segment.text}')" if len(segments) > 1 else ""
                if segment.redirects_output and any(r.matches(segment.text) for r in allow):
                    detail += (
                        "; it redirects output to a file, which only patterns containing '>' allow"
                    )
                return self._not_allowed(text, detail)
            used[rule.pattern] = None
        quoted = ", ".join(f"'{p}'" for p in used)
        noun = "pattern" if len(used) == 1 else "patterns"
        return PolicyDecision(Decision.ALLOW, f"allowed by {noun} {quoted}", ", ".join(used))

    def _not_allowed(self, text: str, detail: str) -> PolicyDecision:
        if self.mode == "dangerous":
            return PolicyDecision(Decision.ALLOW, "mode dangerous: not denied")
        decision = Decision.ASK if self.mode == "ask" else Decision.DENY
        return PolicyDecision(
            decision, f"not in the allow list (mode {self.mode}): '{text}'{detail}"
        )


_TOO_LONG = SplitResult((), f"longer than {MAX_ANALYSED_BYTES} bytes, not analysed")


def _deny_candidates(text: str, segments: tuple[Segment, ...]) -> list[str]:
    """The whole command, each segment, and each segment without leading assignments."""
    seen: dict[str, None] = {text: None}
    for segment in segments:
        seen[segment.text] = None
        assignments = _ASSIGNMENTS.match(segment.text)
        if assignments is not None:
            seen[segment.text[assignments.end() :]] = None
    return list(seen)
