"""``gateways.external[]`` in duragent.yaml: the reference's fields, checked where mistakes hurt."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.config import load_workspace
from duragent.errors import ConfigError


def load(tmp_path: Path, text: str) -> object:
    (tmp_path / "duragent.yaml").write_text(text)
    return load_workspace(tmp_path / "duragent.yaml").config


def test_a_full_entry_with_variables_expanded_and_numbers_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_TOKEN", "xoxb-1")
    config = load(
        tmp_path,
        "gateways:\n  external:\n    - name: slack\n      command: duragent-slack\n"
        "      args: [--verbose]\n      env:\n        SLACK_TOKEN: ${SLACK_TOKEN}\n"
        "        PORT: 8080\n        DEBUG: true\n      restart: always\n",
    )
    [gateway] = config.gateways.external  # type: ignore[attr-defined]
    assert gateway.env == {"SLACK_TOKEN": "xoxb-1", "PORT": "8080", "DEBUG": "true"}
    assert (gateway.restart, gateway.args) == ("always", ["--verbose"])


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        ("- name: slack\n      command: x\n      restart: sometimes", "restart", "always"),
        ("- name: 'my gateway'\n      command: x", "name", "letters, digits"),
        ("- name: slack\n      command: ''", "command", "must not be empty"),
        ("- command: x", "name", "required"),
    ],
)
def test_a_bad_entry_is_an_error_naming_its_field(
    tmp_path: Path, entry: str, field: str, words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, f"gateways:\n  external:\n    {entry}\n")
    assert f"gateways.external[0].{field}" in str(caught.value)
    assert words in str(caught.value)


def test_two_external_gateways_may_not_share_a_name(tmp_path: Path) -> None:
    gateways = "  external:\n    - {name: chat, command: a}\n    - {name: chat, command: b}\n"
    with pytest.raises(ConfigError, match="is already the name of another gateway"):
        load(tmp_path, f"gateways:\n{gateways}")


def test_an_external_gateway_named_like_an_enabled_builtin_is_reported_and_not_started(
    tmp_path: Path,
) -> None:
    """The reference's configuration guide writes this very shape (issue 19): it loads."""
    (tmp_path / "duragent.yaml").write_text(
        "gateways:\n  telegram:\n    bot_token: t\n  external:\n"
        "    - {name: telegram, command: a}\n    - {name: other, command: b}\n"
    )
    ws = load_workspace(tmp_path / "duragent.yaml")
    assert ws.config.gateways.shadowed() == [0]
    (warning,) = ws.warnings
    assert warning.field == "gateways.external[0].name"
    assert "not started" in warning.reason
    assert "gateways.telegram.enabled: false" in (warning.fix or "")


def test_openai_is_the_name_of_the_openai_compatible_api(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="OpenAI-compatible API"):
        load(tmp_path, "gateways:\n  external:\n    - {name: openai, command: a}\n")


def test_a_disabled_builtin_leaves_its_name_free(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        "gateways:\n  telegram:\n    enabled: false\n  external:\n"
        "    - {name: telegram, command: duragent-telegram}\n",
    )
    assert config.gateways.external[0].name == "telegram"  # type: ignore[attr-defined]
