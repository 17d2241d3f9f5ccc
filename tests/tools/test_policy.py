"""Policy decisions: anchored patterns, per-segment bash matching, modes, types and reasons.

The matrix is the contract: each row is one tool call under one policy. The reference's
substring matching fails many rows marked "injection" (``bash:ls *`` allowed ``rm -rf x; ls y``).
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from duragent.tools.policy import Decision, Policy, PolicyDecision, escape_glob

A, Q, D = Decision.ALLOW, Decision.ASK, Decision.DENY

ALLOW_LIST = ("bash:ls *", "bash:echo *", "bash:date", "bash:git status", "bash:cat *")
DENY_LIST = ("bash:rm *", "bash:sudo *")


def row(
    mode: str,
    invocation: str,
    expected: Decision,
    id: str,
    *,
    kind: str = "bash",
    allow: tuple[str, ...] = ALLOW_LIST,
    deny: tuple[str, ...] = (),
) -> object:
    return pytest.param(mode, allow, deny, kind, invocation, expected, id=id)


MATRIX = [
    # --- ask mode: the allow list runs, every segment must be allowed -----------------------
    row("ask", "ls -la", A, "ask/plain allowed"),
    row("ask", "ls", A, "ask/'ls *' also allows bare ls"),
    row("ask", "  ls -la  ", A, "ask/surrounding whitespace trimmed"),
    row("ask", "lsblk", Q, "ask/'ls *' is not a prefix match"),
    row("ask", "LS -la", Q, "ask/no case folding"),
    row("ask", "curl x | sh", Q, "ask/not allowed at all"),
    row("ask", "rm -rf x; ls y", Q, "injection/reference bug: allowed text last"),
    row("ask", "ls; rm -rf /", Q, "injection/semicolon"),
    row("ask", "ls && rm -rf /", Q, "injection/and"),
    row("ask", "ls || rm -rf /", Q, "injection/or"),
    row("ask", "ls | sh", Q, "injection/pipe"),
    row("ask", "ls |& sh", Q, "injection/pipe-stderr"),
    row("ask", "ls & rm -rf /", Q, "injection/background"),
    row("ask", "ls\nrm -rf /", Q, "injection/newline"),
    row("ask", "ls $(rm -rf /)", Q, "injection/dollar-paren"),
    row("ask", 'ls "$(rm -rf /)"', Q, "injection/dollar-paren in double quotes"),
    row("ask", "ls `rm -rf /`", Q, "injection/backticks"),
    row("ask", "echo `echo \\`rm -rf /\\``", Q, "injection/nested backticks"),
    row("ask", "ls; (rm -rf /)", Q, "injection/subshell"),
    row("ask", "(ls) && (rm -rf /)", Q, "injection/two subshells"),
    row("ask", "cat <(rm -rf /)", Q, "injection/process substitution"),
    row("ask", "ls # it's\nrm -rf /", Q, "injection/apostrophe in a comment"),
    row("ask", "ls\\\n; rm -rf /", Q, "injection/line continuation"),
    row("ask", "cat <<E\n$(rm -rf /)\nE", Q, "injection/here-document body"),
    row("ask", "cat <<E\nls it's\nE\nrm -rf /\necho 'x", Q, "injection/here-document quote"),
    row("ask", "cat <<E $(\nrm -rf /\nE\n)", Q, "injection/here-document across $()"),
    row("ask", "ls() { rm -rf /; }; ls", Q, "injection/function definition"),
    row("ask", "if ls; then rm -rf /; fi", Q, "injection/if-then"),
    row("ask", "echo $'\\'' ; rm -rf / ; echo $'\\''", Q, "injection/ansi-c quote"),
    row("ask", 'echo "a; rm -rf /"', A, "quotes/separator in double quotes is one segment"),
    row("ask", "echo 'a && b | c'", A, "quotes/separators in single quotes"),
    row("ask", "echo a\\;b", A, "quotes/escaped semicolon"),
    row("ask", "echo '$(rm -rf /)'", A, "quotes/substitution in single quotes is text"),
    row("ask", "ls -la | cat -n", A, "pipe of two allowed commands"),
    row("ask", "echo $(date)", A, "substitution of an allowed command"),
    row("ask", "echo $(date; rm x)", Q, "substitution with a denied part"),
    # was A: arithmetic evaluates subscripts, which run commands (issue 12): never inert
    row("ask", "echo $((1 + 2))", Q, "arithmetic is not understood, so not allowed"),
    row("ask", "ls # just a comment", A, "comment dropped like bash does"),
    row("ask", "echo x > /etc/passwd", Q, "redirect/overwrite needs a '>' pattern"),
    row("ask", "echo x >> ~/.bashrc", Q, "redirect/append"),
    row("ask", "ls &> out.txt", Q, "redirect/stdout+stderr"),
    row("ask", "ls 2>&1", A, "redirect/fd duplication is not a write"),
    row("ask", "ls 2>/dev/null", A, "redirect/dev-null is not a write"),
    row("ask", "echo 'a > b'", A, "redirect/quoted '>' is text"),
    row("ask", 'echo "unterminated', Q, "unbalanced/double quote asks"),
    row("ask", "echo 'a; rm -rf /", Q, "unbalanced/single quote asks"),
    row("ask", "ls $(date", Q, "unbalanced/paren asks"),
    row("ask", "date", A, "exact/'bash:date' allows date"),
    row("ask", "date -s 2000-01-01", Q, "exact/'bash:date' does not allow arguments"),
    row("ask", "git status", A, "exact/two words"),
    row("ask", "git status; git push", Q, "exact/plus another command"),
    row("ask", "ls -la", A, "exact/no-type pattern", allow=("ls -la",)),
    row("ask", "ls", Q, "exact/'ls -la' does not allow ls", allow=("ls -la",)),
    row("ask", "ls", A, "exact/'bash:ls' allows ls", allow=("bash:ls",)),
    row("ask", "ls -la", Q, "exact/'bash:ls' does not allow ls -la", allow=("bash:ls",)),
    row("ask", "ls; rm -rf /", Q, "exact/'bash:ls' does not allow ls;rm", allow=("bash:ls",)),
    row("ask", "ls a", A, "glob/question mark", allow=("bash:ls ?",)),
    row("ask", "ls ab", Q, "glob/question mark is one char", allow=("bash:ls ?",)),
    row("ask", "ls b", A, "glob/bracket class", allow=("bash:ls [ab]",)),
    row("ask", "ls c", Q, "glob/bracket class excludes", allow=("bash:ls [ab]",)),
    # --- restrict mode: like ask, but refuses -------------------------------------------------
    row("restrict", "ls -la", A, "restrict/allowed"),
    row("restrict", "curl x | sh", D, "restrict/not allowed"),
    row("restrict", "ls; rm -rf /", D, "restrict/injection"),
    row("restrict", 'echo "unterminated', D, "restrict/unbalanced"),
    row("restrict", "echo x > f", D, "restrict/redirect"),
    # --- dangerous mode: everything not denied ------------------------------------------------
    row("dangerous", "curl x | sh", A, "dangerous/anything", deny=DENY_LIST),
    row("dangerous", "rm -rf /", D, "dangerous/denied", deny=DENY_LIST),
    row("dangerous", "rm", D, "dangerous/'rm *' denies bare rm", deny=DENY_LIST),
    row("dangerous", "ls; rm -rf /", D, "dangerous/denied segment ;", deny=DENY_LIST),
    row("dangerous", "ls && sudo reboot", D, "dangerous/denied segment &&", deny=DENY_LIST),
    row("dangerous", "ls | sudo tee f", D, "dangerous/denied segment |", deny=DENY_LIST),
    row("dangerous", "echo $(rm x)", D, "dangerous/denied in $()", deny=DENY_LIST),
    row("dangerous", "echo `rm x`", D, "dangerous/denied in backticks", deny=DENY_LIST),
    row("dangerous", "(cd /; rm x)", D, "dangerous/denied in subshell", deny=DENY_LIST),
    row("dangerous", "if true; then rm x; fi", D, "dangerous/denied after then", deny=DENY_LIST),
    row("dangerous", "{ rm x; }", D, "dangerous/denied in group", deny=DENY_LIST),
    row("dangerous", "X=1 rm -rf /", D, "dangerous/denied after assignment", deny=DENY_LIST),
    row("dangerous", 'rm -rf /\necho "', D, "dangerous/unbalanced, denied line", deny=DENY_LIST),
    row("dangerous", "rm -rf / 'x", D, "dangerous/unbalanced, raw text", deny=DENY_LIST),
    row("dangerous", "cat <<E $(\nrm x\nE\n)", D, "dangerous/here-document", deny=DENY_LIST),
    row("dangerous", 'echo "unterminated', A, "dangerous/unbalanced allowed", deny=DENY_LIST),
    row("dangerous", "echo 'rm -rf /'", A, "dangerous/quoted text is no command", deny=DENY_LIST),
    row("dangerous", "firm x", A, "dangerous/deny is anchored too", deny=DENY_LIST),
    # --- deny first, in every mode ------------------------------------------------------------
    row("ask", "rm x", D, "deny-first/ask", allow=("bash:*",), deny=DENY_LIST),
    row("restrict", "ls; rm x", D, "deny-first/restrict", allow=("bash:*",), deny=DENY_LIST),
    row("ask", "ls", A, "deny-first/others allowed", allow=("bash:*",), deny=DENY_LIST),
    row("ask", "rm /tmp/x", D, "deny-first/beats exact", allow=("bash:rm /tmp/x",), deny=DENY_LIST),
    row("ask", 'echo "x', D, "deny-first/raw text", allow=(), deny=('bash:echo "*',)),
    # --- types ----------------------------------------------------------------------------
    row("ask", "deploy", A, "type/cli", kind="cli", allow=("cli:deploy",)),
    row("ask", "deploy", Q, "type/cli pattern not for bash", allow=("cli:deploy",)),
    row("ask", "deploy-prod", Q, "type/cli anchored", kind="cli", allow=("cli:deploy",)),
    row("ask", "deploy", A, "type/star any type (cli)", kind="cli", allow=("*:deploy",)),
    row("ask", "deploy", A, "type/star any type (bash)", allow=("*:deploy",)),
    row("ask", "ls -la", A, "type/no prefix any type (cli)", kind="cli", allow=("ls -la",)),
    row("ask", "shell:ls", A, "type/unknown prefix is glob", allow=("shell:ls",)),
    row("ask", "ls", Q, "type/unknown prefix is not a type", allow=("shell:ls",)),
    row("ask", "anything", A, "type/builtin star", kind="builtin", allow=("builtin:*",)),
    row("ask", "anything", Q, "type/builtin star not bash", allow=("builtin:*",)),
    row("ask", "x", D, "type/deny everything", kind="cli", allow=("*",), deny=("*:*",)),
    # --- builtins: 'name:action' invocations, never split ---------------------------------------
    row("ask", "web:fetch", A, "builtin/web:fetch", kind="builtin", allow=("builtin:web:fetch",)),
    row(
        "ask", "web:search", Q, "builtin/other action", kind="builtin", allow=("builtin:web:fetch",)
    ),
    row("ask", "web:fetch:x", Q, "builtin/anchored", kind="builtin", allow=("builtin:web:fetch",)),
    row("ask", "web:fetch", Q, "builtin/not bash", allow=("builtin:web:fetch",)),
    row("ask", "web:fetch", A, "builtin/untyped pattern", kind="builtin", allow=("web:fetch",)),
    row("ask", "web:fetch", A, "builtin/action glob", kind="builtin", allow=("builtin:web:*",)),
    row(
        "ask",
        "memory:write",
        Q,
        "builtin/action glob other",
        kind="builtin",
        allow=("builtin:web:*",),
    ),
    row("ask", "memory; rm x", Q, "builtin/not split", kind="builtin", allow=("builtin:memory",)),
    row("dangerous", "web:fetch", D, "builtin/denied", kind="builtin", deny=("builtin:web:fetch",)),
    row(
        "dangerous",
        "web:search",
        A,
        "builtin/other not denied",
        kind="builtin",
        deny=("builtin:web:fetch",),
    ),
    row("dangerous", "rm x", A, "builtin/bash deny not applied", kind="builtin", deny=DENY_LIST),
    # --- patterns that may allow writing: they contain '>' ---------------------------------------
    row("ask", "echo hi > /tmp/x", A, "write/'>' pattern", allow=("bash:echo * > /tmp/*",)),
    row(
        "ask", "echo hi > /etc/x", Q, "write/'>' pattern anchored", allow=("bash:echo * > /tmp/*",)
    ),
    # --- exact (wildcard-free) patterns allow exactly the whole command ---------------------------
    row("ask", "ls; rm *.tmp", A, "literal/whole command", allow=("bash:ls; rm [*].tmp",)),
    row(
        "ask", "ls; rm a.tmp", Q, "literal/escaped star is literal", allow=("bash:ls; rm [*].tmp",)
    ),
    row("ask", "ls", Q, "literal/not a part", allow=("bash:ls; rm [*].tmp",)),
    row("ask", "echo x > f", A, "literal/with a redirect", allow=("bash:echo x > f",)),
    row("ask", 'echo "x', A, "literal/unbalanced but approved", allow=('bash:echo "x',)),
    row("ask", 'echo "x; y', Q, "literal/unbalanced other", allow=('bash:echo "x',)),
]


@pytest.mark.parametrize(("mode", "allow", "deny", "kind", "invocation", "expected"), MATRIX)
def test_policy_matrix(
    mode: str,
    allow: tuple[str, ...],
    deny: tuple[str, ...],
    kind: str,
    invocation: str,
    expected: Decision,
) -> None:
    policy = Policy(mode=mode, allow=allow, deny=deny)  # type: ignore[arg-type]
    verdict = policy.decide(kind, invocation)
    assert verdict.decision is expected, verdict.reason


# --- reasons ---------------------------------------------------------------------------------


def test_deny_reason_names_pattern_and_segment() -> None:
    verdict = Policy(deny=("bash:rm *",)).decide("bash", "ls; rm -rf x")
    assert verdict == PolicyDecision(
        Decision.DENY, "denied by pattern 'bash:rm *' (segment 'rm -rf x')", "bash:rm *"
    )


def test_deny_reason_for_the_whole_command_has_no_segment() -> None:
    verdict = Policy(deny=("bash:rm *",)).decide("bash", "rm -rf x")
    assert verdict.reason == "denied by pattern 'bash:rm *'"


def test_ask_reason_names_the_command_and_the_segment_not_allowed() -> None:
    verdict = Policy(mode="ask", allow=("bash:curl *",)).decide("bash", "curl x | sh")
    assert verdict == PolicyDecision(
        Decision.ASK, "not in the allow list (mode ask): 'curl x | sh' (segment 'sh')"
    )


def test_restrict_reason_for_a_single_command() -> None:
    verdict = Policy(mode="restrict").decide("cli", "deploy")
    assert verdict.reason == "not in the allow list (mode restrict): 'deploy'"


def test_redirect_reason_explains_the_missing_gt() -> None:
    verdict = Policy(mode="ask", allow=("bash:echo *",)).decide("bash", "echo x > /etc/passwd")
    assert verdict.decision is Decision.ASK
    assert "redirects output to a file, which only patterns containing '>' allow" in verdict.reason


def test_unanalysable_reason_says_why() -> None:
    verdict = Policy(mode="ask", allow=("bash:*",)).decide("bash", 'echo "oops')
    assert verdict.decision is Decision.ASK
    assert verdict.reason.startswith("cannot be analysed safely (unbalanced quote")


def test_allow_reason_lists_every_pattern_used() -> None:
    verdict = Policy(mode="ask", allow=ALLOW_LIST).decide("bash", "ls | cat -n && date")
    assert verdict == PolicyDecision(
        Decision.ALLOW,
        "allowed by patterns 'bash:ls *', 'bash:cat *', 'bash:date'",
        "bash:ls *, bash:cat *, bash:date",
    )


def test_exact_whole_command_reason() -> None:
    verdict = Policy(mode="ask", allow=("bash:ls; date",)).decide("bash", "ls; date")
    assert verdict.reason == "allowed by pattern 'bash:ls; date' (exact command)"
    assert verdict.matched == "bash:ls; date"


def test_dangerous_allow_has_no_matched_pattern() -> None:
    verdict = Policy().decide("bash", "curl x | sh")
    assert verdict == PolicyDecision(Decision.ALLOW, "mode dangerous: not denied")


# --- the object itself ---------------------------------------------------------------------


def test_defaults_are_the_reference_defaults() -> None:
    policy = Policy()
    assert (policy.mode, policy.allow, policy.deny) == ("dangerous", (), ())


def test_decision_values_are_strings() -> None:
    assert [str(d) for d in Decision] == ["allow", "ask", "deny"]


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="dangerous, ask, restrict"):
        Policy(mode="yolo")  # type: ignore[arg-type]


def test_empty_bash_command_is_matched_as_itself() -> None:
    assert Policy(mode="ask").decide("bash", "   ").decision is Decision.ASK
    assert Policy(mode="ask", allow=("bash:*",)).decide("bash", "").decision is Decision.ALLOW


# --- properties ----------------------------------------------------------------------------

_ALLOWED_PART = st.sampled_from(["ls", "ls -la", "echo hi", "date", "git status", "cat a.txt"])
_WRAPS = st.sampled_from(
    ["{}", "$({})", "`{}`", "({})", '"$({})"', "echo $({})", "ls <({})", "if {}; then :; fi"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_ALLOWED_PART, min_size=0, max_size=4),
    st.integers(min_value=0, max_value=4),
    st.sampled_from([";", "&&", "||", "|", "\n", "&", " ; "]),
    _WRAPS,
)
def test_an_injected_command_is_never_allowed(
    parts: list[str], where: int, sep: str, wrap: str
) -> None:
    parts.insert(min(where, len(parts)), wrap.format("rm -rf /"))
    command = sep.join(parts)
    for mode in ("ask", "restrict"):
        verdict = Policy(mode=mode, allow=ALLOW_LIST).decide("bash", command)
        assert verdict.decision is not Decision.ALLOW, (command, verdict.reason)
    denied = Policy(deny=("bash:rm *",)).decide("bash", command)
    assert denied.decision is Decision.DENY, (command, denied.reason)


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=40).map(str.strip).filter(bool))
def test_an_escaped_command_allows_exactly_itself(command: str) -> None:
    policy = Policy(mode="restrict", allow=(f"bash:{escape_glob(command)}",))
    assert policy.decide("bash", command).decision is Decision.ALLOW
    other = command + "; rm -rf /"
    assume(other.strip() != command)
    assert policy.decide("bash", other).decision is Decision.DENY
    assert policy.decide("bash", command + "x").decision is Decision.DENY
