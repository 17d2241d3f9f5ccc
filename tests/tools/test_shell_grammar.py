"""The grammar check behind the fail-closed policy: what it understands, and that it never crashes.

tree-sitter-bash is C: a crash there takes the whole server down, so text that made it crash
(``{`` followed by a code point such as U+E0000) is a regression case run in a child process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duragent.tools.shell_grammar import analyse, unmodelled
from duragent.tools.shell_segments import Segment


def test_non_ascii_text_that_crashed_tree_sitter_is_analysed_in_a_child_process() -> None:
    script = textwrap.dedent(
        """
        from duragent.tools.shell_grammar import analyse
        for i in range(2000):
            analyse("{" + chr(0xE0000 + i % 50))
            analyse("echo {" + chr(0xDF2D9 + i % 50) + " x")
        print("survived")
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "survived"


def test_non_ascii_words_are_plain_text_and_reasons_show_the_original() -> None:
    assert analyse("echo héllo wörld ✓ 𝄞").problem is None
    problem = analyse("echo ${é:=x} $((ü))").problem
    assert problem is not None
    assert "ü" in problem or "é" in problem


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("echo $((1))", "arithmetic expansion is not modelled"),
        ("echo ${x:=a}", "':=' in expansion is not modelled"),
        ("printf -v x y", "printf with an option"),
        ("e''val x", "'eval' evaluates its arguments"),
        ("$cmd x", "a command name computed when it runs"),
        ("PATH=. ls", "assignment to a variable bash itself evaluates"),
        ("for IFS in x; do ls; done", "a loop over a variable bash itself evaluates"),
        ("echo a\x01b", "control characters other than tab and newline"),
        ("echo 'x", "the shell grammar cannot parse it"),
    ],
)
def test_each_unmodelled_construct_is_named_in_the_reason(command: str, problem: str) -> None:
    found = analyse(command).problem
    assert found is not None
    assert found.startswith(problem), found


def test_a_write_the_splitter_missed_is_a_disagreement() -> None:
    plain, writing = (Segment("ls > f"),), (Segment("ls > f", True),)
    assert unmodelled("ls > f", plain) == "an output redirect the splitter did not see"
    assert unmodelled("ls > f", writing) is None
    assert unmodelled("ls 2>&1 >/dev/null", (Segment("ls 2>&1 >/dev/null"),)) is None


def test_a_command_the_splitter_did_not_see_is_a_disagreement() -> None:
    both = (Segment("echo a"), Segment("rm x"))
    assert unmodelled("echo a; rm x", both) is None
    problem = unmodelled("echo a; rm x", (Segment("echo a; rm x"),))
    assert problem == "a command the splitter did not see on its own: 'rm x'"
    assert unmodelled("ls", (Segment("echo ls"),)) is not None


_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("ab $`'\"\\(){}[]:=@!#%/;|&<>\n\t-*?~,.01E")),
        st.characters(exclude_categories=["Cs"]),
    ),
    max_size=40,
)


@settings(max_examples=500, deadline=None)
@given(_TEXT)
def test_any_text_is_analysed_without_crashing(command: str) -> None:
    result = analyse(command)
    assert result.problem is None or result.problem
    analyse("cat <<" + command + "\n" + command)


def test_a_here_document_with_too_many_expansions_is_not_parsed() -> None:
    """tree-sitter-bash is quadratic there (64 KiB of '$x' took seconds, holding the GIL)."""
    assert analyse("cat <<E\n" + "$x " * 999 + "\nE").problem is None
    problem = analyse("cat <<E\n" + "$x " * 1001 + "\nE").problem
    assert problem == "a here-document with more than 1000 '$' or '`'"
    assert analyse("echo " + "$x " * 1001).problem is None  # no here-document: linear


def test_a_parse_over_its_budget_is_cancelled_and_the_parser_still_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("duragent.tools.shell_grammar._PARSE_BUDGET_S", -1.0)
    assert analyse("echo hi " * 100).problem == "the shell grammar took over -1.0 s to parse it"
    monkeypatch.undo()
    assert analyse("echo hi").problem is None
