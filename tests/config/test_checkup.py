"""``checkup``: a configuration file read through to its end, every problem kept (issue 39)."""

from __future__ import annotations

from pathlib import Path

from duragent.config.checkup import check_workspace, expand_all, is_stand_in, parse_all

F = Path("f.yaml")


def test_every_unset_variable_is_a_problem_and_gets_a_stand_in() -> None:
    text = "a: ${ONE}\nb: $${TWO}\nc: ${THREE:-3}\nd: ${FOUR}\ne: ${SET}\n"

    expanded = expand_all(text, file=F, env={"SET": "yes"})

    assert [(p.line, p.reason) for p in expanded.problems] == [
        (1, "environment variable ONE is not set"),
        (4, "environment variable FOUR is not set"),
    ]
    assert expanded.text is not None
    lines = expanded.text.splitlines()
    assert is_stand_in(lines[0])
    assert is_stand_in(lines[3])
    assert lines[1:3] == ["b: ${TWO}", "c: 3"]  # an escaped reference and a default as ever
    assert lines[4] == "e: yes"


def test_a_reference_that_cannot_be_read_stops_the_expansion_with_what_came_before() -> None:
    expanded = expand_all("a: ${ONE}\nb: ${oops\n", file=F, env={})

    assert expanded.text is None
    assert [p.reason for p in expanded.problems] == [
        "environment variable ONE is not set",
        "unclosed '${' in variable reference",
    ]


def test_an_unset_variable_is_named_with_the_field_it_fills() -> None:
    doc, expanded, _ = parse_all("server:\n  api_token: ${TOKEN}\n", file=F, env={})

    assert doc is not None
    [problem] = expanded.problems
    assert (problem.line, problem.field) == (2, "server.api_token")
    assert is_stand_in(doc.data["server"]["api_token"])


def test_an_error_on_the_line_of_an_unset_variable_is_not_said_twice(tmp_path: Path) -> None:
    config = tmp_path / "duragent.yaml"
    config.write_text("server:\n  port: ${DURAGENT_CHECKUP_TEST_PORT}\n  host: [1]\n")

    check = check_workspace(config)

    assert [(e.line, e.field) for e in check.errors] == [(2, "server.port"), (3, "server.host")]
    assert check.loaded is not None
    assert check.loaded.config.server.port == 8080  # the failed field takes its default
