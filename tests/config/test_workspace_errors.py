"""``duragent.yaml`` errors: each names the file, line, field, value and what is allowed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from duragent.config import CONFIG_FILENAME, load_workspace
from duragent.errors import ConfigError, ConfigErrors


def write_config(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CONFIG_FILENAME
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load_error(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_workspace(path)
    return info.value


def test_yaml_syntax_error_reports_the_line(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server:\n  host: 127.0.0.1\n  port: [8080\nsessions: {}\n")

    err = load_error(config)

    assert type(err) is ConfigError
    assert err.file == config
    assert err.line == 4
    assert err.reason.startswith("YAML syntax error: ")
    assert str(err).startswith(f"{config}:4: YAML syntax error: ")
    assert str(err).endswith("Fix: check indentation and quoting around this line")


def test_tab_indentation_is_a_syntax_error_on_its_line(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server:\n\tport: 1\n")

    err = load_error(config)

    assert err.line == 2
    assert err.reason.startswith("YAML syntax error: ")


def test_invalid_compaction_lists_the_allowed_values_and_the_line(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server:\n  port: 1\nsessions:\n  compaction: shred\n")

    err = load_error(config)

    assert isinstance(err, ConfigErrors)
    assert str(err) == (
        f"{config}:4: sessions.compaction: invalid value "
        "(got 'shred'; allowed: discard, archive or disabled)"
    )
    assert (err.field, err.line, err.value) == ("sessions.compaction", 4, "shred")


def test_negative_port_is_rejected_with_field_and_line(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server:\n  host: localhost\n  port: -1\n")

    err = load_error(config)

    assert str(err) == f"{config}:3: server.port: must be at least 0 (got -1)"


def test_port_above_65535_is_rejected(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server:\n  port: 70000\n")

    assert str(load_error(config)) == (
        f"{config}:2: server.port: must be at most 65535 (got 70000)"
    )


def test_zero_timeout_must_be_greater_than_zero(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server:\n  request_timeout_seconds: 0\n")

    assert str(load_error(config)) == (
        f"{config}:2: server.request_timeout_seconds: must be greater than 0 (got 0)"
    )


def test_invalid_sandbox_mode_lists_the_allowed_modes(tmp_path: Path) -> None:
    config = write_config(tmp_path, "sandbox:\n  mode: chroot\n")

    assert str(load_error(config)) == (
        f"{config}:2: sandbox.mode: invalid value "
        "(got 'chroot'; allowed: trust, bubblewrap or docker)"
    )


def test_route_without_agent_names_the_list_item(tmp_path: Path) -> None:
    config = write_config(tmp_path, "routes:\n  - agent: a\n  - match:\n      gateway: x\n")

    assert str(load_error(config)) == (
        f"{config}:3: routes[1].agent: required field is missing. Fix: add 'agent: …' here"
    )


def test_several_errors_in_one_file_are_all_reported(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server:\n  port: -5\nsessions:\n  ttl_hours: -1\n")

    err = load_error(config)

    assert isinstance(err, ConfigErrors)
    assert [(e.field, e.line) for e in err.errors] == [
        ("server.port", 2),
        ("sessions.ttl_hours", 4),
    ]
    assert str(err).splitlines() == [
        f"{config}:2: server.port: must be at least 0 (got -5)",
        f"{config}:4: sessions.ttl_hours: must be at least 0 (got -1)",
    ]


def test_an_empty_section_means_its_defaults(tmp_path: Path) -> None:
    """As the reference's configuration guide writes it (issue 19): only comments under it."""
    config = write_config(tmp_path, "workspace: .duragent\nserver:\n  # port: 1\n")

    assert load_workspace(config).config.server.port == 8080


def test_scalar_section_is_an_error_showing_the_value(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server: 8080\n")

    assert str(load_error(config)) == (
        f"{config}:1: server: must be a mapping of keys to values (got 8080)"
    )


def test_non_mapping_document_is_an_error(tmp_path: Path) -> None:
    config = write_config(tmp_path, "- server\n- sessions\n")

    err = load_error(config)

    assert type(err) is ConfigError
    assert str(err) == (
        f"{config}:1: duragent.yaml must be a YAML mapping of keys to values (got 'list')"
    )


@pytest.mark.parametrize("value", ["fast", "0", "2000", "1.5", "-3"])
def test_active_actors_must_be_auto_or_a_sensible_number(tmp_path: Path, value: str) -> None:
    config = write_config(tmp_path, f"sessions:\n  active_actors: {value}\n")

    err = load_error(config)

    assert str(err).startswith(f"{config}:2: sessions.active_actors: ")


def test_an_allowed_host_with_a_scheme_names_the_expected_form(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server:\n  allowed_hosts: ['http://box.lan']\n")

    message = str(load_error(config))

    assert "server.allowed_hosts" in message
    assert "is not a host name" in message
    assert "e.g. 'myhost.local'" in message


def test_an_allowed_origin_with_a_path_names_the_expected_form(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server:\n  allowed_origins: ['http://a.lan/app']\n")

    message = str(load_error(config))

    assert "server.allowed_origins" in message
    assert "is not an origin" in message


def test_a_zero_header_timeout_is_rejected(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server:\n  header_timeout_seconds: 0\n")

    assert "server.header_timeout_seconds: must be greater than 0" in str(load_error(config))
