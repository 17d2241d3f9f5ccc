"""YAML reading with line numbers, and pydantic errors turned into ConfigErrors."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.config.validation import unknown_key_warnings, validate_document
from duragent.config.workspace import WorkspaceConfig
from duragent.config.yamlio import load_yaml_text, read_text
from duragent.errors import ConfigError, ConfigErrors

DOC = """\
server:
  host: localhost
  port: 1
routes:
  - agent: a
  - match:
      gateway: telegram
    agent: b
"""


def test_line_of_finds_nested_keys_and_list_items() -> None:
    doc = load_yaml_text(DOC)

    assert doc.line_of(()) == 1
    assert doc.line_of(("server",)) == 1
    assert doc.line_of(("server", "port")) == 3
    assert doc.line_of(("routes", 0)) == 5
    assert doc.line_of(("routes", 1, "match", "gateway")) == 7
    assert doc.line_of(("routes", 1, "agent")) == 8


def test_line_of_a_missing_key_is_the_line_of_its_deepest_existing_parent() -> None:
    doc = load_yaml_text(DOC)

    assert doc.line_of(("server", "admin_token")) == 1
    assert doc.line_of(("routes", 5, "agent")) == 4
    assert doc.line_of(("server", "host", "deeper")) == 2


def test_empty_text_has_no_data_and_no_line() -> None:
    doc = load_yaml_text("", file=Path("x.yaml"))

    assert doc.data is None
    assert doc.root is None
    assert doc.file == Path("x.yaml")
    assert doc.line_of(("a",)) is None


def test_syntax_error_has_the_parser_line_and_a_fix() -> None:
    with pytest.raises(ConfigError) as info:
        load_yaml_text("a: 1\nb: [1, 2\nc: 3\n", file=Path("x.yaml"))

    err = info.value
    assert err.line == 3
    assert err.file == Path("x.yaml")
    assert err.fix == "check indentation and quoting around this line"
    assert str(err) == (
        "x.yaml:3: YAML syntax error: did not find expected ',' or ']'. "
        "Fix: check indentation and quoting around this line"
    )


def test_second_document_is_an_error_on_its_separator_line() -> None:
    with pytest.raises(ConfigError) as info:
        load_yaml_text("a: 1\n---\nb: 2\n")

    assert info.value.line == 2
    assert info.value.reason == "YAML syntax error: but found another document"


def test_undefined_alias_is_a_syntax_error_on_its_line() -> None:
    with pytest.raises(ConfigError) as info:
        load_yaml_text("a: 1\nb: *nowhere\n")

    assert info.value.line == 2
    assert info.value.reason == "YAML syntax error: found undefined alias"


def test_python_tags_are_refused_by_the_safe_loader() -> None:
    with pytest.raises(ConfigError) as info:
        load_yaml_text("a: 1\nb: !!python/object:os.system ls\n")

    assert info.value.line == 2
    assert info.value.reason.startswith("YAML syntax error: could not determine a constructor")


def test_read_text_of_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"

    with pytest.raises(ConfigError) as info:
        read_text(path)

    assert str(info.value) == f"{path}: file not found"


def test_read_text_of_invalid_utf8_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: caf\xe9\n")

    with pytest.raises(ConfigError) as info:
        read_text(path)

    assert str(info.value) == f"{path}: not valid UTF-8 (invalid continuation byte)"


def test_read_text_of_a_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        read_text(tmp_path)

    assert info.value.reason == "cannot read file: Is a directory"


def test_validate_document_treats_an_empty_document_as_an_empty_mapping() -> None:
    assert validate_document(WorkspaceConfig, load_yaml_text(""), what="x") == WorkspaceConfig()


def test_validate_document_errors_are_in_file_order_not_model_order() -> None:
    text = "sessions:\n  compaction: 1\nserver:\n  max_connections: 0\n  port: x\n"
    doc = load_yaml_text(text, file=Path("w.yaml"))

    with pytest.raises(ConfigErrors) as info:
        validate_document(WorkspaceConfig, doc, what="x")

    assert [str(e) for e in info.value.errors] == [
        "w.yaml:2: sessions.compaction: invalid value (got 1; allowed: discard, archive or "
        "disabled)",
        "w.yaml:4: server.max_connections: must be greater than 0 (got 0)",
        "w.yaml:5: server.port: must be a whole number (got 'x'). Fix: write e.g. `port: 8080`",
    ]
    assert info.value.line == 2


def test_list_where_a_mapping_is_expected_shows_the_type() -> None:
    doc = load_yaml_text("server:\n  - 1\n", file=Path("w.yaml"))

    with pytest.raises(ConfigErrors) as info:
        validate_document(WorkspaceConfig, doc, what="x")

    assert str(info.value) == "w.yaml:1: server: must be a mapping of keys to values (got 'list')"


def test_mapping_where_a_list_is_expected_says_a_list_is_needed() -> None:
    doc = load_yaml_text("routes:\n  agent: a\n", file=Path("w.yaml"))

    with pytest.raises(ConfigErrors) as info:
        validate_document(WorkspaceConfig, doc, what="x")

    assert str(info.value) == "w.yaml:1: routes: must be a list ('- item' lines) (got 'dict')"


def test_unknown_key_warnings_list_known_keys_of_the_section() -> None:
    doc = load_yaml_text("sandbox:\n  mode: trust\n  level: 3\n", file=Path("w.yaml"))
    config = validate_document(WorkspaceConfig, doc, what="x")

    [warning] = unknown_key_warnings(config, doc)

    assert (
        str(warning)
        == "w.yaml:3: sandbox.level: unknown field (ignored) (allowed: env, mode, network). "
        "Fix: remove it, or rename it to one of the allowed fields"
    )


def test_paths_on_a_line_name_the_fields_written_there() -> None:
    doc = load_yaml_text(DOC + "note: |\n  one\n  two\n")
    assert doc.paths_on(3) == [("server", "port")]
    assert doc.paths_on(7) == [("routes", 1, "match", "gateway")]
    assert doc.paths_on(11) == [("note",)]  # the second line of a block of text
    assert doc.paths_on(1) == [("server",)]
