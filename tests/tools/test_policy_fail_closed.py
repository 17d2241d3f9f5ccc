"""The policy fails closed: a glob allows a command only when every construct in it is inert.

Issue 12: with only ``bash:echo *`` allowed, ``echo ${x:='a[$(touch P)]'} $((x))`` ran
``touch``: the splitter saw one ``echo`` segment, and bash evaluated the quoted default value
later as an arithmetic subscript. Each row here is a route by which a word that *looks* like
text runs code (or writes a file); none may be allowed by a glob, in any shape.
"""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duragent.tools.policy import Decision, Policy, escape_glob
from duragent.tools.shell_grammar import MAX_ANALYSED_BYTES, analyse

EXPLOIT = "echo ${x:='a[$(touch P)]'} $((x))"
BROAD = (
    "bash:echo *",
    "bash:printf *",
    "bash:test *",
    "bash:read *",
    "bash:unset *",
    "bash:ls *",
    "bash:cat *",
    "bash:x=*",
    "bash:[ *",
)


@pytest.mark.parametrize(("mode", "expected"), [("ask", Decision.ASK), ("restrict", Decision.DENY)])
def test_the_issue_exploit_is_not_allowed_by_echo_star(mode: str, expected: Decision) -> None:
    verdict = Policy(mode=mode, allow=("bash:echo *",)).decide("bash", EXPLOIT)  # type: ignore[arg-type]
    assert verdict.decision is expected, verdict.reason
    assert verdict.reason.startswith("cannot be analysed safely (")


UNMODELLED = [
    pytest.param("echo ${x:='a[$(touch P)]'}", id="default value assigned, evaluated later"),
    pytest.param("echo $((x))", id="arithmetic expansion"),
    pytest.param("echo $[x]", id="old arithmetic expansion"),
    pytest.param("echo ${x@P}", id="prompt expansion"),
    pytest.param("echo ${!x}", id="indirection"),
    pytest.param("echo ${x[$(id)]}", id="array subscript"),
    pytest.param("echo ${x/a/b}", id="substitution operator"),
    pytest.param("echo ${x:-$(id)}", id="default operator"),
    pytest.param("echo ${#x}", id="length operator"),
    pytest.param('echo $"x"', id="translated string"),
    pytest.param("printf -v 'a[$(touch P)]' x", id="printf -v assigns a subscript"),
    pytest.param('printf "$f" x', id="printf with a computed first argument"),
    pytest.param("read 'a[$(touch P)]'", id="read names a subscript"),
    pytest.param("unset 'a[$(touch P)]'", id="unset evaluates a subscript"),
    pytest.param("test -v 'a[$(touch P)]'", id="test -v evaluates a subscript"),
    pytest.param('test "$a" "$b"', id="test with computed operands"),
    pytest.param("[ -v x ]", id="bracket test"),
    pytest.param("[[ -v x ]]", id="double bracket test"),
    pytest.param("(( x ))", id="arithmetic command"),
    pytest.param("echo; let x", id="let"),
    pytest.param("'eval' x", id="quoted eval"),
    pytest.param("ec\\ho x; source f", id="source"),
    pytest.param("$x y", id="command name computed at run time"),
    pytest.param("x=(1 2)", id="array assignment"),
    pytest.param("x[1]=2", id="subscript assignment"),
    pytest.param("PS4='$(id)' echo", id="assignment to a variable bash evaluates"),
    pytest.param("f() { echo; }", id="function definition"),
    pytest.param("case x in a) echo;; esac", id="case"),
    pytest.param("for ((i=0;i<1;i++)); do echo; done", id="c-style for"),
    pytest.param("echo @(x)", id="extended glob"),
    pytest.param("echo \\ #x; echo $((1))", id="escaped blank before hash"),
    pytest.param("echo x\ry", id="carriage return"),
]


@pytest.mark.parametrize("command", UNMODELLED)
def test_an_unmodelled_construct_is_never_allowed_by_a_glob(command: str) -> None:
    for mode, expected in (("ask", Decision.ASK), ("restrict", Decision.DENY)):
        for allow in (BROAD, ("bash:*",)):
            verdict = Policy(mode=mode, allow=allow).decide("bash", command)  # type: ignore[arg-type]
            assert verdict.decision is expected, (mode, allow, verdict.reason)


INERT = [
    "echo \"a $x ${y} $1 $@\" 'b c' $'d\\n' ~/e *.py {a,b} {1..3} f\\;g",
    'echo $(ls -la) `ls` "$(cat f)"',
    "ls -la | cat -n && echo done || echo failed; ls &",
    "if ls x; then echo yes; elif ls y; then echo y; else echo no; fi",
    'for f in *.txt; do cat "$f"; done',
    "while ls x; do echo; done",
    "(ls; echo) && { ls; }",
    "! ls 2>&1 >/dev/null",
    'X=1 Y="$HOME" ls',
    "cat <<'E'\n$(rm -rf /) $((x))\nE",
    "cat <<E\nplain $x $(ls) text\nE",
    'cat <<< "a $x"',
    "printf '%s\\n' \"$x\"",
    "test -f x",
    "ls # a comment with $((x)) in it",
]


@pytest.mark.parametrize("command", INERT)
def test_inert_constructs_are_still_matched_by_globs(command: str) -> None:
    allow: tuple[str, ...] = (
        "bash:echo *",
        "bash:ls *",
        "bash:cat *",
        "bash:printf *",
        "bash:test *",
    )
    allow += ("bash:for f in *", "bash:X=* ls")
    verdict = Policy(mode="restrict", allow=allow).decide("bash", command)
    assert verdict.decision is Decision.ALLOW, verdict.reason


@pytest.mark.parametrize(
    "command",
    ["echo $(echo x > f)", "echo `echo x >> f`", "cat <(echo x >| f)", "ls {fd}>f", "ls &> f"],
)
def test_an_output_redirect_anywhere_needs_a_gt_pattern(command: str) -> None:
    verdict = Policy(mode="restrict", allow=("bash:echo *", "bash:cat *", "bash:ls *")).decide(
        "bash", command
    )
    assert verdict.decision is Decision.DENY, verdict.reason


def test_allow_always_still_allows_exactly_the_approved_command() -> None:
    policy = Policy(mode="restrict", allow=(f"bash:{escape_glob(EXPLOIT)}",))
    assert policy.decide("bash", EXPLOIT).decision is Decision.ALLOW
    assert policy.decide("bash", EXPLOIT + " ").decision is Decision.ALLOW  # trimmed
    assert policy.decide("bash", EXPLOIT.replace("P", "Q")).decision is Decision.DENY


# --- size cap ------------------------------------------------------------------------------

LONG = "echo " + "a" * MAX_ANALYSED_BYTES


def test_a_command_over_the_cap_is_not_analysed_and_says_so() -> None:
    verdict = Policy(mode="ask", allow=("bash:echo *",)).decide("bash", LONG)
    assert verdict.decision is Decision.ASK
    assert f"longer than {MAX_ANALYSED_BYTES} bytes" in verdict.reason
    assert len(verdict.reason) < 400  # the reason does not echo a megabyte back
    restricted = Policy(mode="restrict", allow=("bash:echo *",)).decide("bash", LONG)
    assert restricted.decision is Decision.DENY


def test_a_command_over_the_cap_still_meets_deny_patterns_and_dangerous_mode() -> None:
    assert Policy(deny=("bash:echo *",)).decide("bash", LONG).decision is Decision.DENY
    assert Policy().decide("bash", LONG).decision is Decision.ALLOW


def test_a_command_at_the_cap_is_analysed() -> None:
    command = "echo " + "a" * (MAX_ANALYSED_BYTES - 5)
    verdict = Policy(mode="restrict", allow=("bash:echo *",)).decide("bash", command)
    assert verdict.decision is Decision.ALLOW, verdict.reason[:200]


def test_the_grammar_refuses_text_over_the_cap_on_its_own() -> None:
    assert analyse(LONG).problem == f"longer than {MAX_ANALYSED_BYTES} bytes"


# --- properties ----------------------------------------------------------------------------

_WORDS = st.sampled_from(["ls", "echo", "-la", "'a b'", '"$x"', "$(ls)", "*.py", "x", "~"])
_HIDDEN = st.sampled_from(
    [
        "${x:=a}",
        "$((1))",
        "$[1]",
        "${x@P}",
        "${!x}",
        "${x[0]}",
        "${x%a}",
        '$"t"',
        "$(( $(ls) ))",
        "$(echo ${x:-a})",
        "`echo $((1))`",
        '"${x/a/b}"',
        "<(echo $[1])",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_WORDS, max_size=4),
    _HIDDEN,
    st.integers(min_value=0, max_value=4),
    st.sampled_from([" ", "; echo ", " | cat ", " && ls "]),
    st.sampled_from(["", "x", "'q'", '"$y"']),
)
def test_a_command_containing_an_unmodelled_expansion_is_never_allowed(
    words: list[str], hidden: str, where: int, sep: str, glue: str
) -> None:
    """Wherever the construct sits (alone, glued to a word, in a later command), even
    ``bash:*`` does not allow it in restrict mode."""
    words.insert(min(where, len(words)), glue + hidden)
    command = "echo " + sep.join(words)
    verdict = Policy(mode="restrict", allow=("bash:*",)).decide("bash", command)
    assert verdict.decision is Decision.DENY, (command, verdict.reason)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab $`'\"\\(){}[]:=@!#%/;|&<>\n-", max_size=30))
def test_arbitrary_text_never_crashes_and_is_allowed_only_when_understood(command: str) -> None:
    analysis = analyse(command)
    verdict = Policy(mode="restrict", allow=("bash:*",)).decide("bash", command)
    if verdict.decision is Decision.ALLOW and command.strip():
        assert analysis.problem is None, (command, analysis)


# --- differential: what the policy allows, real bash runs as nothing but echo -------------

_PIECES = st.sampled_from(
    [
        "a", "'b c'", '"d $x"', "$x", "${x}", "$1", "$@", "$_", "*", "~", "{a,b}", "{1..2}",
        "\\;", "\\$(touch P)", "$(echo e)", "`echo f`", '"$(echo g)"', "<(echo h)", "2>&1",
        ">/dev/null", "#c", "$'\\x24(touch P)'", "'$(touch P)'", "${x:='a[$(touch P)]'}",
        "$((x))", "x=1", "a[1]", "!", "$$", "-v", "\\\n", "'", '"', "$", "{", "}", "(", ")",
        ";", "&&", "||", "|", "&", "\n", "<<<", "<", ">", "<<E\nq $x\nE\n", "$'\\''",
        "\\'", '$"x"', "[", "]", "${x@P}", "${!x}",
        "${x:='a[$(touch P)]'} $((x))", "${y:='$(touch P)'} ${y@P}",
    ]
)  # fmt: skip
_HEADS = st.sampled_from(["echo", "{ echo", "( echo", "if echo; then echo", "! echo", "x=1 echo"])


@settings(max_examples=200, deadline=None)
@given(_HEADS, st.lists(_PIECES, min_size=1, max_size=6))
def test_whatever_echo_star_allows_runs_only_echo_in_real_bash(
    tmp_path_factory: pytest.TempPathFactory, head: str, pieces: list[str]
) -> None:
    """Bash traces every simple command it runs (DEBUG trap, also in substitutions): for an
    allowed command each is an ``echo``, no file appears, and no other program is looked up."""
    command = head + " " + " ".join(pieces)
    verdict = Policy(mode="restrict", allow=("bash:echo *",)).decide("bash", command)
    if verdict.decision is not Decision.ALLOW:
        return
    work = tmp_path_factory.mktemp("bash")
    trace = tmp_path_factory.mktemp("trace") / "trace"
    script = 'trap \'printf "%q\\n" "$BASH_COMMAND" >> "$TRACE"\' DEBUG; set -T; eval "$CMD"'
    env = {"PATH": "/nonexistent", "CMD": command, "TRACE": str(trace), "HOME": str(work)}
    run = subprocess.run(
        ["/bin/bash", "-c", script], cwd=work, env=env, capture_output=True, timeout=120, input=b""
    )
    ran = [line for line in trace.read_text().splitlines() if line.strip()]
    harness = ("set\\ -T", "eval\\ ")
    others = [c for c in ran if not c.startswith(harness) and not c.lstrip("$'").startswith("echo")]
    assert others == [], (command, others)
    assert list(work.iterdir()) == [], command
    assert b"not found" not in run.stderr, (command, run.stderr)
