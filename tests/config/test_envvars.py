"""``${VAR}`` expansion rules (reference §4.2), always with an explicit ``env`` mapping."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.config.envvars import expand_env
from duragent.errors import ConfigError

CFG = Path("cfg.yaml")


def expand_error(text: str, env: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        expand_env(text, file=CFG, env=env or {})
    return info.value


def test_set_required_variable_is_replaced_by_its_value() -> None:
    assert expand_env("token: ${TOKEN}\n", env={"TOKEN": "abc"}) == "token: abc\n"


def test_unset_required_variable_names_the_variable_and_line() -> None:
    err = expand_error("a: 1\nb: 2\ntoken: ${API_KEY}\n")

    assert str(err) == (
        "cfg.yaml:3: environment variable API_KEY is not set. "
        "Fix: export API_KEY=… or write ${API_KEY:-default}"
    )
    assert err.file == CFG
    assert err.line == 3
    assert err.reason == "environment variable API_KEY is not set"


def test_required_variable_set_to_empty_string_expands_to_nothing() -> None:
    assert expand_env("a: '${EMPTY}'\n", env={"EMPTY": ""}) == "a: ''\n"


def test_default_is_used_when_variable_is_unset() -> None:
    assert expand_env("port: ${PORT:-8080}\n", env={}) == "port: 8080\n"


def test_default_is_used_when_variable_is_set_but_empty() -> None:
    assert expand_env("port: ${PORT:-8080}\n", env={"PORT": ""}) == "port: 8080\n"


def test_set_variable_wins_over_its_default() -> None:
    assert expand_env("port: ${PORT:-8080}\n", env={"PORT": "9000"}) == "port: 9000\n"


def test_empty_default_expands_to_empty_string() -> None:
    assert expand_env("token: '${TOKEN:-}'\n", env={}) == "token: ''\n"


def test_default_may_contain_colons_dashes_and_spaces() -> None:
    text = "url: ${URL:-http://localhost:8080/a-b c}\n"

    assert expand_env(text, env={}) == "url: http://localhost:8080/a-b c\n"


def test_double_dollar_is_a_literal_dollar() -> None:
    assert expand_env("price: $$5\n", env={}) == "price: $5\n"


def test_double_dollar_before_brace_is_not_a_reference() -> None:
    assert expand_env("literal: $${NOT_SET}\n", env={}) == "literal: ${NOT_SET}\n"


def test_lone_dollar_not_followed_by_brace_is_kept() -> None:
    text = "a: $5 costs $ HOME$\n"

    assert expand_env(text, env={"HOME": "/root"}) == text


def test_dollar_name_without_braces_is_not_expanded() -> None:
    assert expand_env("a: $HOME\n", env={"HOME": "/root"}) == "a: $HOME\n"


def test_several_references_on_one_line_are_all_expanded() -> None:
    text = "url: ${SCHEME:-http}://${HOST}:${PORT}/\n"

    result = expand_env(text, env={"HOST": "example.org", "PORT": "81"})

    assert result == "url: http://example.org:81/\n"


def test_value_is_inserted_verbatim_and_not_expanded_again() -> None:
    assert expand_env("a: ${X}\n", env={"X": "$${Y} ${Z}"}) == "a: $${Y} ${Z}\n"


def test_nesting_is_not_supported_the_first_closing_brace_ends_the_reference() -> None:
    assert expand_env("a: ${A:-${B}}\n", env={}) == "a: ${B}\n"


def test_unclosed_reference_is_an_error_with_line_number() -> None:
    err = expand_error("a: 1\nb: ${OOPS\nc: 3\n")

    assert err.line == 2
    assert err.value == "b: ${OOPS"
    assert str(err) == (
        "cfg.yaml:2: unclosed '${' in variable reference (got 'b: ${OOPS'). "
        "Fix: close it with '}' or write '$$' for a literal dollar sign"
    )


@pytest.mark.parametrize("name", ["1ABC", "", "A-B", "A B", "X.Y", " X"])
def test_invalid_variable_name_is_an_error_showing_the_name(name: str) -> None:
    err = expand_error(f"a: 1\nb: ${{{name}}}\n")

    assert err.line == 2
    assert err.value == name
    assert str(err) == (
        f"cfg.yaml:2: invalid environment variable name (got {name!r}; "
        "allowed: letters, digits and '_', not starting with a digit)"
    )


def test_underscores_and_digits_are_valid_in_names() -> None:
    assert expand_env("a: ${_MY_VAR2}\n", env={"_MY_VAR2": "ok"}) == "a: ok\n"


@pytest.mark.parametrize(
    "line",
    [
        "# token: ${NOT_SET}",
        "    # token: ${NOT_SET}",
        "\t#${NOT_SET",
        "#${1BAD}",
    ],
)
def test_comment_lines_are_not_expanded_even_with_unset_variables(line: str) -> None:
    text = f"a: 1\n{line}\nb: 2\n"

    assert expand_env(text, env={}) == text


def test_comment_after_a_value_is_still_expanded() -> None:
    err = expand_error("a: 1  # ${NOT_SET}\n")

    assert err.line == 1
    assert err.reason == "environment variable NOT_SET is not set"


def test_line_endings_are_preserved_and_crlf_lines_are_counted_once() -> None:
    text = "a: ${A}\r\nb: 2\r\nc: 3\r\n"

    assert expand_env(text, env={"A": "x"}) == "a: x\r\nb: 2\r\nc: 3\r\n"
    assert expand_error("a: 1\r\nb: 2\r\nc: ${C}\r\n").line == 3


def test_text_without_trailing_newline_is_expanded() -> None:
    assert expand_env("a: ${A}", env={"A": "1"}) == "a: 1"


def test_form_feed_inside_a_line_does_not_shift_line_numbers() -> None:
    # str.splitlines() treats \f as a line break; YAML does not.
    err = expand_error("a: x\fy\nb: ${NOT_SET}\n")

    assert err.line == 2


def test_form_feed_does_not_turn_the_rest_of_a_line_into_a_comment() -> None:
    err = expand_error("a: 'x\f # ${NOT_SET}'\n")

    assert err.line == 1
    assert err.reason == "environment variable NOT_SET is not set"


def test_error_without_a_file_starts_with_the_reason() -> None:
    with pytest.raises(ConfigError) as info:
        expand_env("a: ${NOPE}\n", env={})

    assert info.value.file is None
    assert str(info.value).startswith("environment variable NOPE is not set")


def test_real_environment_is_used_when_no_mapping_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DURAGENT_TEST_VALUE", "from-env")

    assert expand_env("a: ${DURAGENT_TEST_VALUE}\n") == "a: from-env\n"
