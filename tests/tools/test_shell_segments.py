"""The bash splitter behind the policy: every command bash would run becomes a segment.

Each case was checked against real bash behaviour where it matters (comments, ``$'…'``,
here-documents, ``$((…))`` versus ``$( (…) )``): the splitter may see *more* than bash runs,
never less.
"""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duragent.tools.shell_segments import Segment, SplitResult, split_command


def texts(command: str) -> list[str]:
    result = split_command(command)
    assert result.problem is None, result.problem
    return [s.text for s in result.segments]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -la", ["ls -la"]),
        ("  ls -la  ", ["ls -la"]),
        ("ls   -la", ["ls   -la"]),
        ("ls; rm -rf /", ["ls", "rm -rf /"]),
        ("ls && rm x", ["ls", "rm x"]),
        ("ls || rm x", ["ls", "rm x"]),
        ("ls | sh", ["ls", "sh"]),
        ("ls |& sh", ["ls", "sh"]),
        ("sleep 1 & rm x", ["sleep 1", "rm x"]),
        ("ls\nrm x", ["ls", "rm x"]),
        ("ls;;", ["ls"]),
        ("", []),
        ("echo $(rm -rf x) y", ["echo $(rm -rf x) y", "rm -rf x"]),
        ("echo `rm x`", ["echo `rm x`", "rm x"]),
        ("echo $(a $(b; c))", ["echo $(a $(b; c))", "a $(b; c)", "b", "c"]),
        (
            "echo `echo \\`rm -rf /\\``",
            ["echo `echo \\`rm -rf /\\``", "echo `rm -rf /`", "rm -rf /"],
        ),
        ("(cd /; rm x) && ls", ["cd /", "rm x", "ls"]),
        ("diff <(ls) <(rm x)", ["diff <(ls) <(rm x)", "ls", "rm x"]),
        ("tee >(rm x)", ["tee >(rm x)", "rm x"]),
        ('echo "a; rm -rf /"', ['echo "a; rm -rf /"']),
        ("echo 'a && b | c'", ["echo 'a && b | c'"]),
        ("echo a\\;b", ["echo a\\;b"]),
        ('echo "$(rm -rf /)"', ['echo "$(rm -rf /)"', "rm -rf /"]),
        ('echo "`rm x`"', ['echo "`rm x`"', "rm x"]),
        ("echo '$(rm x)'", ["echo '$(rm x)'"]),
        ("echo $'a\\'b'; rm x", ["echo $'a\\'b'", "rm x"]),
        ("echo $((1 + 2))", ["echo $((1 + 2))"]),
        ("echo $(( $(rm x) + 1 ))", ["echo $(( $(rm x) + 1 ))", "rm x"]),
        ("echo $((ls); rm x)", ["echo $((ls); rm x)", "ls", "rm x"]),
        ("ls # it's a comment; rm x", ["ls"]),
        ("ls # it's\nrm -rf /", ["ls", "rm -rf /"]),
        ("echo a#b; rm x", ["echo a#b", "rm x"]),
        ("echo \\ #x; rm y", ["echo \\ #x", "rm y"]),
        ("echo ${#HOME}", ["echo ${#HOME}"]),
        ("if true; then rm -rf /; fi", ["true", "rm -rf /"]),
        ("while ls; do rm x; done", ["ls", "rm x"]),
        ("{ rm -rf /; }", ["rm -rf /"]),
        ("! time rm x", ["rm x"]),
        ("for f in *; do echo $f; done", ["for f in *", "echo $f"]),
        ("cat <<EOF\nit's $(rm a)\nEOF\nrm -rf /", ["cat <<EOF", "rm a", "rm -rf /"]),
        ("cat <<'EOF'\n$(rm a) it's\nEOF\nls", ["cat <<'EOF'", "ls"]),
        ("cat <<-E; echo after\n\tbody\n\tE\nls", ["cat <<-E", "echo after", "ls"]),
        ("cat <<<'a;b'", ["cat <<<'a;b'"]),
        (
            "echo $(cat <<E\nbody; rm x\nE\n) tail",
            ["echo $(cat <<E\nbody; rm x\nE\n) tail", "cat <<E"],
        ),
        ("cat <&3", ["cat <&3"]),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else None,
)
def test_segments(command: str, expected: list[str]) -> None:
    assert texts(command) == expected


@pytest.mark.parametrize(
    ("command", "redirects"),
    [
        ("echo x > /etc/passwd", True),
        ("echo x >> log", True),
        ("echo x >| f", True),
        ("ls &> out", True),
        ("ls &>> out", True),
        ("cat <> f", True),
        ("echo x >&file", True),
        ("ls > /dev/nullx", True),
        ("ls 2>&1", False),
        ("ls >&2", False),
        ("ls 2>&-", False),
        ("ls 2>/dev/null", False),
        ("ls &>/dev/null", False),
        ("echo 'a > b'", False),
        ('echo "a>b"', False),
        ("echo a\\>b", False),
        ("cat < in", False),
        ("tee >(wc)", False),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else None,
)
def test_output_redirection_flag(command: str, redirects: bool) -> None:
    result = split_command(command)
    assert result.problem is None
    assert result.segments[0].redirects_output is redirects


def test_redirection_belongs_to_its_own_segment() -> None:
    result = split_command("echo $(ls > x) && date")
    assert result.segments == (
        Segment("echo $(ls > x)", False),
        Segment("ls > x", True),
        Segment("date", False),
    )


@pytest.mark.parametrize(
    ("command", "problem", "segments"),
    [
        ('echo "unterminated', "unbalanced quote", ['echo "unterminated']),
        ("echo 'unterminated; rm x", "unbalanced quote", ["echo 'unterminated; rm x"]),
        ("echo $'unterminated", "unbalanced quote", ["echo $'unterminated"]),
        ("echo `unterminated", "unbalanced backtick", ["echo `unterminated", "unterminated"]),
        ("echo $(unterminated", "unbalanced '('", ["echo $(unterminated", "unterminated"]),
        ("(ls", "unbalanced '('", ["ls"]),
        ("ls) ; rm x", "unbalanced ')'", ["ls", "rm x"]),
        ('rm -rf /\necho "', "unbalanced quote", ["rm -rf /", 'echo "']),
        ("ls() { rm -rf /; }; ls", "shell function", ["ls { rm -rf /", "ls"]),
        ("function ls { rm -rf /; }; ls", "shell function", ["function ls { rm -rf /", "ls"]),
        ("coproc ls { rm -rf /; }", "coproc", ["coproc ls { rm -rf /"]),
        ("a=(1 2)", "'(' inside a command", ["a=", "1 2"]),
        ("case x in a) rm;; esac", "unbalanced ')'", ["case x in a", "rm"]),
        ("cat <<EOF\nbody", "unterminated here-document", ["cat <<EOF"]),
        (
            # bash runs "echo INSIDE" and "E" inside $( ) and reads the body after it
            "cat <<E $(\necho INSIDE\nE\n)\necho after",
            "here-document crossing a substitution",
            ["cat <<E $(\necho INSIDE\nE\n)", "echo INSIDE", "E"],
        ),
        (
            "echo $(cat <<E) x\nbody\nE",
            "here-document crossing a substitution",
            ["echo $(cat <<E) x", "cat <<E", "body", "E"],
        ),
        ("cat <<", "here-document without a delimiter", ["cat <<"]),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else None,
)
def test_unanalysable_commands_report_a_problem_and_best_effort_segments(
    command: str, problem: str, segments: list[str]
) -> None:
    result = split_command(command)
    assert result.problem is not None
    assert problem in result.problem
    assert [s.text for s in result.segments] == segments


def test_absurd_nesting_is_unanalysable_not_a_crash() -> None:
    result = split_command("echo " + "$(" * 5000 + "rm -rf /" + ")" * 5000)
    assert result == SplitResult((), "nested too deeply to analyse")


def test_a_mismatched_arithmetic_guess_does_not_leak_its_problem() -> None:
    # "$((" is first tried as arithmetic; when that fails nothing it found may remain.
    # Read as arithmetic, the comment's apostrophe opens a quote; read as "$( (x) )" it is
    # a comment, and that is how bash reads it.
    result = split_command("echo $(( # it's\n x) )")
    assert result.problem is None
    assert [s.text for s in result.segments] == ["echo $(( # it's\n x) )", "x"]


_SAFE = st.text(alphabet="abc xyz-./=", min_size=1, max_size=12).map(str.strip).filter(bool)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_SAFE, min_size=1, max_size=5), st.sampled_from([";", "&&", "||", "|", "\n", " & "])
)
def test_joined_plain_commands_split_back_into_their_parts(parts: list[str], sep: str) -> None:
    command = sep.join(parts)
    result = split_command(command)
    assert result.problem is None
    assert [s.text for s in result.segments] == parts


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab ;&|()$`'\"\\#<>{}\n", max_size=30))
def test_arbitrary_text_never_crashes(command: str) -> None:
    result = split_command(command)
    for segment in result.segments:
        assert segment.text == segment.text.strip()
        assert segment.text


@pytest.mark.parametrize(
    "command",
    [
        "echo a; echo b",
        "echo 'x;y' && echo z",
        "echo $(echo a) | cat",
        "if true; then echo a; fi",
        "echo a # b; echo c",
        "echo $'q\\'x'; echo y",
        "cat <<E\nbody $(echo s)\nE\necho end",
        "echo $(cat <<E\nbody\nE\n) tail",
        "cat <<E $(\necho inside\nE\n)\necho after",
    ],
)
def test_segment_count_matches_what_bash_runs(command: str) -> None:
    """Cross-check with real bash: trace each simple command it executes (``set -x``)."""
    run = subprocess.run(
        ["bash", "-xc", command], capture_output=True, text=True, timeout=120, check=False
    )
    traced = [line for line in run.stderr.splitlines() if line.startswith("+")]
    assert len(split_command(command).segments) >= len(traced)
